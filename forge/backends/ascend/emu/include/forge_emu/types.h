// forge Ascend C CPU emulator: scalar types, qualifiers and enums of the Ascend C API.
// Names follow ascend.md §2 (which cites the ASC headers); only what forge's generators use.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstddef>
#include <type_traits>

// ---- qualifiers and kernel-entry macros (ascend.md §2.1) -----------------------------------
#define __aicore__
#define __global__
#define __gm__
#define __ubuf__
#define __cbuf__
#ifndef GM_ADDR
#define GM_ADDR uint8_t*
#endif

// ---- 16-bit float types ----------------------------------------------------------------------
namespace forge_emu {

inline float f16_bits_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, out;
  if (exp == 0) {
    if (mant == 0) { out = sign; }
    else {  // subnormal: value = mant * 2^-24
      float v = (float)mant * (1.0f / 16777216.0f);
      std::memcpy(&out, &v, 4); out |= sign;
    }
  } else if (exp == 31) { out = sign | 0x7f800000 | (mant << 13); }
  else { out = sign | ((exp + 112) << 23) | (mant << 13); }
  float f; std::memcpy(&f, &out, 4); return f;
}

inline uint16_t f32_to_f16_bits(float f) {  // round to nearest even
  uint32_t x; std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7fffffff;
  if (ax >= 0x7f800000) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000 ? 0x200 | ((ax >> 13) & 0x3ff) : 0));
  if (ax >= 0x477ff000) return (uint16_t)(sign | 0x7c00);          // >= 65520 -> inf
  if (ax < 0x38800000) {                                            // below 2^-14: subnormal
    float a; std::memcpy(&a, &ax, 4);
    return (uint16_t)(sign | (uint32_t)std::nearbyint(a * 16777216.0f));
  }
  uint32_t h = ((((ax >> 23) - 112) << 10) | ((ax & 0x7fffff) >> 13));
  uint32_t rem = ax & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
  return (uint16_t)(sign | h);
}

inline float bf16_bits_to_f32(uint16_t b) { uint32_t x = (uint32_t)b << 16; float f; std::memcpy(&f, &x, 4); return f; }
inline uint16_t f32_to_bf16_bits(float f) {  // round to nearest even
  uint32_t x; std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

}  // namespace forge_emu

// `half` and `bfloat16_t`: storage is the raw 16 bits; arithmetic goes through float and rounds
// back, as a 16-bit vector unit does.
struct half {
  uint16_t bits = 0;
  half() = default;
  half(float f) : bits(forge_emu::f32_to_f16_bits(f)) {}
  half(double f) : bits(forge_emu::f32_to_f16_bits((float)f)) {}
  half(int v) : bits(forge_emu::f32_to_f16_bits((float)v)) {}
  half(unsigned v) : bits(forge_emu::f32_to_f16_bits((float)v)) {}
  half(int64_t v) : bits(forge_emu::f32_to_f16_bits((float)v)) {}
  operator float() const { return forge_emu::f16_bits_to_f32(bits); }
  static half from_bits(uint16_t b) { half h; h.bits = b; return h; }
};
struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  bfloat16_t(float f) : bits(forge_emu::f32_to_bf16_bits(f)) {}
  bfloat16_t(double f) : bits(forge_emu::f32_to_bf16_bits((float)f)) {}
  bfloat16_t(int v) : bits(forge_emu::f32_to_bf16_bits((float)v)) {}
  operator float() const { return forge_emu::bf16_bits_to_f32(bits); }
  static bfloat16_t from_bits(uint16_t b) { bfloat16_t h; h.bits = b; return h; }
};
#define FORGE_EMU_HALF_OPS(T)                                                              \
  inline T operator+(T a, T b) { return T((float)a + (float)b); }                        \
  inline T operator-(T a, T b) { return T((float)a - (float)b); }                        \
  inline T operator*(T a, T b) { return T((float)a * (float)b); }                        \
  inline T operator/(T a, T b) { return T((float)a / (float)b); }                        \
  inline T operator-(T a) { T r = a; r.bits ^= 0x8000; return r; }                        \
  inline bool operator<(T a, T b) { return (float)a < (float)b; }                         \
  inline bool operator>(T a, T b) { return (float)a > (float)b; }                         \
  inline bool operator<=(T a, T b) { return (float)a <= (float)b; }                       \
  inline bool operator>=(T a, T b) { return (float)a >= (float)b; }                       \
  inline bool operator==(T a, T b) { return (float)a == (float)b; }                       \
  inline bool operator!=(T a, T b) { return (float)a != (float)b; }
FORGE_EMU_HALF_OPS(half)
FORGE_EMU_HALF_OPS(bfloat16_t)
#undef FORGE_EMU_HALF_OPS
static_assert(sizeof(half) == 2 && sizeof(bfloat16_t) == 2, "16-bit storage");

namespace AscendC {

using ::half;
using ::bfloat16_t;

// TPosition -> physical memory (ascend.md §2.2)
enum class TPosition : uint8_t { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM = SPM, TSCM, C2PIPE2GM, C2PIPE2LOCAL, MAX };
using QuePosition = TPosition;

// pipes (ascend.md §2.8)
enum pipe_t : uint8_t { PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_MTE4, PIPE_MTE5, PIPE_V2, PIPE_FIX, PIPE_NUM };

// HardEvent (ascend.md §2.8, full list from ASC impl/basic_api/kernel_event.h)
enum class HardEvent : uint8_t {
  MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V,
  MTE3_MTE1, MTE1_MTE3, MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3,
  S_V, V_S, S_MTE2, MTE2_S, S_MTE3, MTE3_S, MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3,
  MTE1_FIX, FIX_MTE1, FIX_FIX, MAX
};
using event_t = int32_t;
enum TEventID : int32_t { EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };

// Cast rounding (ascend.md §2.5.1, ASC kernel_utils_mode.h)
enum class RoundMode : uint8_t { CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };

enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };
enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };
using ReduceOrder_t = ReduceOrder;
constexpr ReduceOrder ORDER_VALUE_INDEX = ReduceOrder::ORDER_VALUE_INDEX;
constexpr ReduceOrder ORDER_INDEX_VALUE = ReduceOrder::ORDER_INDEX_VALUE;
constexpr ReduceOrder ORDER_ONLY_VALUE = ReduceOrder::ORDER_ONLY_VALUE;
constexpr ReduceOrder ORDER_ONLY_INDEX = ReduceOrder::ORDER_ONLY_INDEX;

enum class CacheMode : uint8_t { CACHE_MODE_NORMAL = 0, CACHE_MODE_DISABLE, CACHE_MODE_LAST };

// Kernel types (ascend.md §2.1, table "Kernel type")
enum KernelMetaType : uint8_t {
  KERNEL_TYPE_AIV_ONLY = 0, KERNEL_TYPE_AIC_ONLY, KERNEL_TYPE_MIX_AIV_1_0, KERNEL_TYPE_MIX_AIC_1_0,
  KERNEL_TYPE_MIX_AIC_1_1, KERNEL_TYPE_MIX_AIC_1_2, KERNEL_TYPE_AICORE, KERNEL_TYPE_MIX_VECTOR_CORE
};
enum class AscendCoreType : uint8_t { AIC = 0, AIV = 1 };
constexpr AscendCoreType AIC = AscendCoreType::AIC;
constexpr AscendCoreType AIV = AscendCoreType::AIV;

constexpr int32_t ONE_BLK_SIZE = 32;      // bytes per DataBlock (ascend.md §1.3)
constexpr int32_t ONE_REPEAT_BYTE_SIZE = 256;  // bytes per vector repeat (ascend.md §1.4)
constexpr int32_t DEFAULT_BLK_NUM = 8;
constexpr int32_t DEFAULT_REPEAT_STRIDE = 8;

}  // namespace AscendC

// Kernel-type markers; they are statements in the kernel body (ascend.md §2.1).
using AscendC::KERNEL_TYPE_AIV_ONLY; using AscendC::KERNEL_TYPE_AIC_ONLY;
using AscendC::KERNEL_TYPE_MIX_AIV_1_0; using AscendC::KERNEL_TYPE_MIX_AIC_1_0;
using AscendC::KERNEL_TYPE_MIX_AIC_1_1; using AscendC::KERNEL_TYPE_MIX_AIC_1_2;
using AscendC::KERNEL_TYPE_AICORE; using AscendC::KERNEL_TYPE_MIX_VECTOR_CORE;
using AscendC::pipe_t;
using AscendC::PIPE_S; using AscendC::PIPE_V; using AscendC::PIPE_M; using AscendC::PIPE_MTE1;
using AscendC::PIPE_MTE2; using AscendC::PIPE_MTE3; using AscendC::PIPE_ALL; using AscendC::PIPE_FIX;
using AscendC::event_t;
using AscendC::EVENT_ID0; using AscendC::EVENT_ID1; using AscendC::EVENT_ID2; using AscendC::EVENT_ID3;
using AscendC::EVENT_ID4; using AscendC::EVENT_ID5; using AscendC::EVENT_ID6; using AscendC::EVENT_ID7;
