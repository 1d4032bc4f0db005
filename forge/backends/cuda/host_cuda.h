// Host stand-ins for what forge's generated CUDA kernels take from CUDA: the thread indices, the
// 16-bit types and intrinsics, and the PTX primitives forge_cuda.cuh leaves out under
// FORGE_HOST_EMULATION (cp.async, mma.sync, warp shuffles). With them a kernel runs on the CPU,
// each CUDA thread of a block a coroutine (ucontext) on one OS thread, blocks one after another,
// so its indexing, tails, pipelines and fragment layouts can be checked against the reference
// without a GPU. __syncthreads() hands control back to the block's scheduler, which runs every
// other thread of the block up to the same barrier before any goes on: a block's threads
// interleave only at barriers, which a correct kernel cannot tell from running at once.
// Warp-collective operations exchange their lanes' values through block-wide barriers, so every
// thread of a block must reach them together, as in forge's kernels. cp.async copies land at
// once (a correct kernel waits for them anyway). mma.sync is computed in fp32 from the fragment
// layouts of the PTX ISA ("Matrix fragments for mma.m16n8k16"), which forge_cuda.cuh documents.
#pragma once
#define FORGE_HOST_EMULATION 1
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sys/mman.h>
#include <ucontext.h>

struct Dim3 { unsigned x, y, z; };
extern Dim3 threadIdx;                // the running thread's, set by the scheduler at each switch
extern Dim3 blockIdx;                 // blocks run one after another

// ---- a block's threads as coroutines ------------------------------------------------------------
namespace forge_host {
constexpr size_t kStack = 256 << 10;  // per CUDA thread: its local arrays (register tiles) live here
constexpr int kMaxThreads = 1024;     // CUDA's limit on threads per block

struct Block {
  ucontext_t scheduler, threads[kMaxThreads];
  unsigned char finished[kMaxThreads];
  unsigned current = 0;
  char* stacks = nullptr;             // kMaxThreads stacks, each over a guard page, mapped once
  void (*call)(void*) = nullptr;      // runs the kernel launch `body` (a lambda) as the current thread
  void* body = nullptr;
};
inline Block& block() { static Block b; return b; }

inline void sync_threads() {          // to the scheduler, which resumes this thread after the barrier
  Block& b = block();
  swapcontext(&b.threads[b.current], &b.scheduler);
}

inline void thread_main() {
  Block& b = block();
  b.call(b.body);
  b.finished[b.current] = 1;          // returning resumes the scheduler (uc_link)
}

// Runs the block `blockIdx` names as `threads` CUDA threads, barrier by barrier.
inline bool run_threads(int threads) {
  Block& b = block();
  if (threads < 1 || threads > kMaxThreads) return false;
  const size_t page = 4096, each = kStack + page;
  if (!b.stacks) {
    void* m = mmap(nullptr, each * kMaxThreads, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) return false;
    b.stacks = static_cast<char*>(m);
    for (int i = 0; i < kMaxThreads; ++i) mprotect(b.stacks + i * each, page, PROT_NONE);   // overflow: a fault
  }
  for (int i = 0; i < threads; ++i) {
    getcontext(&b.threads[i]);
    b.threads[i].uc_stack.ss_sp = b.stacks + i * each + page;
    b.threads[i].uc_stack.ss_size = kStack;
    b.threads[i].uc_link = &b.scheduler;
    makecontext(&b.threads[i], thread_main, 0);
    b.finished[i] = 0;
  }
  for (int live = threads; live > 0;) {   // one round: every live thread up to its next barrier
    for (int i = 0; i < threads; ++i) {
      if (b.finished[i]) continue;
      b.current = (unsigned)i;
      threadIdx = Dim3{(unsigned)i, 0, 0};
      swapcontext(&b.scheduler, &b.threads[i]);
      if (b.finished[i]) --live;
    }
  }
  return true;
}

template <typename F> inline bool run_block(int threads, F& body) {
  Block& b = block();
  b.call = [](void* f) { (*static_cast<F*>(f))(); };
  b.body = &body;
  return run_threads(threads);
}
}  // namespace forge_host

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__ static             // one block at a time: a static is the block's shared memory
#define __syncthreads() ::forge_host::sync_threads()

inline float __expf(float x) { return std::exp(x); }
inline float rsqrtf(float x) { return 1.f / std::sqrt(x); }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

// ---- 16-bit types: storage only; arithmetic goes through float ----------------------------------
struct __half { uint16_t x; };
struct __nv_bfloat16 { uint16_t x; };
struct __half2 { __half lo, hi; };
struct __nv_bfloat162 { __nv_bfloat16 lo, hi; };
inline float __half2float(__half h) { _Float16 f; std::memcpy(&f, &h.x, 2); return (float)f; }
inline __half __float2half_rn(float x) { _Float16 f = (_Float16)x; __half h; std::memcpy(&h.x, &f, 2); return h; }
inline float __bfloat162float(__nv_bfloat16 h) { uint32_t u = (uint32_t)h.x << 16; float f; std::memcpy(&f, &u, 4); return f; }
inline __nv_bfloat16 __float2bfloat16_rn(float x) {
  uint32_t u; std::memcpy(&u, &x, 4);
  return __nv_bfloat16{(uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16)};   // round to nearest even
}
inline __half2 __floats2half2_rn(float lo, float hi) { return {__float2half_rn(lo), __float2half_rn(hi)}; }
inline __nv_bfloat162 __floats2bfloat162_rn(float lo, float hi) { return {__float2bfloat16_rn(lo), __float2bfloat16_rn(hi)}; }
inline float host_f32(__half h) { return __half2float(h); }
inline float host_f32(__nv_bfloat16 h) { return __bfloat162float(h); }

// ---- warp exchange through the block ------------------------------------------------------------------
// Each exchange writes one of two buffers, alternating, so one barrier suffices: a thread that
// writes the other buffer next has passed this barrier, which every reader of this one reached
// only after reading.
inline int host_flip() {
  static int parity[forge_host::kMaxThreads];
  return parity[threadIdx.x] ^= 1;
}

inline float __shfl_xor_sync(unsigned, float v, int o) {
  static float lanes[2][1024];
  const unsigned t = threadIdx.x;
  const int b = host_flip();
  lanes[b][t] = v;
  __syncthreads();
  return lanes[b][t ^ (unsigned)o];
}

namespace forge {
inline void cp_async16(void* smem, const void* gmem, bool pred) {
  if (pred) std::memcpy(smem, gmem, 16); else std::memset(smem, 0, 16);
}
inline void cp_async_commit() {}
template <int N> inline void cp_async_wait() {}

template <typename T> inline float host_half(uint32_t r, unsigned e) {
  T h{(uint16_t)(e ? r >> 16 : r & 0xFFFFu)};
  return host_f32(h);
}
template <typename T> inline void mma16816(float c[4], const uint32_t a[4], const uint32_t b[2]) {
  static uint32_t la[2][1024][4], lb[2][1024][2];
  const unsigned tid = threadIdx.x, w0 = tid & ~31u, lane = tid & 31u, g = lane >> 2, t = lane & 3u;
  const int buf = host_flip();
  for (int i = 0; i < 4; ++i) la[buf][tid][i] = a[i];
  for (int i = 0; i < 2; ++i) lb[buf][tid][i] = b[i];
  __syncthreads();
  // A(r, k): lane (r % 8) * 4 + (k % 8) / 2, register (r >= 8) + 2 (k >= 8), half k % 2
  // B(k, n): lane n * 4 + (k % 8) / 2, register (k >= 8), half k % 2
  auto A = [&](unsigned r, unsigned k) {
    return host_half<T>(la[buf][w0 + (r % 8) * 4 + (k % 8) / 2][(r >= 8) + 2 * (k >= 8)], k % 2);
  };
  auto B = [&](unsigned k, unsigned n) { return host_half<T>(lb[buf][w0 + n * 4 + (k % 8) / 2][k >= 8], k % 2); };
  for (unsigned k = 0; k < 16; ++k) {   // C: c[0..1] = (g, 2t..2t+1), c[2..3] = (g+8, 2t..2t+1)
    c[0] += A(g, k) * B(k, 2 * t);
    c[1] += A(g, k) * B(k, 2 * t + 1);
    c[2] += A(g + 8, k) * B(k, 2 * t);
    c[3] += A(g + 8, k) * B(k, 2 * t + 1);
  }
}
}  // namespace forge
