// A GPU emulated on the CPU for the NVIDIA kernels' tests: CUDA's keywords,
// built-in variables and the intrinsics the kernels use, and a launch that
// runs a grid as the GPU would, one group of blocks at a time (a block, a
// thread block cluster, or the whole grid of a cooperative launch). Every
// thread of a group is a fiber on one OS thread, switched at barriers
// (__syncthreads, warp shuffles, cluster and grid syncs), so kernels that
// cooperate through shared memory run as written, deterministically. What
// the GPU would not forgive fails loudly: a barrier some thread never
// reaches (reported as a deadlock, naming it), a shuffle without every lane
// of the warp, reads of shared memory nothing wrote (it starts as NaN
// bytes), accesses past a shared array (AddressSanitizer redzones), a bad
// launch configuration (cudaGetLastError, as CUDA reports it). Grids may
// be 3-d; clusters and cooperative grids run along x only.
// Included by the stand-ins of <cuda_runtime.h>, <cuda_fp16.h>,
// <cuda_bf16.h> and <cooperative_groups.h> in this folder.
#ifndef OPRT_EMULATION_EMULATED_GPU_H_
#define OPRT_EMULATION_EMULATED_GPU_H_

#include <math.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define OPRT_EMULATION_ASAN 1
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct float2 {
  float x, y;
};

// The built-in variables, set to the running fiber's before it resumes.
inline dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace emu {

// The emulated device (the kernels' plans read it through
// cudaDeviceGetAttribute): 4 SMs, so grid-stride loops go round and splits
// and clusters appear at test sizes (OPRT_EMULATED_SMS=132 plans as for an
// H200); sm_90's limits otherwise.
inline const int kSms = [] {
  const char* sms = std::getenv("OPRT_EMULATED_SMS");
  return sms != nullptr && std::atoi(sms) > 0 ? std::atoi(sms) : 4;
}();
constexpr int kComputeMajor = 9;
constexpr int kMaxThreadsPerSm = 2048;
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kMaxSharedPerBlock = 232448;  // bytes a block may opt in to
constexpr int kStaticShared = 48 * 1024;    // bytes of __shared__ variables a kernel may declare
constexpr int kL2Bytes = 4 << 20;
constexpr int kMaxCluster = 16;

[[noreturn]] inline void die(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::fputs("emulated GPU: ", stderr);
  std::vfprintf(stderr, format, args);
  std::fputs("\n", stderr);
  va_end(args);
  std::abort();
}

struct Barrier {
  int expected = 0, arrived = 0;
  uint64_t generation = 0;
};

// A copy into shared memory in flight (cp.async, a bulk copy): `bytes`
// read, the rest of `total` zero-filled.
struct AsyncCopy {
  void* to;
  const void* from;
  size_t bytes, total;
  void land() const {
    std::memcpy(to, from, bytes);
    std::memset(static_cast<char*>(to) + bytes, 0, total - bytes);
  }
};

struct Fiber {
  ucontext_t context;
  char* stack = nullptr;
  void* fake_stack = nullptr;  // AddressSanitizer's, while switched out
  dim3 thread, block;
  int block_in_group = 0, warp = 0, lane = 0;  // warp: index among the group's warps
  bool done = false;
  const struct Barrier* waits_on = nullptr;  // and for which generation to pass
  uint64_t waits_for = 0;
  const char* waiting_at = nullptr;
  const struct Mbarrier* awaits = nullptr;  // an mbarrier whose phase of this parity waits for a copy to be issued
  uint32_t awaits_parity = 0;
  uint64_t cluster_arrival = 0;  // __cluster_barrier_arrive's generation
  // this thread's cp.async copies: the committed groups, oldest first, then the open one
  std::vector<std::vector<AsyncCopy>> async_groups = {{}};
};

// An mbarrier that bulk copies complete on: phases completed, copies of the current phase.
struct Mbarrier {
  uint64_t completed = 0;
  std::vector<AsyncCopy> pending;
};

// The order in which runnable threads get the CPU. Each finds other data
// races (a thread that writes shared memory before another has read the
// old value, or reads before the other has written): round robin, or
// always the runnable thread of the lowest (highest) index, which runs one
// warp as far ahead of the others as its barriers allow. A kernel's result
// must not depend on it.
enum class Schedule { kRoundRobin, kLowestFirst, kHighestFirst };

constexpr size_t kStackBytes = 256 * 1024;
constexpr size_t kRedzone = 64;  // poisoned bytes after each shared array

struct Engine {
  ucontext_t scheduler;
  const void* scheduler_stack = nullptr;
  size_t scheduler_stack_size = 0;
  std::vector<Fiber> fibers;
  std::vector<char*> stacks;  // pooled, kStackBytes each
  int current = -1;
  Schedule schedule = Schedule::kRoundRobin;
  std::vector<Barrier> block_barriers, warp_barriers;
  Barrier group_barrier;
  std::vector<uint64_t> warp_slots;  // 2 x 32 per warp of the group (see shuffle)
  std::vector<std::vector<unsigned char>> arenas;  // one block's shared memory each
  size_t dynamic_bytes = 0;        // the launch's dynamic shared memory: arena[0, dynamic_bytes)
  size_t static_base = 0, static_end = 0;
  std::map<const void*, std::pair<size_t, size_t>> static_offsets;  // __shared__ variable -> (offset, bytes) in every arena
  std::function<void()> body;
  int threads_per_block = 0, warps_per_block = 0, group_blocks = 0;
  unsigned cluster = 1;     // blocks per cluster (1: none)
  bool whole_grid = false;  // a cooperative launch: the group is the grid
  int last_error = 0;       // a cudaError_t, for cudaGetLastError
  std::map<const void*, Mbarrier> mbarriers;  // by address in shared memory
};
inline Engine engine;

inline Fiber& current_fiber() { return engine.fibers[static_cast<size_t>(engine.current)]; }

inline void start_switch(void** fake_stack, const void* bottom, size_t size) {
#ifdef OPRT_EMULATION_ASAN
  __sanitizer_start_switch_fiber(fake_stack, bottom, size);
#else
  (void)fake_stack, (void)bottom, (void)size;
#endif
}
inline void finish_switch(void* fake_stack, const void** bottom, size_t* size) {
#ifdef OPRT_EMULATION_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, bottom, size);
#else
  (void)fake_stack, (void)bottom, (void)size;
#endif
}

inline void yield_to_scheduler() {
  Fiber& f = current_fiber();
  start_switch(&f.fake_stack, engine.scheduler_stack, engine.scheduler_stack_size);
  swapcontext(&f.context, &engine.scheduler);
  finish_switch(f.fake_stack, &engine.scheduler_stack, &engine.scheduler_stack_size);
}

// Split-phase barrier: arrive() returns the generation to wait out.
inline uint64_t arrive(Barrier& b) {
  const uint64_t generation = b.generation;
  if (++b.arrived == b.expected) {
    b.arrived = 0;
    ++b.generation;
  }
  return generation;
}
inline void wait(Barrier& b, uint64_t generation, const char* what) {
  if (b.generation != generation) return;
  Fiber& f = current_fiber();
  f.waits_on = &b;
  f.waits_for = generation;
  f.waiting_at = what;
  yield_to_scheduler();  // (resumed once the generation has passed)
  f.waits_on = nullptr;
  f.waiting_at = nullptr;
}
inline void arrive_and_wait(Barrier& b, const char* what) { wait(b, arrive(b), what); }

inline void fiber_entry() {
  finish_switch(nullptr, &engine.scheduler_stack, &engine.scheduler_stack_size);
  engine.body();
  current_fiber().done = true;
  start_switch(nullptr, engine.scheduler_stack, engine.scheduler_stack_size);  // this fiber ends
  swapcontext(&current_fiber().context, &engine.scheduler);
  die("a finished thread was resumed");
}

inline char* pooled_stack(size_t i) {
  while (engine.stacks.size() <= i) {
    void* p = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) die("cannot map a thread's stack");
    engine.stacks.push_back(static_cast<char*>(p));
  }
  return engine.stacks[i];
}

inline void poison(const void* p, size_t bytes) {
#ifdef OPRT_EMULATION_ASAN
  ASAN_POISON_MEMORY_REGION(p, bytes);
#else
  (void)p, (void)bytes;
#endif
}
inline void unpoison(const void* p, size_t bytes) {
#ifdef OPRT_EMULATION_ASAN
  ASAN_UNPOISON_MEMORY_REGION(p, bytes);
#else
  (void)p, (void)bytes;
#endif
}

inline size_t arena_bytes() { return engine.static_base + kStaticShared + kRedzone; }

// Fresh shared memory for the group's blocks: NaN bytes (0xff), the
// dynamic part and every __shared__ variable seen so far readable, the
// rest poisoned.
inline void reset_arenas() {
  engine.arenas.resize(static_cast<size_t>(engine.group_blocks));
  for (auto& arena : engine.arenas) {
    if (arena.size() != arena_bytes()) {
      if (!arena.empty()) unpoison(arena.data(), arena.size());
      arena.assign(arena_bytes(), 0xff);
    } else {
      unpoison(arena.data(), arena.size());
      std::memset(arena.data(), 0xff, arena.size());
    }
    poison(arena.data(), arena.size());
    unpoison(arena.data(), engine.dynamic_bytes);
    for (const auto& [key, place] : engine.static_offsets) unpoison(arena.data() + place.first, place.second);
  }
}

// The current block's copy of a __shared__ variable (`key` identifies it).
inline void* shared_variable(const void* key, size_t bytes, size_t align) {
  auto it = engine.static_offsets.find(key);
  if (it == engine.static_offsets.end()) {
    const size_t offset = (engine.static_end + align - 1) / align * align;
    if (offset + bytes > engine.static_base + kStaticShared)
      die("a kernel's __shared__ variables take more than %d bytes", kStaticShared);
    engine.static_end = offset + bytes + kRedzone;
    it = engine.static_offsets.emplace(key, std::make_pair(offset, bytes)).first;
    for (auto& arena : engine.arenas) unpoison(arena.data() + offset, bytes);
  }
  if (it->second.second != bytes) die("a __shared__ variable changed size");
  return engine.arenas[static_cast<size_t>(current_fiber().block_in_group)].data() + it->second.first;
}

template <class T>
T* dynamic_shared() {
  return reinterpret_cast<T*>(engine.arenas[static_cast<size_t>(current_fiber().block_in_group)].data());
}

// p (in the current block's shared memory) in block `block_in_group`'s.
template <class T>
T* shared_of_block(T* p, int block_in_group) {
  const auto& mine = engine.arenas[static_cast<size_t>(current_fiber().block_in_group)];
  const auto* byte = reinterpret_cast<const unsigned char*>(p);
  if (byte < mine.data() || byte >= mine.data() + mine.size()) die("map_shared_rank of an address outside shared memory");
  if (block_in_group < 0 || block_in_group >= engine.group_blocks) die("map_shared_rank to a block outside the cluster");
  return reinterpret_cast<T*>(engine.arenas[static_cast<size_t>(block_in_group)].data() + (byte - mine.data()));
}

inline void run_group(unsigned first_block, unsigned y, unsigned z) {
  const int threads = engine.threads_per_block;
  const size_t count = static_cast<size_t>(engine.group_blocks) * static_cast<size_t>(threads);
  engine.fibers.assign(count, Fiber{});
  engine.block_barriers.assign(static_cast<size_t>(engine.group_blocks), Barrier{threads});
  engine.warp_barriers.assign(static_cast<size_t>(engine.group_blocks * engine.warps_per_block), Barrier{});
  engine.warp_slots.assign(engine.warp_barriers.size() * 2 * 32, 0);
  engine.group_barrier = Barrier{static_cast<int>(count)};
  reset_arenas();
  for (size_t i = 0; i < count; ++i) {
    Fiber& f = engine.fibers[i];
    const int b = static_cast<int>(i) / threads, t = static_cast<int>(i) % threads;
    f.block_in_group = b;
    f.block = dim3(first_block + static_cast<unsigned>(b), y, z);
    f.thread = dim3(t % blockDim.x, t / blockDim.x % blockDim.y, t / (blockDim.x * blockDim.y));
    f.warp = b * engine.warps_per_block + t / 32;
    f.lane = t % 32;
    ++engine.warp_barriers[static_cast<size_t>(f.warp)].expected;
    f.stack = pooled_stack(i);
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack;
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = nullptr;
    makecontext(&f.context, fiber_entry, 0);
  }
  const auto runnable = [](const Fiber& f) {
    return !f.done && (f.waits_on == nullptr || f.waits_on->generation != f.waits_for) &&
           (f.awaits == nullptr || !f.awaits->pending.empty() || (f.awaits->completed & 1) != f.awaits_parity);
  };
  std::vector<int> live_threads(static_cast<size_t>(engine.group_blocks), threads);
  size_t next = 0;  // round robin: where the scan resumes
  for (;;) {
    size_t pick = count;
    for (size_t step = 0; step < count && pick == count; ++step) {
      const size_t i = engine.schedule == Schedule::kRoundRobin  ? (next + step) % count
                       : engine.schedule == Schedule::kLowestFirst ? step
                                                                   : count - 1 - step;
      if (runnable(engine.fibers[i])) pick = i;
    }
    if (pick == count) break;
    next = pick + 1;
    Fiber& f = engine.fibers[pick];
    engine.current = static_cast<int>(pick);
    threadIdx = f.thread;
    blockIdx = f.block;
    void* fake = nullptr;
    start_switch(&fake, f.stack, kStackBytes);
    swapcontext(&engine.scheduler, &f.context);
    finish_switch(fake, nullptr, nullptr);
    if (f.done && --live_threads[static_cast<size_t>(f.block_in_group)] == 0) {
      // The block has exited: its shared memory is gone (a cluster's other blocks must not read it now).
      auto& arena = engine.arenas[static_cast<size_t>(f.block_in_group)];
      unpoison(arena.data(), arena.size());
      std::memset(arena.data(), 0xff, arena.size());
      poison(arena.data(), arena.size());
    }
  }
  engine.current = -1;
  for (const Fiber& f : engine.fibers)
    if (!f.done)
      die("deadlock: block %u thread (%u, %u, %u) waits at %s, which some thread of its group never reaches",
          f.block.x, f.thread.x, f.thread.y, f.thread.z, f.waiting_at ? f.waiting_at : "?");
}

constexpr int kErrorInvalidValue = 1, kErrorInvalidConfiguration = 9;

// Runs kernel(args...) over grid x block, in groups of `cluster` blocks, or
// all at once when `whole_grid`. A configuration CUDA would refuse sets
// the last error instead, as a launch does.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t dynamic_bytes, unsigned cluster, bool whole_grid,
            Args... args) {
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  const uint64_t resident_blocks = static_cast<uint64_t>(kSms) * kMaxThreadsPerSm / std::max<uint64_t>(threads, 1);
  // (clusters and cooperative grids along x alone, as the kernels launch them)
  const bool flat = grid.y == 1 && grid.z == 1;
  const bool bad = grid.x == 0 || grid.y == 0 || grid.z == 0 || (!flat && (cluster != 1 || whole_grid)) ||
                   threads == 0 || threads > kMaxThreadsPerBlock ||
                   dynamic_bytes > kMaxSharedPerBlock || cluster == 0 || cluster > kMaxCluster ||
                   grid.x % cluster != 0 || (whole_grid && grid.x > resident_blocks);
  if (bad) {
    engine.last_error = kErrorInvalidConfiguration;
    return;
  }
  if (engine.current >= 0) die("a launch from inside a kernel");
  gridDim = grid;
  blockDim = block;
  engine.threads_per_block = static_cast<int>(threads);
  engine.warps_per_block = static_cast<int>((threads + 31) / 32);
  engine.cluster = cluster;
  engine.whole_grid = whole_grid;
  engine.group_blocks = whole_grid ? static_cast<int>(grid.x) : static_cast<int>(cluster);
  engine.dynamic_bytes = dynamic_bytes;
  engine.static_base = (dynamic_bytes + kRedzone + 127) / 128 * 128;
  engine.static_end = engine.static_base;
  engine.static_offsets.clear();
  engine.mbarriers.clear();
  engine.body = [=] { kernel(static_cast<Params>(args)...); };
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned first = 0; first < grid.x; first += static_cast<unsigned>(engine.group_blocks)) run_group(first, y, z);
  engine.body = nullptr;
}

// Asynchronous copies land when they are waited for, as late as the GPU
// may let them (so a read before the wait sees NaN bytes), or under the
// round-robin schedule at once, as early as it may (so a copy issued before
// every thread has read the old contents shows).
inline bool land_at_once() { return engine.schedule == Schedule::kRoundRobin; }

inline void require_shared(const void* p, size_t bytes) {
  const auto& arena = engine.arenas[static_cast<size_t>(current_fiber().block_in_group)];
  const auto* byte = static_cast<const unsigned char*>(p);
  if (byte < arena.data() || byte + bytes > arena.data() + arena.size())
    die("an asynchronous copy to %p (%zu bytes) outside the block's shared memory", p, bytes);
}

// cp.async: one thread's copy of `total` bytes (4, 8 or 16), `bytes` of them read.
inline void async_copy(void* to, const void* from, size_t bytes, size_t total) {
  if (reinterpret_cast<uintptr_t>(to) % total != 0 || reinterpret_cast<uintptr_t>(from) % total != 0)
    die("cp.async of %zu bytes from %p to %p: misaligned", total, from, to);
  require_shared(to, total);
  const AsyncCopy copy{to, from, bytes, total};
  if (land_at_once()) return copy.land();
  current_fiber().async_groups.back().push_back(copy);
}
inline void commit_async() { current_fiber().async_groups.emplace_back(); }
// Lands all but the newest `pending` committed groups (the open group too when `all`).
inline void wait_async(size_t pending, bool all) {
  auto& groups = current_fiber().async_groups;
  const size_t committed = groups.size() - 1;
  const size_t land = all ? groups.size() : committed > pending ? committed - pending : 0;
  for (size_t g = 0; g < land; ++g)
    for (const AsyncCopy& copy : groups[g]) copy.land();
  groups.erase(groups.begin(), groups.begin() + static_cast<std::ptrdiff_t>(land));
  if (groups.empty()) groups.emplace_back();
}

inline void mbarrier_init(uint64_t* barrier) {
  require_shared(barrier, sizeof *barrier);
  *barrier = 0;
  engine.mbarriers[barrier] = Mbarrier{};
}
inline Mbarrier& mbarrier_at(const uint64_t* barrier) {
  auto it = engine.mbarriers.find(barrier);
  if (it == engine.mbarriers.end())
    die("an mbarrier at %p used before it was initialized", static_cast<const void*>(barrier));
  return it->second;
}
// A bulk copy (TMA) completing the current phase of `barrier`.
inline void bulk_copy(void* to, const void* from, size_t bytes, uint64_t* barrier) {
  if (bytes == 0 || bytes % 16 != 0 || reinterpret_cast<uintptr_t>(to) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(from) % 16 != 0)
    die("a bulk copy of %zu bytes from %p to %p: not whole aligned 16-byte words", bytes, from, to);
  require_shared(to, bytes);
  Mbarrier& m = mbarrier_at(barrier);
  m.pending.push_back(AsyncCopy{to, from, bytes, bytes});
  if (land_at_once()) {
    for (const AsyncCopy& copy : m.pending) copy.land();
    m.pending.clear();
    ++m.completed;
  }
}
// Returns once the phase of `barrier` with this parity has completed. A
// wait may begin before the copy that completes the phase is issued (by
// another thread): it sleeps until then; if none ever is, the launch
// reports a deadlock.
inline void mbarrier_wait_parity(uint64_t* barrier, uint32_t parity) {
  Mbarrier& m = mbarrier_at(barrier);
  if ((m.completed & 1) != parity) return;  // that phase is over
  if (m.pending.empty()) {
    Fiber& f = current_fiber();
    f.awaits = &m;
    f.awaits_parity = parity;
    f.waiting_at = "an mbarrier wait (no copy issued for its phase)";
    yield_to_scheduler();  // (resumed once a copy is issued, or the phase is over)
    f.awaits = nullptr;
    f.waiting_at = nullptr;
    if ((m.completed & 1) != parity) return;
  }
  for (const AsyncCopy& copy : m.pending) copy.land();
  m.pending.clear();
  ++m.completed;
}

template <class T>
uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "shuffles move up to 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  return bits;
}

// Every lane of the warp hands in v; each gets lane source(lane)'s.
template <class T, class Source>
T shuffle(unsigned mask, T v, Source source) {
  Fiber& f = current_fiber();
  const int lanes = engine.warp_barriers[static_cast<size_t>(f.warp)].expected;
  const unsigned present = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
  if ((mask & present) != present) die("a shuffle with mask %#x leaves out lanes of its warp", mask);
  // Two sets of slots, used in turn: a lane can write the next shuffle's
  // value only once every lane has handed in this one's, and it cannot pass
  // that next shuffle's barrier (and write the set after) until every lane
  // has read this one's.
  Barrier& barrier = engine.warp_barriers[static_cast<size_t>(f.warp)];
  uint64_t* slots = &engine.warp_slots[(static_cast<size_t>(f.warp) * 2 + (barrier.generation & 1)) * 32];
  slots[f.lane] = to_bits(v);
  arrive_and_wait(barrier, "a warp shuffle");
  int from = source(f.lane);
  if (from < 0 || from >= lanes) from = f.lane;
  T r;
  std::memcpy(&r, &slots[from], sizeof r);
  return r;
}

}  // namespace emu

// ---- intrinsics ----------------------------------------------------------------
inline void __syncthreads() {
  emu::arrive_and_wait(emu::engine.block_barriers[static_cast<size_t>(emu::current_fiber().block_in_group)],
                       "__syncthreads()");
}
inline void __syncwarp(unsigned mask = 0xffffffffu) { emu::shuffle(mask, 0, [](int lane) { return lane; }); }
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return emu::shuffle(mask, v, [=](int lane) {
    const int from = lane ^ lane_mask;
    return from / width == lane / width ? from : lane;
  });
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int step = static_cast<int>(delta);
  return emu::shuffle(mask, v, [=](int lane) { return lane % width + step < width ? lane + step : lane; });
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int step = static_cast<int>(delta);
  return emu::shuffle(mask, v, [=](int lane) { return lane % width >= step ? lane - step : lane; });
}
template <class T>
T __shfl_sync(unsigned mask, T v, int source, int width = 32) {
  return emu::shuffle(mask, v, [=](int lane) { return lane / width * width + source % width; });
}
template <class T>
T __ldcg(const T* p) {
  return *p;
}
[[noreturn]] inline void __trap() { emu::die("__trap() in block %u thread %u", blockIdx.x, threadIdx.x); }

inline uint32_t __umulhi(uint32_t a, uint32_t b) { return static_cast<uint32_t>((uint64_t{a} * b) >> 32); }
inline uint32_t __funnelshift_r(uint32_t lo, uint32_t hi, uint32_t shift) {
  return static_cast<uint32_t>(((uint64_t{hi} << 32) | lo) >> (shift & 31));
}
inline uint32_t __byte_perm(uint32_t x, uint32_t y, uint32_t selector) {
  const uint64_t bytes = (uint64_t{y} << 32) | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<uint32_t>((bytes >> (((selector >> (4 * i)) & 7) * 8)) & 0xff) << (8 * i);
  return r;
}
inline float __uint_as_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline uint32_t __float_as_uint(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float __int_as_float(int i) { return __uint_as_float(static_cast<uint32_t>(i)); }
inline int __float_as_int(float f) { return static_cast<int>(__float_as_uint(f)); }

// CUDA's device min / max overloads.
template <class A, class B>
constexpr std::common_type_t<A, B> min(A a, B b) {
  return b < a ? b : a;
}
template <class A, class B>
constexpr std::common_type_t<A, B> max(A a, B b) {
  return a < b ? b : a;
}

// `__shared__ T name[dims];` is rewritten to OPRT_EMULATED_SHARED(T, name, [dims]):
// a reference to the current block's copy; `extern __shared__ T name[];` to
// a pointer to the block's dynamic shared memory.
#define OPRT_EMULATED_SHARED(T, name, dims)                                                                \
  static const char name##_emulated_key = 0;                                                               \
  T(&name) dims = *reinterpret_cast<T(*) dims>(                                                            \
      ::emu::shared_variable(&name##_emulated_key, sizeof(T dims), alignof(T) < 16 ? 16 : alignof(T)))
#define OPRT_EMULATED_DYNAMIC_SHARED(T, name) T* name = ::emu::dynamic_shared<T>()

#endif
