// The descriptor base shared by every (op, backend) pair, and the generic
// bodies of the workspace / execute / destroy entry points.
#ifndef OPRT_COMMON_DESCRIPTOR_H_
#define OPRT_COMMON_DESCRIPTOR_H_

#include <cstdint>
#include <string>

#include "error.h"

// A tag that identifies the concrete descriptor type, so a handle of one
// op/backend passed to another is refused instead of misread.
namespace oprt {
constexpr uint64_t descriptor_tag(const char* name) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  while (*name) hash = (hash ^ static_cast<unsigned char>(*name++)) * 1099511628211ull;
  return hash;
}
}  // namespace oprt

struct oprt_descriptor {
  explicit oprt_descriptor(uint64_t tag) : tag(tag) {}
  virtual ~oprt_descriptor() { tag = 0; }
  uint64_t tag;
  std::string variant = "unset";  // the kernel variant chosen at create
  size_t workspace_bytes = 0;
};

namespace oprt {

// Each concrete descriptor D derives from oprt_descriptor and declares
// `static constexpr const char* kName = "<op>/<backend>";`.
template <class D>
D& checked_descriptor(oprt_descriptor_t handle) {
  if (handle == nullptr) fail(OPRT_STATUS_INVALID_DESCRIPTOR, "descriptor is NULL");
  if (handle->tag != descriptor_tag(D::kName))
    fail(OPRT_STATUS_INVALID_DESCRIPTOR, "descriptor is not a live %s descriptor", D::kName);
  return static_cast<D&>(*handle);
}

template <class D, class Make>
oprt_status_t create_descriptor(const char* function, oprt_descriptor_t* out_handle, Make&& make) {
  return guard(function, [&] {
    if (out_handle == nullptr) fail(OPRT_STATUS_NULL_POINTER, "desc (the output handle pointer) is NULL");
    *out_handle = nullptr;
    D* descriptor = make();  // validates and plans; throws on bad input
    *out_handle = descriptor;
  });
}

template <class D>
oprt_status_t get_workspace_size(const char* function, oprt_descriptor_t handle, size_t* bytes) {
  return guard(function, [&] {
    D& d = checked_descriptor<D>(handle);
    if (bytes == nullptr) fail(OPRT_STATUS_NULL_POINTER, "workspace_bytes pointer is NULL");
    *bytes = d.workspace_bytes;
  });
}

template <class D, class Run>
oprt_status_t execute_descriptor(const char* function, oprt_descriptor_t handle, void* workspace,
                                 size_t workspace_bytes, Run&& run) {
  return guard(function, [&] {
    D& d = checked_descriptor<D>(handle);
    if (d.workspace_bytes > 0 && workspace == nullptr)
      fail(OPRT_STATUS_INSUFFICIENT_WORKSPACE, "workspace is NULL but %zu bytes are needed", d.workspace_bytes);
    if (workspace_bytes < d.workspace_bytes)
      fail(OPRT_STATUS_INSUFFICIENT_WORKSPACE, "workspace has %zu bytes but %zu are needed", workspace_bytes,
           d.workspace_bytes);
    run(d);
  });
}

template <class D>
oprt_status_t destroy_descriptor(const char* function, oprt_descriptor_t handle) {
  return guard(function, [&] { delete &checked_descriptor<D>(handle); });
}

// A data pointer given to execute must be non-NULL unless the tensor is empty.
inline void require_data(const void* data, const char* name, int64_t numel) {
  if (data == nullptr && numel > 0) fail(OPRT_STATUS_NULL_POINTER, "%s data pointer is NULL", name);
}

}  // namespace oprt

#endif
