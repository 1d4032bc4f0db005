// forge_cuda.cuh -- device helpers shared by forge's generated CUDA kernels.
// Tensor cores through mma.sync.m16n8k16 (fp16/bf16 inputs, fp32 accumulation) with the
// fragment layouts of the PTX ISA ("Matrix fragments for mma.m16n8k16"), and cp.async copies
// (16 B, zero-filled when out of bounds). Needs sm_80 or newer.
#pragma once
// FORGE_HOST_EMULATION: the test suite's host build (tests/cuda_host) supplies the CUDA types and
// the PTX primitives (cp.async, mma.sync, shuffles) itself; everything else here is shared.
#ifndef FORGE_HOST_EMULATION
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif
#include <stdint.h>

namespace forge {

// ---- scalar conversions ---------------------------------------------------------------------
__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// Two floats -> one 32-bit register holding two 16-bit values (`lo` at the lower address).
template <typename T> __device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}
// Two 16-bit values already in memory -> one register.
template <typename T> __device__ __forceinline__ uint32_t pack2_raw(T lo, T hi) {
  uint16_t a = *reinterpret_cast<uint16_t*>(&lo), b = *reinterpret_cast<uint16_t*>(&hi);
  return (uint32_t)a | ((uint32_t)b << 16);
}

#ifndef FORGE_HOST_EMULATION
// ---- cp.async ---------------------------------------------------------------------------------
// Copy 16 bytes global -> shared; when `pred` is false the 16 bytes are zero-filled and
// nothing is read (src-size 0), so tails need no separate code path.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool pred) {
  uint32_t s = (uint32_t)__cvta_generic_to_shared(smem);
  int n = pred ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(n));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// ---- mma.sync m16n8k16, fp32 accumulate ---------------------------------------------------------
// Lane l: g = l / 4 (row group), t = l % 4. A (16x16, row): a[0]=(g, 2t..2t+1), a[1]=(g+8, 2t..),
// a[2]=(g, 8+2t..), a[3]=(g+8, 8+2t..). B (16x8, col): b[0]=(k=2t..2t+1, n=g), b[1]=(k=8+2t.., n=g).
// C (16x8): c[0..1]=(g, 2t..2t+1), c[2..3]=(g+8, 2t..2t+1).
template <typename T> __device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], const uint32_t b[2]);
template <> __device__ __forceinline__ void mma16816<__half>(float c[4], const uint32_t a[4], const uint32_t b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <> __device__ __forceinline__ void mma16816<__nv_bfloat16>(float c[4], const uint32_t a[4], const uint32_t b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif  // FORGE_HOST_EMULATION

// A fragment of the 16x16 tile at (r0, k0) of a row-major smem matrix with row stride `ld`.
template <typename T> __device__ __forceinline__ void load_a_frag(uint32_t a[4], const T* s, int ld, int r0, int k0, int lane) {
  const int g = lane >> 2, t = lane & 3;
  a[0] = *reinterpret_cast<const uint32_t*>(s + (r0 + g) * ld + k0 + 2 * t);
  a[1] = *reinterpret_cast<const uint32_t*>(s + (r0 + g + 8) * ld + k0 + 2 * t);
  a[2] = *reinterpret_cast<const uint32_t*>(s + (r0 + g) * ld + k0 + 8 + 2 * t);
  a[3] = *reinterpret_cast<const uint32_t*>(s + (r0 + g + 8) * ld + k0 + 8 + 2 * t);
}
// B fragment (k0..k0+15, n0..n0+7) from smem stored n-major, i.e. Bt[n][k] (K of attention, B^T of gemm).
template <typename T> __device__ __forceinline__ void load_b_frag_nk(uint32_t b[2], const T* s, int ld, int n0, int k0, int lane) {
  const int g = lane >> 2, t = lane & 3;
  b[0] = *reinterpret_cast<const uint32_t*>(s + (n0 + g) * ld + k0 + 2 * t);
  b[1] = *reinterpret_cast<const uint32_t*>(s + (n0 + g) * ld + k0 + 8 + 2 * t);
}
// B fragment from smem stored k-major, i.e. B[k][n] (V of attention, row-major B of gemm).
template <typename T> __device__ __forceinline__ void load_b_frag_kn(uint32_t b[2], const T* s, int ld, int n0, int k0, int lane) {
  const int g = lane >> 2, t = lane & 3;
  b[0] = pack2_raw<T>(s[(k0 + 2 * t) * ld + n0 + g], s[(k0 + 2 * t + 1) * ld + n0 + g]);
  b[1] = pack2_raw<T>(s[(k0 + 8 + 2 * t) * ld + n0 + g], s[(k0 + 8 + 2 * t + 1) * ld + n0 + g]);
}

// ---- reductions ---------------------------------------------------------------------------------
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// A vector of N elements loaded/stored in one instruction (N * sizeof(T) <= 16 bytes).
template <typename T, int N> struct alignas(sizeof(T) * N) Vec { T v[N]; };

}  // namespace forge
