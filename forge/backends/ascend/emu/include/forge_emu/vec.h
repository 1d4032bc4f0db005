// forge Ascend C CPU emulator: the vector API subset (ascend.md §2.5).
//
// 16-bit types compute through float and round back to 16 bits after every instruction, as the
// vector unit does; fp32 computes in float. Operands must be UB tensors on an AIV, 32-byte aligned
// (ascend.md §1.3) and inside their buffers. Count forms and the high-dimensional
// (mask, repeatTime, RepeatParams) forms are both provided (ascend.md §2.5.1, "Mask and repeat").
#pragma once
#include <algorithm>
#include <limits>
#include <vector>
#include "tensor.h"

namespace AscendC {

struct BinaryRepeatParams {
  uint8_t dstBlkStride = 1, src0BlkStride = 1, src1BlkStride = 1;
  uint8_t dstRepStride = 8, src0RepStride = 8, src1RepStride = 8;
};
struct UnaryRepeatParams {
  uint16_t dstBlkStride = 1, srcBlkStride = 1;
  uint8_t dstRepStride = 8, srcRepStride = 8;
};
struct BrcbRepeatParams {
  uint16_t dstBlkStride = 1;
  uint16_t dstRepStride = 8;
};

// The mask register is set by the high-dimensional calls themselves (isSetMask = true).
__aicore__ inline void SetMaskCount() {}
__aicore__ inline void SetMaskNorm() {}
__aicore__ inline void ResetMask() {}
template <typename T, int mode = 0>
__aicore__ inline void SetVectorMask(uint64_t, uint64_t = 0) {}
template <typename T, int mode = 0>
__aicore__ inline void SetVectorMask(int32_t) {}

namespace detail {
using forge_emu::Diag;
using forge_emu::Loc;

template <typename T> struct Num {
  using C = std::conditional_t<std::is_integral_v<T>, int64_t, float>;
  static C ld(T v) { return (C)(std::conditional_t<std::is_integral_v<T>, T, float>)v; }
  static T st(C c) { return T(c); }
};

// Checks a vector operand; given the instruction, also its order against other pipes (hazard.h).
template <typename T>
inline void vcheck(const LocalTensor<T>& t, uint64_t byte_lo, uint64_t byte_hi, const char* op, const Loc& loc,
                   const forge_emu::Instr* I = nullptr, bool write = false) {
  using namespace forge_emu;
  if (t.ref_.core < 0) Diag("bad_api").kv("op", op).msg("LocalTensor used before it was obtained from AllocTensor/DeQue/Get").at(loc).fail(EXIT_BAD_API);
  if (cur().type != AscendCoreType::AIV) Diag("bad_api").kv("op", op).msg("vector instruction on an AIC (split mode, ascend.md §1.1)").at(loc).fail(EXIT_BAD_API);
  if (t.ref_.mem != MEM_UB) Diag("bad_api").kv("op", op).kv("memory", mem_name(t.ref_.mem)).msg("vector operands live in UB (ascend.md §2.5.1)").at(loc).fail(EXIT_BAD_API);
  if (t.ref_.off % limits().ub_align)
    Diag("misaligned").kv("op", op).kv("memory", "UB").kv("address", (long long)t.ref_.off).kv("align", (long long)limits().ub_align)
        .msg(std::string(op) + ": UB operand address " + std::to_string(t.ref_.off) + " is not 32-byte aligned (ascend.md §1.3)").at(loc).fail(EXIT_MISALIGNED);
  if (byte_hi > byte_lo) t.check_range(byte_lo, byte_hi - byte_lo, op, loc, I, write);
}
inline forge_emu::Instr vissue(const char* op, const Loc& loc) { return forge_emu::issue(forge_emu::P_V, op, loc); }
inline void check_count(int64_t count, const char* op, const Loc& loc) {
  if (count < 0) Diag("bad_api").kv("op", op).kv("count", (long long)count).msg("negative count").at(loc).fail(forge_emu::EXIT_BAD_API);
}

// Element mask of one repeat: continuous (first n elements) or bit mode (ascend.md §2.5.1).
struct Mask {
  uint64_t lo = 0, hi = 0;
  bool test(int i) const { return i < 64 ? (lo >> i) & 1 : (hi >> (i - 64)) & 1; }
};
template <typename T>
inline Mask mask_count(uint64_t n, const char* op, const Loc& loc) {
  const uint64_t per = 256 / sizeof(T);
  if (n < 1 || n > per)
    Diag("bad_api").kv("op", op).kv("mask", (long long)n).kv("max", (long long)per)
        .msg("continuous mask must be in [1, " + std::to_string(per) + "] for this type (ascend.md §2.5.1)").at(loc).fail(forge_emu::EXIT_BAD_API);
  Mask m;
  m.lo = n >= 64 ? ~0ull : ((1ull << n) - 1);
  m.hi = n > 64 ? (n >= 128 ? ~0ull : ((1ull << (n - 64)) - 1)) : 0;
  return m;
}
template <typename T>
inline Mask mask_bits(const uint64_t* m) { Mask r; r.lo = m[0]; r.hi = sizeof(T) == 2 ? m[1] : 0; return r; }

// Byte offset of element e (0 .. 256/sizeof(T)) of repeat r for the given block / repeat strides.
template <typename T>
inline uint64_t hd_off(int r, int e, int blkStride, int repStride) {
  const int epb = 32 / (int)sizeof(T);
  return (uint64_t)r * repStride * 32 + (uint64_t)(e / epb) * blkStride * 32 + (uint64_t)(e % epb) * sizeof(T);
}

// Applies f to NS sources per masked element of each repeat; all reads happen before writes.
template <typename T, int NS, class F>
inline void hd_apply(const char* op, const LocalTensor<T>& dst, const LocalTensor<T>* const* srcs, Mask mask, int repeat,
                     int dBlk, int dRep, const int* sBlk, const int* sRep, F f, const Loc& loc) {
  using C = typename Num<T>::C;
  const int per = 256 / (int)sizeof(T);
  uint64_t dhi = 0, shi[NS > 0 ? NS : 1] = {};
  for (int r = 0; r < repeat; ++r)
    for (int e = 0; e < per; ++e) {
      if (!mask.test(e)) continue;
      dhi = std::max(dhi, hd_off<T>(r, e, dBlk, dRep) + sizeof(T));
      for (int s = 0; s < NS; ++s) shi[s] = std::max(shi[s], hd_off<T>(r, e, sBlk[s], sRep[s]) + sizeof(T));
    }
  vcheck(dst, 0, dhi, op, loc);
  for (int s = 0; s < NS; ++s) vcheck(*srcs[s], 0, shi[s], op, loc);
  forge_emu::Instr I = vissue(op, loc);
  std::vector<std::pair<uint64_t, T>> out;
  for (int r = 0; r < repeat; ++r)
    for (int e = 0; e < per; ++e) {
      if (!mask.test(e)) continue;
      C v[NS > 0 ? NS : 1];
      for (int s = 0; s < NS; ++s) {
        srcs[s]->check_range(hd_off<T>(r, e, sBlk[s], sRep[s]), sizeof(T), op, loc, &I, false);
        T x; std::memcpy(&x, reinterpret_cast<const uint8_t*>(srcs[s]->raw()) + hd_off<T>(r, e, sBlk[s], sRep[s]), sizeof(T));
        v[s] = Num<T>::ld(x);
      }
      out.push_back({hd_off<T>(r, e, dBlk, dRep), Num<T>::st(f(v))});
    }
  uint8_t* d = reinterpret_cast<uint8_t*>(dst.raw());
  for (auto& o : out) { dst.check_range(o.first, sizeof(T), op, loc, &I, true); std::memcpy(d + o.first, &o.second, sizeof(T)); }
}

template <typename T, int NS, class F>
inline void count_apply(const char* op, const LocalTensor<T>& dst, const LocalTensor<T>* const* srcs, int64_t count, F f, const Loc& loc) {
  using C = typename Num<T>::C;
  check_count(count, op, loc);
  uint64_t bytes = (uint64_t)count * sizeof(T);
  forge_emu::Instr I = vissue(op, loc);
  for (int s = 0; s < NS; ++s) vcheck(*srcs[s], 0, bytes, op, loc, &I, false);
  vcheck(dst, 0, bytes, op, loc, &I, true);
  std::vector<T> out((size_t)count);
  for (int64_t i = 0; i < count; ++i) {
    C v[NS > 0 ? NS : 1];
    for (int s = 0; s < NS; ++s) v[s] = Num<T>::ld(srcs[s]->raw()[i]);
    out[(size_t)i] = Num<T>::st(f(v));
  }
  if (count) std::memcpy(dst.raw(), out.data(), bytes);
}

template <typename C> inline C vmax(C a, C b) { return a > b ? a : b; }
template <typename C> inline C vmin(C a, C b) { return a < b ? a : b; }
}  // namespace detail

// ---- binary ops: dst = op(src0, src1) ---------------------------------------------------------
#define FORGE_EMU_BINARY(NAME, EXPR)                                                                          \
  template <typename T, bool isSetMask = true>                                                                \
  __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, \
                              const int32_t& count, forge_emu::Loc loc = forge_emu::Loc::current()) {          \
    const LocalTensor<T>* s[2] = {&src0, &src1};                                                              \
    detail::count_apply<T, 2>(#NAME, dst, s, count, [](auto* v) { auto a = v[0]; auto b = v[1]; return EXPR; }, loc); \
  }                                                                                                           \
  template <typename T, bool isSetMask = true>                                                                \
  __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, \
                              uint64_t mask, const uint8_t repeatTime, const BinaryRepeatParams& p,            \
                              forge_emu::Loc loc = forge_emu::Loc::current()) {                                \
    const LocalTensor<T>* s[2] = {&src0, &src1};                                                              \
    int sb[2] = {p.src0BlkStride, p.src1BlkStride}, sr[2] = {p.src0RepStride, p.src1RepStride};              \
    detail::hd_apply<T, 2>(#NAME, dst, s, detail::mask_count<T>(mask, #NAME, loc), repeatTime, p.dstBlkStride, \
                           p.dstRepStride, sb, sr, [](auto* v) { auto a = v[0]; auto b = v[1]; return EXPR; }, loc); \
  }                                                                                                           \
  template <typename T, bool isSetMask = true>                                                                \
  __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, \
                              const uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams& p,    \
                              forge_emu::Loc loc = forge_emu::Loc::current()) {                                \
    const LocalTensor<T>* s[2] = {&src0, &src1};                                                              \
    int sb[2] = {p.src0BlkStride, p.src1BlkStride}, sr[2] = {p.src0RepStride, p.src1RepStride};              \
    detail::hd_apply<T, 2>(#NAME, dst, s, detail::mask_bits<T>(mask), repeatTime, p.dstBlkStride,             \
                           p.dstRepStride, sb, sr, [](auto* v) { auto a = v[0]; auto b = v[1]; return EXPR; }, loc); \
  }
FORGE_EMU_BINARY(Add, a + b)
FORGE_EMU_BINARY(Sub, a - b)
FORGE_EMU_BINARY(Mul, a * b)
FORGE_EMU_BINARY(Div, a / b)
FORGE_EMU_BINARY(Max, detail::vmax(a, b))
FORGE_EMU_BINARY(Min, detail::vmin(a, b))
FORGE_EMU_BINARY(And, (decltype(a))((int64_t)a & (int64_t)b))
FORGE_EMU_BINARY(Or, (decltype(a))((int64_t)a | (int64_t)b))
#undef FORGE_EMU_BINARY

// ---- scalar ops: dst = op(src, scalar) --------------------------------------------------------
#define FORGE_EMU_SCALAR(NAME, EXPR)                                                                           \
  template <typename T, bool isSetMask = true>                                                                 \
  __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const std::type_identity_t<T>& scalar, \
                              const int32_t& count, forge_emu::Loc loc = forge_emu::Loc::current()) {           \
    const LocalTensor<T>* s[1] = {&src};                                                                       \
    auto b = detail::Num<T>::ld(scalar);                                                                       \
    detail::count_apply<T, 1>(#NAME, dst, s, count, [b](auto* v) { auto a = v[0]; return EXPR; }, loc);        \
  }                                                                                                            \
  template <typename T, bool isSetMask = true>                                                                 \
  __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const std::type_identity_t<T>& scalar, \
                              uint64_t mask, const uint8_t repeatTime, const UnaryRepeatParams& p,               \
                              forge_emu::Loc loc = forge_emu::Loc::current()) {                                 \
    const LocalTensor<T>* s[1] = {&src};                                                                       \
    int sb[1] = {p.srcBlkStride}, sr[1] = {p.srcRepStride};                                                    \
    auto b = detail::Num<T>::ld(scalar);                                                                       \
    detail::hd_apply<T, 1>(#NAME, dst, s, detail::mask_count<T>(mask, #NAME, loc), repeatTime, p.dstBlkStride,  \
                           p.dstRepStride, sb, sr, [b](auto* v) { auto a = v[0]; return EXPR; }, loc);         \
  }                                                                                                            \
  template <typename T, bool isSetMask = true>                                                                 \
  __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const std::type_identity_t<T>& scalar, \
                              const uint64_t mask[], const uint8_t repeatTime, const UnaryRepeatParams& p,       \
                              forge_emu::Loc loc = forge_emu::Loc::current()) {                                 \
    const LocalTensor<T>* s[1] = {&src};                                                                       \
    int sb[1] = {p.srcBlkStride}, sr[1] = {p.srcRepStride};                                                    \
    auto b = detail::Num<T>::ld(scalar);                                                                       \
    detail::hd_apply<T, 1>(#NAME, dst, s, detail::mask_bits<T>(mask), repeatTime, p.dstBlkStride,              \
                           p.dstRepStride, sb, sr, [b](auto* v) { auto a = v[0]; return EXPR; }, loc);         \
  }
FORGE_EMU_SCALAR(Adds, a + b)
FORGE_EMU_SCALAR(Muls, a * b)
FORGE_EMU_SCALAR(Maxs, detail::vmax(a, b))
FORGE_EMU_SCALAR(Mins, detail::vmin(a, b))
FORGE_EMU_SCALAR(LeakyRelu, a >= 0 ? a : a * b)
#undef FORGE_EMU_SCALAR

// ---- unary ops: dst = op(src) -----------------------------------------------------------------
#define FORGE_EMU_UNARY(NAME, EXPR)                                                                            \
  template <typename T, bool isSetMask = true>                                                                 \
  __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count,       \
                              forge_emu::Loc loc = forge_emu::Loc::current()) {                                 \
    const LocalTensor<T>* s[1] = {&src};                                                                       \
    detail::count_apply<T, 1>(#NAME, dst, s, count, [](auto* v) { auto a = v[0]; return EXPR; }, loc);         \
  }                                                                                                            \
  template <typename T, bool isSetMask = true>                                                                 \
  __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask,              \
                              const uint8_t repeatTime, const UnaryRepeatParams& p,                             \
                              forge_emu::Loc loc = forge_emu::Loc::current()) {                                 \
    const LocalTensor<T>* s[1] = {&src};                                                                       \
    int sb[1] = {p.srcBlkStride}, sr[1] = {p.srcRepStride};                                                    \
    detail::hd_apply<T, 1>(#NAME, dst, s, detail::mask_count<T>(mask, #NAME, loc), repeatTime, p.dstBlkStride,  \
                           p.dstRepStride, sb, sr, [](auto* v) { auto a = v[0]; return EXPR; }, loc);          \
  }                                                                                                            \
  template <typename T, bool isSetMask = true>                                                                 \
  __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],      \
                              const uint8_t repeatTime, const UnaryRepeatParams& p,                             \
                              forge_emu::Loc loc = forge_emu::Loc::current()) {                                 \
    const LocalTensor<T>* s[1] = {&src};                                                                       \
    int sb[1] = {p.srcBlkStride}, sr[1] = {p.srcRepStride};                                                    \
    detail::hd_apply<T, 1>(#NAME, dst, s, detail::mask_bits<T>(mask), repeatTime, p.dstBlkStride,              \
                           p.dstRepStride, sb, sr, [](auto* v) { auto a = v[0]; return EXPR; }, loc);          \
  }
FORGE_EMU_UNARY(Exp, std::exp(a))
FORGE_EMU_UNARY(Ln, std::log(a))
FORGE_EMU_UNARY(Abs, a < 0 ? -a : a)
FORGE_EMU_UNARY(Reciprocal, decltype(a)(1) / a)
FORGE_EMU_UNARY(Sqrt, std::sqrt(a))
FORGE_EMU_UNARY(Rsqrt, decltype(a)(1) / std::sqrt(a))
FORGE_EMU_UNARY(Relu, a > 0 ? a : decltype(a)(0))
#undef FORGE_EMU_UNARY

// dst = src * scalar + dst
template <typename T, typename U = T, bool isSetMask = true>
__aicore__ inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const std::type_identity_t<U>& scalar,
                            const int32_t& count, forge_emu::Loc loc = forge_emu::Loc::current()) {
  detail::check_count(count, "Axpy", loc);
  forge_emu::Instr I = detail::vissue("Axpy", loc);
  detail::vcheck(src, 0, (uint64_t)count * sizeof(U), "Axpy", loc, &I, false);
  detail::vcheck(dst, 0, (uint64_t)count * sizeof(T), "Axpy", loc, &I, false);
  detail::vcheck(dst, 0, (uint64_t)count * sizeof(T), "Axpy", loc, &I, true);
  float b = (float)scalar;
  for (int32_t i = 0; i < count; ++i) dst.raw()[i] = T((float)src.raw()[i] * b + (float)dst.raw()[i]);
}

// ---- fill ---------------------------------------------------------------------------------------
template <typename T, bool isSetMask = true>
__aicore__ inline void Duplicate(const LocalTensor<T>& dst, const std::type_identity_t<T>& scalar, const int32_t& count,
                                 forge_emu::Loc loc = forge_emu::Loc::current()) {
  detail::check_count(count, "Duplicate", loc);
  forge_emu::Instr I = detail::vissue("Duplicate", loc);
  detail::vcheck(dst, 0, (uint64_t)count * sizeof(T), "Duplicate", loc, &I, true);
  T v = scalar;
  for (int32_t i = 0; i < count; ++i) dst.raw()[i] = v;
}
template <typename T, bool isSetMask = true>
__aicore__ inline void Duplicate(const LocalTensor<T>& dst, const std::type_identity_t<T>& scalar, uint64_t mask,
                                 const uint8_t repeatTime, const uint16_t dstBlockStride, const uint8_t dstRepeatStride,
                                 forge_emu::Loc loc = forge_emu::Loc::current()) {
  auto b = detail::Num<T>::ld(scalar);
  detail::hd_apply<T, 0>("Duplicate", dst, nullptr, detail::mask_count<T>(mask, "Duplicate", loc), repeatTime, dstBlockStride,
                         dstRepeatStride, nullptr, nullptr, [b](auto*) { return b; }, loc);
}

// ---- Cast with RoundMode (ascend.md §2.5.1) ------------------------------------------------------
namespace detail {
// All values of a 16-bit float format, ordered, so directed rounding can step between neighbours.
template <class H> inline int16_t ord16(H h) { return (h.bits & 0x8000) ? (int16_t)-(int)(h.bits & 0x7fff) : (int16_t)h.bits; }
template <class H> inline H unord16(int v) { return H::from_bits(v < 0 ? (uint16_t)(0x8000 | (uint16_t)(-v)) : (uint16_t)v); }
template <class H>
inline H round16(double x, RoundMode m) {
  H n = H((float)x);                                   // nearest even (float first, then 16-bit)
  if (std::isnan(x) || std::isinf(x) || m == RoundMode::CAST_NONE || m == RoundMode::CAST_RINT) return n;
  double v = (float)n;
  if (v == x) return n;
  H lo = v < x ? n : unord16<H>(ord16(n) - 1), hi = v > x ? n : unord16<H>(ord16(n) + 1);
  double dl = (float)lo, dh = (float)hi;
  switch (m) {
    case RoundMode::CAST_FLOOR: return lo;
    case RoundMode::CAST_CEIL: return hi;
    case RoundMode::CAST_TRUNC: return x > 0 ? lo : hi;
    case RoundMode::CAST_ROUND: {
      double a = x - dl, b = dh - x;
      if (a != b) return a < b ? lo : hi;
      return x > 0 ? hi : lo;                          // ties away from zero
    }
    case RoundMode::CAST_ODD: return (lo.bits & 1) ? lo : hi;
    default: return n;
  }
}
inline double round_int(double x, RoundMode m) {
  switch (m) {
    case RoundMode::CAST_FLOOR: return std::floor(x);
    case RoundMode::CAST_CEIL: return std::ceil(x);
    case RoundMode::CAST_TRUNC: return std::trunc(x);
    case RoundMode::CAST_ROUND: return std::round(x);
    default: return std::nearbyint(x);
  }
}
inline float round_f32(double x, RoundMode m) {
  float n = (float)x;
  if (m == RoundMode::CAST_NONE || m == RoundMode::CAST_RINT || (double)n == x || !std::isfinite(x)) return n;
  float lo = (double)n < x ? n : std::nextafter(n, -INFINITY), hi = (double)n > x ? n : std::nextafter(n, INFINITY);
  switch (m) {
    case RoundMode::CAST_FLOOR: return lo;
    case RoundMode::CAST_CEIL: return hi;
    case RoundMode::CAST_TRUNC: return x > 0 ? lo : hi;
    default: return n;
  }
}
template <typename D>
inline D cast_one(double x, RoundMode m) {
  if constexpr (std::is_same_v<D, half> || std::is_same_v<D, bfloat16_t>) return round16<D>(x, m);
  else if constexpr (std::is_same_v<D, float>) return round_f32(x, m);
  else {
    static_assert(std::is_integral_v<D>, "Cast to an unsupported type");
    if (std::isnan(x)) return D(0);
    double r = round_int(x, m);
    r = std::min<double>(std::max<double>(r, (double)std::numeric_limits<D>::min()), (double)std::numeric_limits<D>::max());
    return (D)r;
  }
}
template <typename S> inline double to_double(S v) {
  if constexpr (std::is_same_v<S, half> || std::is_same_v<S, bfloat16_t>) return (double)(float)v;
  else return (double)v;
}
}  // namespace detail

template <typename D, typename S>
__aicore__ inline void Cast(const LocalTensor<D>& dst, const LocalTensor<S>& src, const RoundMode& round, const uint32_t count,
                            forge_emu::Loc loc = forge_emu::Loc::current()) {
  forge_emu::Instr I = detail::vissue("Cast", loc);
  detail::vcheck(src, 0, (uint64_t)count * sizeof(S), "Cast", loc, &I, false);
  detail::vcheck(dst, 0, (uint64_t)count * sizeof(D), "Cast", loc, &I, true);
  std::vector<D> out(count);
  for (uint32_t i = 0; i < count; ++i) out[i] = detail::cast_one<D>(detail::to_double(src.raw()[i]), round);
  if (count) std::memcpy(dst.raw(), out.data(), (size_t)count * sizeof(D));
}

// ---- reductions (ascend.md §2.5.1 "Full reduction", §2.5.2) ----------------------------------------
namespace detail {
template <typename T>
inline void store_index(const LocalTensor<T>& dst, uint32_t at, uint32_t idx) {
  uint8_t* p = reinterpret_cast<uint8_t*>(dst.raw()) + (uint64_t)at * sizeof(T);
  if constexpr (sizeof(T) == 2) { uint16_t v = (uint16_t)idx; std::memcpy(p, &v, 2); }
  else { std::memcpy(p, &idx, 4); }
}

// One addition of a reduction in T: the float sum rounded to T, a half sum of two finite values past
// 65504 kept at ±65504 ("计算结果大于65504时结果保存为65504"; ReduceSum, CANN 8.5 atlasascendc_api_07_0078).
template <typename T>
inline T reduce_add(T a, T b) {
  float s = (float)a + (float)b;
  if constexpr (std::is_same_v<T, half>)
    if (std::isfinite((float)a) && std::isfinite((float)b)) s = std::min(65504.f, std::max(-65504.f, s));
  return T(s);
}
// A repeat's (or a block's) sum as the vector unit forms it: adjacent pairs added, then pairs of
// those, down to one ("二叉树", ReduceSum atlasascendc_api_07_0078 and BlockReduceSum
// atlasascendc_api_07_0084); `lane` holds a power of two of values, masked-out ones as 0.
template <typename T>
inline T tree_sum(std::vector<T>& lane) {
  for (size_t w = lane.size() / 2; w >= 1; w /= 2)
    for (size_t i = 0; i < w; ++i) lane[i] = reduce_add(lane[2 * i], lane[2 * i + 1]);
  return lane[0];
}
}  // namespace detail

template <typename T>
__aicore__ inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                                 const int32_t count, forge_emu::Loc loc = forge_emu::Loc::current()) {
  detail::check_count(count, "ReduceSum", loc);
  forge_emu::Instr I = detail::vissue("ReduceSum", loc);
  detail::vcheck(src, 0, (uint64_t)count * sizeof(T), "ReduceSum", loc, &I, false);
  detail::vcheck(dst, 0, sizeof(T), "ReduceSum", loc, &I, true);
  detail::vcheck(sharedTmpBuffer, 0, 0, "ReduceSum", loc);
  // The count form on Atlas A2 adds "way two": a binary tree of adjacent pairs within each 256 B
  // repeat, the repeats' sums one after another, every addition in T; its sharedTmpBuffer, of any
  // size, keeps its values ("方式二"; ReduceSum, CANN 8.5 atlasascendc_api_07_0078).
  const int32_t per = 256 / (int32_t)sizeof(T);
  std::vector<T> lane(per);
  T acc = T(0.f);
  for (int32_t r0 = 0; r0 < count; r0 += per) {
    const int32_t k = std::min(per, count - r0);
    for (int32_t i = 0; i < per; ++i) lane[i] = i < k ? src.raw()[r0 + i] : T(0.f);
    const T sum = detail::tree_sum(lane);
    acc = r0 == 0 ? sum : detail::reduce_add(acc, sum);
  }
  dst.raw()[0] = acc;
}
#define FORGE_EMU_REDUCE_EXT(NAME, BETTER)                                                                       \
  template <typename T>                                                                                         \
  __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer, \
                              const int32_t count, bool calIndex = false, forge_emu::Loc loc = forge_emu::Loc::current()) { \
    detail::check_count(count, #NAME, loc);                                                                     \
    if (count < 1) forge_emu::Diag("bad_api").kv("op", #NAME).msg("count must be >= 1").at(loc).fail(forge_emu::EXIT_BAD_API); \
    forge_emu::Instr I = detail::vissue(#NAME, loc);                                                            \
    detail::vcheck(src, 0, (uint64_t)count * sizeof(T), #NAME, loc, &I, false);                                 \
    detail::vcheck(dst, 0, (calIndex ? 2 : 1) * sizeof(T), #NAME, loc, &I, true);                               \
    detail::vcheck(sharedTmpBuffer, 0, 0, #NAME, loc);                                                          \
    float best = (float)src.raw()[0]; uint32_t bi = 0;                                                          \
    for (int32_t i = 1; i < count; ++i) { float v = (float)src.raw()[i]; if (v BETTER best) { best = v; bi = i; } } \
    dst.raw()[0] = T(best);                                                                                     \
    if (calIndex) detail::store_index(dst, 1, bi);                                                              \
  }
FORGE_EMU_REDUCE_EXT(ReduceMax, >)
FORGE_EMU_REDUCE_EXT(ReduceMin, <)
#undef FORGE_EMU_REDUCE_EXT

namespace detail {
// One reduction per 256 B repeat (WholeReduce*) or per 32 B block (BlockReduce*). dstRepStride counts
// one repeat's output (1 value, 2 for value+index, 8 for BlockReduce).
enum class Red { SUM, MAX, MIN };
template <typename T>
inline void reduce_hd(const char* op, const LocalTensor<T>& dst, const LocalTensor<T>& src, Mask mask, int repeat,
                      int dstRepStride, int srcBlkStride, int srcRepStride, Red kind, bool per_block,
                      ReduceOrder order, const Loc& loc) {
  const int per = 256 / (int)sizeof(T), epb = 32 / (int)sizeof(T);
  bool with_index = !per_block && kind != Red::SUM && order != ReduceOrder::ORDER_ONLY_VALUE;
  int out_len = per_block ? 8 : (with_index ? 2 : 1);
  uint64_t shi = 0;
  for (int r = 0; r < repeat; ++r)
    for (int e = 0; e < per; ++e) if (mask.test(e)) shi = std::max(shi, hd_off<T>(r, e, srcBlkStride, srcRepStride) + sizeof(T));
  vcheck(src, 0, shi, op, loc);
  vcheck(dst, 0, repeat ? ((uint64_t)(repeat - 1) * dstRepStride * out_len + out_len) * sizeof(T) : 0, op, loc);
  forge_emu::Instr I = vissue(op, loc);
  std::vector<std::pair<uint64_t, float>> vals;
  std::vector<std::pair<uint64_t, uint32_t>> idxs;
  for (int r = 0; r < repeat; ++r) {
    int groups = per_block ? 8 : 1;
    for (int g = 0; g < groups; ++g) {
      float acc = kind == Red::SUM ? 0.f : NAN; uint32_t bi = 0; bool any = false;
      int e0 = per_block ? g * epb : 0, e1 = per_block ? (g + 1) * epb : per;
      std::vector<T> lane(kind == Red::SUM ? e1 - e0 : 0, T(0.f));
      for (int e = e0; e < e1; ++e) {
        if (!mask.test(e)) continue;
        src.check_range(hd_off<T>(r, e, srcBlkStride, srcRepStride), sizeof(T), op, loc, &I, false);
        T x; std::memcpy(&x, reinterpret_cast<const uint8_t*>(src.raw()) + hd_off<T>(r, e, srcBlkStride, srcRepStride), sizeof(T));
        float v = (float)x;
        if (kind == Red::SUM) lane[e - e0] = x;
        else if (!any || (kind == Red::MAX ? v > acc : v < acc)) { acc = v; bi = (uint32_t)e; }
        any = true;
      }
      if (kind == Red::SUM) acc = (float)tree_sum(lane);
      else if (!any) acc = 0.f;
      uint64_t at = (uint64_t)r * dstRepStride * out_len;
      if (per_block) vals.push_back({at + g, acc});
      else if (!with_index) vals.push_back({at, acc});
      else if (order == ReduceOrder::ORDER_INDEX_VALUE) { idxs.push_back({at, bi}); vals.push_back({at + 1, acc}); }
      else if (order == ReduceOrder::ORDER_ONLY_INDEX) { idxs.push_back({at, bi}); }
      else { vals.push_back({at, acc}); idxs.push_back({at + 1, bi}); }
    }
  }
  for (auto& v : vals) { dst.check_range(v.first * sizeof(T), sizeof(T), op, loc, &I, true); dst.raw()[v.first] = T(v.second); }
  for (auto& i : idxs) { dst.check_range(i.first * sizeof(T), sizeof(T), op, loc, &I, true); store_index(dst, (uint32_t)i.first, i.second); }
}
}  // namespace detail

#define FORGE_EMU_WHOLE(NAME, KIND, HAS_ORDER)                                                                  \
  template <typename T, bool isSetMask = true>                                                                  \
  __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,          \
                              const int32_t repeatTimes, const int32_t dstRepStride, const int32_t srcBlkStride,  \
                              const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,    \
                              forge_emu::Loc loc = forge_emu::Loc::current()) {                                 \
    detail::reduce_hd(#NAME, dst, src, detail::mask_count<T>(mask, #NAME, loc), repeatTimes, dstRepStride, srcBlkStride, \
                      srcRepStride, detail::Red::KIND, false, HAS_ORDER ? order : ReduceOrder::ORDER_ONLY_VALUE, loc); \
  }                                                                                                             \
  template <typename T, bool isSetMask = true>                                                                  \
  __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],       \
                              const int32_t repeatTimes, const int32_t dstRepStride, const int32_t srcBlkStride,  \
                              const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,    \
                              forge_emu::Loc loc = forge_emu::Loc::current()) {                                 \
    detail::reduce_hd(#NAME, dst, src, detail::mask_bits<T>(mask), repeatTimes, dstRepStride, srcBlkStride,      \
                      srcRepStride, detail::Red::KIND, false, HAS_ORDER ? order : ReduceOrder::ORDER_ONLY_VALUE, loc); \
  }
FORGE_EMU_WHOLE(WholeReduceSum, SUM, false)
FORGE_EMU_WHOLE(WholeReduceMax, MAX, true)
FORGE_EMU_WHOLE(WholeReduceMin, MIN, true)
#undef FORGE_EMU_WHOLE

#define FORGE_EMU_BLOCK(NAME, KIND)                                                                             \
  template <typename T, bool isSetMask = true>                                                                  \
  __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTimes,   \
                              const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,        \
                              const int32_t srcRepStride, forge_emu::Loc loc = forge_emu::Loc::current()) {      \
    detail::reduce_hd(#NAME, dst, src, detail::mask_count<T>(mask, #NAME, loc), repeatTimes, dstRepStride, srcBlkStride, \
                      srcRepStride, detail::Red::KIND, true, ReduceOrder::ORDER_ONLY_VALUE, loc);                \
  }                                                                                                             \
  template <typename T, bool isSetMask = true>                                                                  \
  __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTimes,   \
                              const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,     \
                              const int32_t srcRepStride, forge_emu::Loc loc = forge_emu::Loc::current()) {      \
    detail::reduce_hd(#NAME, dst, src, detail::mask_bits<T>(mask), repeatTimes, dstRepStride, srcBlkStride,      \
                      srcRepStride, detail::Red::KIND, true, ReduceOrder::ORDER_ONLY_VALUE, loc);                \
  }
FORGE_EMU_BLOCK(BlockReduceSum, SUM)
FORGE_EMU_BLOCK(BlockReduceMax, MAX)
FORGE_EMU_BLOCK(BlockReduceMin, MIN)
#undef FORGE_EMU_BLOCK

// Brcb: each of 8 source elements per repeat fills one 32 B block of dst.
template <typename T>
__aicore__ inline void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint8_t repeatTime,
                            const BrcbRepeatParams& p, forge_emu::Loc loc = forge_emu::Loc::current()) {
  const int epb = 32 / (int)sizeof(T);
  forge_emu::Instr I = detail::vissue("Brcb", loc);
  detail::vcheck(src, 0, (uint64_t)repeatTime * 8 * sizeof(T), "Brcb", loc, &I, false);
  uint64_t hi = repeatTime ? ((uint64_t)(repeatTime - 1) * p.dstRepStride + 7ull * p.dstBlkStride + 1) * 32 : 0;
  detail::vcheck(dst, 0, hi, "Brcb", loc);
  std::vector<T> in(src.raw(), src.raw() + (size_t)repeatTime * 8);
  for (int r = 0; r < repeatTime; ++r)
    for (int j = 0; j < 8; ++j) {
      uint64_t at = ((uint64_t)r * p.dstRepStride + (uint64_t)j * p.dstBlkStride) * 32;
      dst.check_range(at, 32, "Brcb", loc, &I, true);
      T* blk = reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(dst.raw()) + at);
      for (int e = 0; e < epb; ++e) blk[e] = in[(size_t)r * 8 + j];
    }
}

// Gather (count form): dst[i] = the element of src at byte offset srcBaseAddr + srcOffset[i] (a
// uint32 byte offset from src's start, a multiple of the element size). A2/A3 types: 16- and 32-bit.
template <typename T>
__aicore__ inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                              const uint32_t srcBaseAddr, const uint32_t count,
                              forge_emu::Loc loc = forge_emu::Loc::current()) {
  using forge_emu::Diag;
  forge_emu::Instr I = detail::vissue("Gather", loc);
  detail::vcheck(srcOffset, 0, (uint64_t)count * sizeof(uint32_t), "Gather", loc, &I, false);
  detail::vcheck(src, 0, 0, "Gather", loc);
  std::vector<T> out(count);
  for (uint32_t i = 0; i < count; ++i) {
    uint64_t at = (uint64_t)srcBaseAddr + srcOffset.raw()[i];
    if (at % sizeof(T))
      Diag("misaligned").kv("op", "Gather").kv("index", (long long)i).kv("offset", (long long)at)
          .msg("Gather: a source offset is not a multiple of the element size").at(loc).fail(forge_emu::EXIT_MISALIGNED);
    src.check_range(at, sizeof(T), "Gather", loc, &I, false);
    std::memcpy(&out[i], reinterpret_cast<const uint8_t*>(src.raw()) + at, sizeof(T));
  }
  detail::vcheck(dst, 0, (uint64_t)count * sizeof(T), "Gather", loc, &I, true);
  if (count) std::memcpy(dst.raw(), out.data(), (size_t)count * sizeof(T));
}

// ---- compare / select (bit masks, one bit per element, LSB first) --------------------------------------
namespace detail {
inline bool cmp(float a, float b, CMPMODE m) {
  switch (m) {
    case CMPMODE::LT: return a < b; case CMPMODE::GT: return a > b; case CMPMODE::EQ: return a == b;
    case CMPMODE::LE: return a <= b; case CMPMODE::GE: return a >= b; default: return a != b;
  }
}
template <typename U, typename T, class F>
inline void compare_impl(const char* op, const LocalTensor<U>& dst, const LocalTensor<T>& src0, uint32_t count, F other,
                         CMPMODE m, const Loc& loc, const forge_emu::Instr& I) {
  vcheck(src0, 0, (uint64_t)count * sizeof(T), op, loc, &I, false);
  vcheck(dst, 0, ((uint64_t)count + 7) / 8, op, loc, &I, true);
  uint8_t* d = reinterpret_cast<uint8_t*>(dst.raw());
  std::memset(d, 0, (count + 7) / 8);
  for (uint32_t i = 0; i < count; ++i) if (cmp((float)src0.raw()[i], other(i), m)) d[i / 8] |= (uint8_t)(1u << (i % 8));
}
}  // namespace detail

template <typename T, typename U>
__aicore__ inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                               uint32_t count, forge_emu::Loc loc = forge_emu::Loc::current()) {
  forge_emu::Instr I = detail::vissue("Compare", loc);
  detail::vcheck(src1, 0, (uint64_t)count * sizeof(T), "Compare", loc, &I, false);
  detail::compare_impl("Compare", dst, src0, count, [&](uint32_t i) { return (float)src1.raw()[i]; }, cmpMode, loc, I);
}
template <typename T, typename U>
__aicore__ inline void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const std::type_identity_t<T> scalar,
                                     CMPMODE cmpMode, uint32_t count, forge_emu::Loc loc = forge_emu::Loc::current()) {
  float s = (float)scalar;
  forge_emu::Instr I = detail::vissue("CompareScalar", loc);
  detail::compare_impl("CompareScalar", dst, src0, count, [s](uint32_t) { return s; }, cmpMode, loc, I);
}
template <typename T, typename U>
__aicore__ inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                              const LocalTensor<T>& src1, SELMODE selMode, uint32_t count,
                              forge_emu::Loc loc = forge_emu::Loc::current()) {
  (void)selMode;
  forge_emu::Instr I = detail::vissue("Select", loc);
  detail::vcheck(src0, 0, (uint64_t)count * sizeof(T), "Select", loc, &I, false);
  detail::vcheck(src1, 0, (uint64_t)count * sizeof(T), "Select", loc, &I, false);
  detail::vcheck(selMask, 0, ((uint64_t)count + 7) / 8, "Select", loc, &I, false);
  detail::vcheck(dst, 0, (uint64_t)count * sizeof(T), "Select", loc, &I, true);
  const uint8_t* m = reinterpret_cast<const uint8_t*>(selMask.raw());
  std::vector<T> out(count);
  for (uint32_t i = 0; i < count; ++i) out[i] = ((m[i / 8] >> (i % 8)) & 1) ? src0.raw()[i] : src1.raw()[i];
  if (count) std::memcpy(dst.raw(), out.data(), (size_t)count * sizeof(T));
}
template <typename T, typename U>
__aicore__ inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                              std::type_identity_t<T> scalar, SELMODE selMode, uint32_t count,
                              forge_emu::Loc loc = forge_emu::Loc::current()) {
  (void)selMode;
  forge_emu::Instr I = detail::vissue("Select", loc);
  detail::vcheck(src0, 0, (uint64_t)count * sizeof(T), "Select", loc, &I, false);
  detail::vcheck(selMask, 0, ((uint64_t)count + 7) / 8, "Select", loc, &I, false);
  detail::vcheck(dst, 0, (uint64_t)count * sizeof(T), "Select", loc, &I, true);
  const uint8_t* m = reinterpret_cast<const uint8_t*>(selMask.raw());
  std::vector<T> out(count);
  for (uint32_t i = 0; i < count; ++i) out[i] = ((m[i / 8] >> (i % 8)) & 1) ? src0.raw()[i] : scalar;
  if (count) std::memcpy(dst.raw(), out.data(), (size_t)count * sizeof(T));
}

}  // namespace AscendC
