// forge Ascend C CPU emulator: the basic cube API (ascend.md §2.4.4, formats §1.3).
//
// Data formats, as on the hardware (ascend.md §1.3 "Recommended formats"): L1 holds NZ, L0A ZZ,
// L0B ZN, L0C NZ. With C0 = 32 B / sizeof(T) (16 for fp16) and 512 B fractals:
//   L1  NZ  [rows, cols]: element (r, c) at (c / C0) * dstNzC0Stride * C0 + r * C0 + c % C0
//   L0A ZZ  [m, k]: fractal (m/16, k/C0) at index (m/16) * K1 + k/C0, inside row-major (16 x C0)
//   L0B ZN  [k, n]: fractal (k/C0, n/16) at index (k/C0) * N1 + n/16, inside column-major: (k, n) at n*C0 + k
//   L0C NZ  [m, n] fp32: fractal (m/16, n/16) at index (n/16) * M1 + m/16, inside row-major 16 x 16
// so A (row-major [M, K]) reaches ZZ by one LoadData per 16-row block (srcStride = M1), and a
// row-major B [K, N] reaches ZN by LoadData with ifTranspose per C0-row block, while Kᵀ of a
// row-major K [N, K] is ZN already (sequential LoadData, no transpose).
#pragma once
#include "tensor.h"
#include "copy.h"

namespace AscendC {

struct Nd2NzParams {
  uint16_t ndNum = 1, nValue = 0, dValue = 0, srcNdMatrixStride = 0, srcDValue = 0;
  uint16_t dstNzC0Stride = 0, dstNzNStride = 1, dstNzMatrixStride = 0;
};
struct LoadData2DParams {
  uint16_t startIndex = 0;
  uint8_t repeatTimes = 0;
  uint16_t srcStride = 0;
  uint8_t sid = 0;
  uint16_t dstGap = 0;
  bool ifTranspose = false;
  uint8_t addrMode = 0;
};
struct MmadParams {
  uint16_t m = 0, n = 0, k = 0;
  bool isBias = false;
  int32_t fmOffset = 0;
  bool enSsparse = false, enWinogradA = false, enWinogradB = false;
  uint8_t unitFlag = 0;
  bool kDirectionAlign = false;
  bool cmatrixSource = false;
  bool cmatrixInitVal = true;
};
enum class QuantMode_t : uint8_t { NoQuant = 0, F322F16, F322BF16, DEQF16, VDEQF16, QF322B8_PRE, VQF322B8_PRE, REQ8, VREQ8 };
using QuantMode = QuantMode_t;
struct FixpipeParamsV220 {
  uint16_t nSize = 0, mSize = 0, srcStride = 0;
  uint32_t dstStride = 0;
  QuantMode_t quantPre = QuantMode_t::NoQuant;
  uint64_t deqScalar = 0;
  uint16_t ndNum = 1, srcNdStride = 0, dstNdStride = 0;
  bool reluEn = false;
  uint8_t unitFlag = 0;
  bool isChannelSplit = false;
};
enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };
struct FixpipeConfig { CO2Layout format = CO2Layout::ROW_MAJOR; };
constexpr FixpipeConfig CFG_NZ{CO2Layout::NZ};
constexpr FixpipeConfig CFG_ROW_MAJOR{CO2Layout::ROW_MAJOR};

namespace detail {
inline void need_aic(const char* op, const forge_emu::Loc& loc) {
  using namespace forge_emu;
  if (cur().type != AscendCoreType::AIC) Diag("bad_api").kv("op", op).msg("cube instruction on an AIV (split mode, ascend.md §1.1)").at(loc).fail(EXIT_BAD_API);
}
template <typename T>
inline void need_mem(const LocalTensor<T>& t, int mem, const char* op, const char* what, const forge_emu::Loc& loc) {
  using namespace forge_emu;
  if (t.ref_.core < 0) Diag("bad_api").kv("op", op).msg(std::string(what) + " used before it was obtained from AllocTensor/DeQue/Get").at(loc).fail(EXIT_BAD_API);
  if (t.ref_.mem != mem)
    Diag("bad_api").kv("op", op).kv("operand", what).kv("memory", mem_name(t.ref_.mem)).kv("expected", mem_name(mem))
        .msg(std::string(op) + ": " + what + " must be in " + mem_name(mem)).at(loc).fail(EXIT_BAD_API);
  uint32_t a = mem_align(mem);
  if (t.ref_.off % a)
    Diag("misaligned").kv("op", op).kv("memory", mem_name(mem)).kv("address", (long long)t.ref_.off).kv("align", (long long)a)
        .msg(std::string(op) + ": " + mem_name(mem) + " address " + std::to_string(t.ref_.off) + " is not " + std::to_string(a) + "-byte aligned (ascend.md §1.3)")
        .at(loc).fail(EXIT_MISALIGNED);
}
}  // namespace detail

// GM (ND) -> L1 (NZ), ascend.md §2.4.4 "GM->L1: DataCopy, with an on-the-fly ND2NZ option".
// The tail of a partial C0 group is written with zeros.
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p,
                                forge_emu::Loc loc = forge_emu::Loc::current()) {
  const char* op = "DataCopy(GM->L1, Nd2NzParams)";
  detail::need_aic(op, loc);
  detail::need_mem(dst, forge_emu::MEM_L1, op, "dst", loc);
  const uint32_t c0 = 32 / sizeof(T);
  uint32_t groups = (p.dValue + c0 - 1) / c0;
  if (p.nValue > p.dstNzC0Stride && groups > 1)
    forge_emu::Diag("bad_api").kv("op", op).kv("nValue", (int)p.nValue).kv("dstNzC0Stride", (int)p.dstNzC0Stride)
        .msg("dstNzC0Stride (rows per C0 column group) is smaller than nValue: column groups overlap").at(loc).fail(forge_emu::EXIT_BAD_API);
  forge_emu::Instr I = forge_emu::issue(forge_emu::P_MTE2, op, loc);
  for (uint32_t m = 0; m < p.ndNum; ++m)
    for (uint32_t r = 0; r < p.nValue; ++r) {
      const T* row = src.GetPhyAddr() + (uint64_t)m * p.srcNdMatrixStride + (uint64_t)r * p.srcDValue;
      forge_emu::check_gm(row, (uint64_t)p.dValue * sizeof(T), op, loc);
      forge_emu::touch_gm(I, op, row, (uint64_t)p.dValue * sizeof(T), false, loc);
      for (uint32_t g = 0; g < groups; ++g) {
        uint64_t at = (uint64_t)m * p.dstNzMatrixStride + ((uint64_t)g * p.dstNzC0Stride + (uint64_t)r * p.dstNzNStride) * c0;
        dst.check_range(at * sizeof(T), 32, op, loc, &I, true);
        T* d = dst.raw() + at;
        for (uint32_t e = 0; e < c0; ++e) {
          uint32_t c = g * c0 + e;
          d[e] = c < p.dValue ? row[c] : T(0);
        }
      }
    }
}

// L1 -> L0A / L0B, one 512 B fractal per repeat (ascend.md §2.4.4).
template <typename T>
__aicore__ inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p,
                                forge_emu::Loc loc = forge_emu::Loc::current()) {
  using namespace forge_emu;
  const char* op = "LoadData(L1->L0)";
  detail::need_aic(op, loc);
  detail::need_mem(src, MEM_L1, op, "src", loc);
  if (dst.ref_.mem != MEM_L0A && dst.ref_.mem != MEM_L0B)
    Diag("bad_api").kv("op", op).kv("memory", dst.ref_.core < 0 ? "?" : mem_name(dst.ref_.mem)).msg("LoadData destination must be L0A (A2) or L0B (B2)").at(loc).fail(EXIT_BAD_API);
  detail::need_mem(dst, dst.ref_.mem, op, "dst", loc);
  constexpr uint32_t FR = 512;                 // fractal bytes (ascend.md §1.3)
  const uint32_t c0 = 32 / sizeof(T), fe = FR / sizeof(T);
  Instr I = issue(P_MTE1, op, loc);
  for (uint32_t r = 0; r < p.repeatTimes; ++r) {
    uint64_t s = ((uint64_t)p.startIndex + (uint64_t)r * p.srcStride) * FR;
    uint64_t d = (uint64_t)r * (1 + p.dstGap) * FR;
    src.check_range(s, FR, op, loc, &I, false);
    dst.check_range(d, FR, op, loc, &I, true);
    const T* sp = reinterpret_cast<const T*>(reinterpret_cast<const uint8_t*>(src.raw()) + s);
    T* dp = reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(dst.raw()) + d);
    if (!p.ifTranspose) { std::memcpy(dp, sp, FR); continue; }
    if (sizeof(T) != 2)
      Diag("bad_api").kv("op", op).msg("ifTranspose is emulated for 16-bit types only").at(loc).fail(EXIT_BAD_API);
    T tmp[256];
    for (uint32_t i = 0; i < 16; ++i)
      for (uint32_t j = 0; j < c0; ++j) tmp[j * 16 + i] = sp[i * c0 + j];
    std::memcpy(dp, tmp, (size_t)fe * sizeof(T));
  }
}

// L0C(fp32, NZ) = L0A(ZZ) x L0B(ZN) [+ L0C], ascend.md §2.4.4 / §5.1 "M (Cube)".
template <typename C, typename A, typename B>
__aicore__ inline void Mmad(const LocalTensor<C>& dst, const LocalTensor<A>& a, const LocalTensor<B>& b, const MmadParams& p,
                            forge_emu::Loc loc = forge_emu::Loc::current()) {
  using namespace forge_emu;
  const char* op = "Mmad";
  detail::need_aic(op, loc);
  detail::need_mem(a, MEM_L0A, op, "a", loc);
  detail::need_mem(b, MEM_L0B, op, "b", loc);
  detail::need_mem(dst, MEM_L0C, op, "dst", loc);
  const uint32_t c0 = 32 / sizeof(A);
  uint32_t M1 = (p.m + 15) / 16, N1 = (p.n + 15) / 16, K1 = (p.k + c0 - 1) / c0;
  Instr I = issue(P_M, op, loc);
  a.check_range(0, (uint64_t)M1 * K1 * 512, op, loc, &I, false);
  b.check_range(0, (uint64_t)K1 * N1 * 512, op, loc, &I, false);
  if (!p.cmatrixInitVal) dst.check_range(0, (uint64_t)M1 * N1 * 256 * sizeof(C), op, loc, &I, false);
  dst.check_range(0, (uint64_t)M1 * N1 * 256 * sizeof(C), op, loc, &I, true);
  const A* ap = a.raw();
  const B* bp = b.raw();
  C* cp = dst.raw();
  for (uint32_t i = 0; i < M1 * 16; ++i)
    for (uint32_t j = 0; j < N1 * 16; ++j) {
      float s = 0.f;
      for (uint32_t k = 0; k < p.k; ++k) {
        float av = (float)ap[((i / 16) * K1 + k / c0) * (16 * c0) + (i % 16) * c0 + k % c0];
        float bv = (float)bp[((k / c0) * N1 + j / 16) * (16 * c0) + (j % 16) * c0 + k % c0];
        s += av * bv;
      }
      C& out = cp[((j / 16) * M1 + i / 16) * 256 + (i % 16) * 16 + j % 16];
      out = p.cmatrixInitVal ? C(s) : C((float)out + s);
    }
}

// L0C (NZ, fp32) -> GM: NZ2ND when config is CFG_ROW_MAJOR, dtype conversion by DstT (ascend.md §2.4.4).
template <typename DstT, typename SrcT, const FixpipeConfig& config = CFG_ROW_MAJOR>
__aicore__ inline void Fixpipe(const GlobalTensor<DstT>& dst, const LocalTensor<SrcT>& src, const FixpipeParamsV220& p,
                               forge_emu::Loc loc = forge_emu::Loc::current()) {
  using namespace forge_emu;
  const char* op = "Fixpipe(L0C->GM)";
  detail::need_aic(op, loc);
  detail::need_mem(src, MEM_L0C, op, "src", loc);
  uint32_t groups = (p.nSize + 15) / 16;
  Instr I = issue(P_FIX, op, loc);
  src.check_range(0, ((uint64_t)(groups ? groups - 1 : 0) * p.srcStride * 16 + (uint64_t)p.mSize * 16) * sizeof(SrcT), op, loc, &I, false);
  for (uint32_t i = 0; i < p.mSize; ++i)
    for (uint32_t j = 0; j < p.nSize; ++j) {
      float v = (float)src.raw()[(uint64_t)(j / 16) * p.srcStride * 16 + (uint64_t)i * 16 + j % 16];
      if (p.reluEn && v < 0) v = 0;
      uint64_t at = config.format == CO2Layout::ROW_MAJOR ? (uint64_t)i * p.dstStride + j
                                                          : (uint64_t)(j / 16) * p.dstStride * 16 + (uint64_t)i * 16 + j % 16;
      DstT* d = dst.GetPhyAddr() + at;
      check_gm(d, sizeof(DstT), op, loc);
      touch_gm(I, op, d, sizeof(DstT), true, loc);
      *d = DstT(v);
    }
}

}  // namespace AscendC
