// The descriptor base shared by every (op, backend) pair, and the generic
// bodies of the create / workspace / execute / destroy entry points. Handles
// are issued and checked by the handle table (handle_table.h), never
// dereferenced.
#ifndef OPRT_COMMON_DESCRIPTOR_H_
#define OPRT_COMMON_DESCRIPTOR_H_

#include <cstdint>
#include <memory>
#include <string>

#include "error.h"
#include "handle_table.h"

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
  virtual ~oprt_descriptor() = default;
  uint64_t tag;  // descriptor_tag of the concrete type; the handle table keeps a copy to check handles with
  std::string variant = "unset";  // the kernel variant chosen at create
  size_t workspace_bytes = 0;
};

namespace oprt {

// Each concrete descriptor D derives from oprt_descriptor and declares
// `static constexpr const char* kName = "<op>/<backend>";`.
template <class D>
constexpr uint64_t kDescriptorTag = descriptor_tag(D::kName);

// The descriptor of live handle `handle`, which must be of type D; anything
// else is refused with OPRT_STATUS_INVALID_DESCRIPTOR.
template <class D>
D& checked_descriptor(oprt_descriptor_t handle) {
  uint64_t tag = 0;
  oprt_descriptor* object = handles::find(handle, &tag);
  if (object == nullptr || tag != kDescriptorTag<D>) handles::refuse(handle, kDescriptorTag<D>, D::kName);
  return static_cast<D&>(*object);
}

template <class D, class Make>
oprt_status_t create_descriptor(const char* function, oprt_descriptor_t* out_handle, Make&& make) {
  return guard(function, [&] {
    if (out_handle == nullptr) fail(OPRT_STATUS_NULL_POINTER, "desc (the output handle pointer) is NULL");
    *out_handle = nullptr;
    std::unique_ptr<D> descriptor(make());  // validates and plans; throws on bad input
    *out_handle = handles::add(descriptor.get(), descriptor->tag, D::kName);
    descriptor.release();  // the table owns it now
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
  return guard(function, [&] { delete static_cast<D*>(handles::remove(handle, kDescriptorTag<D>, D::kName)); });
}

// A data pointer given to execute must be non-NULL unless the tensor is empty.
inline void require_data(const void* data, const char* name, int64_t numel) {
  if (data == nullptr && numel > 0) fail(OPRT_STATUS_NULL_POINTER, "%s data pointer is NULL", name);
}

}  // namespace oprt

// The body of oprt_create_<op>_descriptor_<b>: the op's oprt::seed::<op>
// (its header's mapping of the seed's arguments onto the full create) where it
// states OPRT_SEED_ARGS_<op>, else a plain call of the full create.
#define OPRT_PP_CALL(function, ...) function(__VA_ARGS__)
#define OPRT_SEED_CREATE_CALL(op) OPRT_PP_IF(OPRT_HAS_SEED_ARGS(op))(::oprt::seed::op, OPRT_PP_CALL)

// Defines the entry points of op `op` on backend `b` (declared by
// OPRT_DECLARE_OP from the op's OPRT_ARGS_<op> list) around a descriptor type D
// and two functions, found by qualified name:
//   D* create(const oprt_tensor_view_t* out, <input views>..., <params>...)
//   void execute(const D&, void* workspace, void* out, <const void* inputs>..., void* stream)
// create validates and plans (throwing through fail()); execute launches.
#define OPRT_DEFINE_OP(op, b, D, create_fn, execute_fn)                                              \
  extern "C" {                                                                                       \
  OPRT_DECLARE_OP(op, b)                                                                             \
  oprt_status_t oprt_create_##op##_descriptor_ex_##b(                                                \
      oprt_descriptor_t* desc, const oprt_tensor_view_t* out OPRT_ARGS_##op(OPRT_ARG_VIEW, OPRT_ARG_PARAM)) { \
    return ::oprt::create_descriptor<D>(__func__, desc, [&] {                                        \
      return create_fn(out OPRT_ARGS_##op(OPRT_ARG_NAME, OPRT_ARG_PARAM_NAME));                      \
    });                                                                                              \
  }                                                                                                  \
  oprt_status_t oprt_create_##op##_descriptor_##b(                                                   \
      oprt_descriptor_t* desc, const oprt_tensor_view_t* out OPRT_CREATE_ARGS(op)(OPRT_ARG_VIEW, OPRT_ARG_PARAM)) { \
    return OPRT_SEED_CREATE_CALL(op)(oprt_create_##op##_descriptor_ex_##b, desc,                     \
                                     out OPRT_CREATE_ARGS(op)(OPRT_ARG_NAME, OPRT_ARG_PARAM_NAME));  \
  }                                                                                                  \
  oprt_status_t oprt_get_##op##_workspace_size_##b(oprt_descriptor_t desc, size_t* workspace_bytes) { \
    return ::oprt::get_workspace_size<D>(__func__, desc, workspace_bytes);                           \
  }                                                                                                  \
  oprt_status_t oprt_execute_##op##_##b(oprt_descriptor_t desc, void* workspace, size_t workspace_bytes, \
                                        void* out OPRT_ARGS_##op(OPRT_ARG_DATA, OPRT_ARG_NONE),      \
                                        void* stream) {                                              \
    return ::oprt::execute_descriptor<D>(__func__, desc, workspace, workspace_bytes, [&](const D& d) { \
      execute_fn(d, workspace, out OPRT_ARGS_##op(OPRT_ARG_NAME, OPRT_ARG_NONE), stream);            \
    });                                                                                              \
  }                                                                                                  \
  oprt_status_t oprt_destroy_##op##_descriptor_##b(oprt_descriptor_t desc) {                         \
    return ::oprt::destroy_descriptor<D>(__func__, desc);                                            \
  }                                                                                                  \
  const char* oprt_##op##_signature_##b(void) {                                                      \
    return OPRT_ARGS_##op(OPRT_ARG_VIEW_TEXT, OPRT_ARG_PARAM_TEXT) "";                               \
  }                                                                                                  \
  }

#endif
