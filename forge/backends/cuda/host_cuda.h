// Host stand-ins for what forge's generated CUDA kernels take from CUDA: the thread indices, the
// 16-bit types and intrinsics, and the PTX primitives forge_cuda.cuh leaves out under
// FORGE_HOST_EMULATION (cp.async, mma.sync, warp shuffles). With them a kernel runs on the CPU,
// one OpenMP thread per CUDA thread of a block, blocks one after another, so its indexing, tails,
// pipelines and fragment layouts can be checked against the reference without a GPU.
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
#include <omp.h>

struct Dim3 { unsigned x, y, z; };
extern thread_local Dim3 threadIdx;   // set per OpenMP thread by the driver
extern Dim3 blockIdx;                 // blocks run one after another

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__ static             // one block at a time: a static is the block's shared memory
#define __syncthreads() _Pragma("omp barrier")

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
  static thread_local int parity = 0;
  parity ^= 1;
  return parity;
}

inline float __shfl_xor_sync(unsigned, float v, int o) {
  static float lanes[2][1024];
  const unsigned t = threadIdx.x;
  const int b = host_flip();
  lanes[b][t] = v;
  _Pragma("omp barrier")
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
  _Pragma("omp barrier")
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
