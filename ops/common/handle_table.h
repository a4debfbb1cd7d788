// The process-wide table behind every oprt_descriptor_t. A handle is not a
// pointer: it encodes a slot index and that slot's generation, so a stale,
// forged or foreign handle is refused by reading the table only, never the
// (possibly freed) descriptor object.
//
// Handle value (64 bits): kMagic in bits 56..63 (never 0, and on x86-64 a
// non-canonical address, so a caller that dereferences a handle faults), the
// generation in bits 24..55, the slot index in bits 0..23. A slot's
// generation advances on every destroy; a slot whose 2^32 generations are
// spent is retired, so no handle value is ever issued twice in a process.
//
// Lookups are lock-free: a slot holds the live handle value (0 when free),
// its object and type tag; a lookup reads the value, then the object and
// tag, then the value again (a sequence lock), and accepts only when both
// reads equal the handle. create and destroy take a mutex. Chunks of slots
// are allocated on demand and never freed, so a lookup never reads freed
// table memory either.
#ifndef OPRT_COMMON_HANDLE_TABLE_H_
#define OPRT_COMMON_HANDLE_TABLE_H_

#include <atomic>
#include <cstdint>

#include "operator_runtime/operator_runtime.h"

struct oprt_descriptor;

namespace oprt {
namespace handles {

static_assert(sizeof(void*) == 8, "descriptor handles encode 64 bits");

constexpr int kIndexBits = 24;  // up to 16M live descriptors
constexpr int kChunkBits = 12;  // slots per chunk: 4096
constexpr uint32_t kMaxSlots = 1u << kIndexBits;
constexpr uint32_t kChunkSize = 1u << kChunkBits;
constexpr uint32_t kNumChunks = kMaxSlots / kChunkSize;
constexpr uint64_t kMagic = 0xA5ull << 56;

struct Slot {
  std::atomic<uint64_t> handle{0};  // the live handle in this slot; 0 when free
  std::atomic<oprt_descriptor*> object{nullptr};
  std::atomic<uint64_t> tag{0};            // descriptor_tag of the object's type
  std::atomic<const char*> name{nullptr};  // its kName, for error messages
  uint32_t generation = 0;                 // the next handle's; guarded by the table's mutex
  uint32_t first_generation = 0;           // where the slot started; reaching it again retires the slot
};

extern std::atomic<Slot*> chunks[kNumChunks];

// The object of live handle `handle` and its type tag, or nullptr when
// `handle` is not live (NULL, destroyed, never issued). Lock-free.
inline oprt_descriptor* find(oprt_descriptor_t handle, uint64_t* tag) noexcept {
  const uint64_t value = reinterpret_cast<uintptr_t>(handle);
  const uint32_t index = static_cast<uint32_t>(value) & (kMaxSlots - 1);
  Slot* chunk = chunks[index >> kChunkBits].load(std::memory_order_acquire);
  if (chunk == nullptr || value == 0) return nullptr;
  Slot& slot = chunk[index & (kChunkSize - 1)];
  if (slot.handle.load(std::memory_order_acquire) != value) return nullptr;
  // Acquire: if either read sees a later add's store, the read below sees
  // this handle gone (plain loads on x86).
  oprt_descriptor* object = slot.object.load(std::memory_order_acquire);
  *tag = slot.tag.load(std::memory_order_acquire);
  // Destroyed (and the slot possibly refilled) between the two reads.
  if (slot.handle.load(std::memory_order_relaxed) != value) return nullptr;
  return object;
}

// Issues a handle for `object` (of type `tag`, named `name`, a static string).
// Throws OPRT_STATUS_OUT_OF_MEMORY when every slot is live or retired; the
// object stays the caller's then.
oprt_descriptor_t add(oprt_descriptor* object, uint64_t tag, const char* name);

// Retires live handle `handle` of type `tag` and returns its object, which
// the caller deletes. Throws OPRT_STATUS_INVALID_DESCRIPTOR (as refuse) when
// `handle` is not a live handle of that type; exactly one of two concurrent
// removes of one handle succeeds.
oprt_descriptor* remove(oprt_descriptor_t handle, uint64_t tag, const char* name);

// Throws OPRT_STATUS_INVALID_DESCRIPTOR saying why `handle` is not a live
// descriptor of type `tag` named `name`: NULL, not live, or of another type.
[[noreturn]] void refuse(oprt_descriptor_t handle, uint64_t tag, const char* name);

}  // namespace handles
}  // namespace oprt

#endif
