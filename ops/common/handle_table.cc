// The handle table's storage and its locked operations (see handle_table.h).
#include "handle_table.h"

#include <mutex>
#include <vector>

#include "error.h"

namespace oprt {
namespace handles {

std::atomic<Slot*> chunks[kNumChunks];

namespace {

// Guards everything below and each slot's generation fields.
std::mutex& table_mutex() {
  static std::mutex* mutex = new std::mutex;  // never destroyed: destroy may run during exit
  return *mutex;
}
std::vector<uint32_t>& free_slots() {  // reused last-freed first, which keeps the table small
  static std::vector<uint32_t>* slots = new std::vector<uint32_t>;
  return *slots;
}
uint32_t slots_used = 0;  // slots [0, slots_used) have been handed out at least once

Slot& slot_at(uint32_t index) {
  return chunks[index >> kChunkBits].load(std::memory_order_relaxed)[index & (kChunkSize - 1)];
}

// Slots start at scattered generations, so that two live handles rarely
// share one and a handle with a corrupted index is refused too.
uint32_t first_generation(uint32_t index) { return index * 2654435761u ^ 0x9e3779b9u; }

uint32_t index_of(oprt_descriptor_t handle) {
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(handle)) & (kMaxSlots - 1);
}

uint32_t take_slot() {
  std::vector<uint32_t>& reusable = free_slots();
  if (!reusable.empty()) {
    uint32_t index = reusable.back();
    reusable.pop_back();
    return index;
  }
  if (slots_used == kMaxSlots)
    fail(OPRT_STATUS_OUT_OF_MEMORY, "%u descriptors are live or spent, the most one process can hold",
         kMaxSlots);
  uint32_t index = slots_used;
  std::atomic<Slot*>& chunk = chunks[index >> kChunkBits];
  if (chunk.load(std::memory_order_relaxed) == nullptr) chunk.store(new Slot[kChunkSize], std::memory_order_release);
  Slot& slot = slot_at(index);
  slot.generation = slot.first_generation = first_generation(index);
  ++slots_used;
  return index;
}

}  // namespace

oprt_descriptor_t add(oprt_descriptor* object, uint64_t tag, const char* name) {
  std::lock_guard<std::mutex> lock(table_mutex());
  uint32_t index = take_slot();
  Slot& slot = slot_at(index);
  // Release: a lookup of a stale handle that reads these fields then sees
  // the slot's handle changed (by the remove that freed it), and refuses.
  slot.object.store(object, std::memory_order_release);
  slot.tag.store(tag, std::memory_order_release);
  slot.name.store(name, std::memory_order_release);
  uint64_t value = kMagic | static_cast<uint64_t>(slot.generation) << kIndexBits | index;
  slot.handle.store(value, std::memory_order_release);
  return reinterpret_cast<oprt_descriptor_t>(value);
}

oprt_descriptor* remove(oprt_descriptor_t handle, uint64_t tag, const char* name) {
  std::lock_guard<std::mutex> lock(table_mutex());
  uint64_t found_tag = 0;
  oprt_descriptor* object = find(handle, &found_tag);
  if (object == nullptr || found_tag != tag) refuse(handle, tag, name);
  uint32_t index = index_of(handle);
  Slot& slot = slot_at(index);
  uint32_t next = slot.generation + 1;
  bool spent = next == slot.first_generation;  // every generation used: retire the slot
  if (!spent) free_slots().push_back(index);    // may throw; the handle then stays live
  slot.generation = next;
  slot.handle.store(0, std::memory_order_release);
  return object;
}

void refuse(oprt_descriptor_t handle, uint64_t tag, const char* name) {
  if (handle == nullptr) fail(OPRT_STATUS_INVALID_DESCRIPTOR, "descriptor is NULL");
  uint64_t found_tag = 0;
  if (find(handle, &found_tag) != nullptr && found_tag != tag) {
    const char* other = slot_at(index_of(handle)).name.load(std::memory_order_relaxed);
    fail(OPRT_STATUS_INVALID_DESCRIPTOR, "descriptor is not a live %s descriptor (it is a %s one)", name, other);
  }
  fail(OPRT_STATUS_INVALID_DESCRIPTOR, "descriptor %p is not a live %s descriptor (destroyed, or never created)",
       static_cast<void*>(handle), name);
}

}  // namespace handles
}  // namespace oprt
