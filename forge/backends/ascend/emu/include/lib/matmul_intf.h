// forge Ascend C CPU emulator: the Matmul high-level API (ascend.md §2.6).
//
// The emulator computes C = A·B (+bias) directly on the calling block with fp32 accumulation,
// wherever it is called (on the AIV in MIX mode the real API messages the AIC; the result is the
// same). Init checks the TCubeTiling legality rules of ascend.md §2.6 against the L0A/L0B/L0C/L1
// sizes and reports a violation (with numbers) like any other over-allocation.
// Layouts (ND): A is [M, Ka] row-major with row length Ka (transposed: [Ka, M], row length M);
// B is [Kb, N] (transposed: [N, Kb]); C is [M, N] with row length N. M/N/Ka/Kb come from the
// tiling (or SetOrgShape); the block's own sizes from singleCoreM/N/K (or SetSingleShape/SetTail).
#pragma once
#include "../kernel_operator.h"

// TCubeTiling fields (ascend.md §2.6 "TCubeTiling fields"), all int32, in this order.
struct TCubeTiling {
  int32_t usedCoreNum = 0;
  int32_t M = 0, N = 0, Ka = 0, Kb = 0;
  int32_t singleCoreM = 0, singleCoreN = 0, singleCoreK = 0;
  int32_t baseM = 0, baseN = 0, baseK = 0;
  int32_t depthA1 = 0, depthB1 = 0;
  int32_t stepM = 0, stepN = 0, isBias = 0, transLength = 0, iterateOrder = 0;
  int32_t shareMode = 0, shareL1Size = 0, shareL0CSize = 0, shareUbSize = 0;
  int32_t batchM = 0, batchN = 0, singleBatchM = 0, singleBatchN = 0;
  int32_t stepKa = 0, stepKb = 0, depthAL1CacheUB = 0, depthBL1CacheUB = 0;
  int32_t dbL0A = 0, dbL0B = 0, dbL0C = 0;
  int32_t reserved = 0;
};
namespace AscendC { namespace tiling { using ::TCubeTiling; } }

namespace AscendC {

enum class CubeFormat : uint8_t { ND = 0, NZ, ZN, ZZ, NN, ND_ALIGN, SCALAR, VECTOR };
enum class LayoutMode : uint8_t { NONE = 0, BSNGD, SBNGD, BNGS1S2, NORMAL };
enum class IterateOrder : uint8_t { ORDER_M = 0, ORDER_N, UNDEF };

struct MatmulConfig {
  bool doNorm = true;
  bool doBasicBlock = false;
  bool doMultiDataLoad = false;
  uint32_t basicM = 0, basicN = 0, basicK = 0;
  bool intrinsicsCheck = false;
  bool isNBatch = false;
  bool enVecND2NZ = false;
  bool doSpecialBasicBlock = false;
  uint32_t doMTE2Preload = 0;
  bool enableMixDualMaster = false;
};
constexpr MatmulConfig CFG_NORM{};
constexpr MatmulConfig CFG_MDL{false, false, true};
constexpr MatmulConfig CFG_IBSHARE_NORM{};
constexpr inline MatmulConfig GetNormalConfig(bool intrinsicsLimit = false, bool batchLoop = false, bool isVecND2NZ = false) {
  MatmulConfig c{}; c.intrinsicsCheck = intrinsicsLimit; c.isNBatch = batchLoop; c.enVecND2NZ = isVecND2NZ; return c;
}
constexpr inline MatmulConfig GetMDLConfig(bool intrinsicsLimit = false, bool batchLoop = false, uint32_t doMTE2Preload = 0) {
  MatmulConfig c{false, false, true}; c.intrinsicsCheck = intrinsicsLimit; c.isNBatch = batchLoop; c.doMTE2Preload = doMTE2Preload; return c;
}

template <TPosition POSITION, CubeFormat FORMAT, typename TYPE, bool ISTRANS = false, LayoutMode LAYOUT = LayoutMode::NONE, bool IBSHARE = false>
struct MatmulType {
  constexpr static TPosition pos = POSITION;
  constexpr static CubeFormat format = FORMAT;
  using T = TYPE;
  constexpr static bool isTrans = ISTRANS;
  constexpr static LayoutMode layout = LAYOUT;
  constexpr static bool ibShare = IBSHARE;
};

template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE = C_TYPE, const auto& MM_CFG = CFG_NORM, class MM_CB = void>
class Matmul {
  using TA = typename A_TYPE::T;
  using TB = typename B_TYPE::T;
  using TC = typename C_TYPE::T;
  using TBias = typename BIAS_TYPE::T;

 public:
  __aicore__ inline void Init(const TCubeTiling* tiling, TPipe* pipe = nullptr, forge_emu::Loc loc = forge_emu::Loc::current()) {
    (void)pipe;
    if (!tiling) forge_emu::Diag("bad_api").kv("op", "Matmul::Init").msg("null TCubeTiling").at(loc).fail(forge_emu::EXIT_BAD_API);
    t_ = *tiling;
    check_tiling(loc);
    M_ = t_.M; N_ = t_.N; Ka_ = t_.Ka; Kb_ = t_.Kb;
    sM_ = t_.singleCoreM ? t_.singleCoreM : t_.M;
    sN_ = t_.singleCoreN ? t_.singleCoreN : t_.N;
    sK_ = t_.singleCoreK ? t_.singleCoreK : t_.Ka;
    inited_ = true;
  }
  __aicore__ inline void SetOrgShape(int orgM, int orgN, int orgK) { M_ = orgM; N_ = orgN; Ka_ = Kb_ = orgK; }
  __aicore__ inline void SetOrgShape(int orgM, int orgN, int orgKa, int orgKb, int orgKc = 0) { (void)orgKc; M_ = orgM; N_ = orgN; Ka_ = orgKa; Kb_ = orgKb; }
  __aicore__ inline void SetSingleShape(int m, int n, int k) { sM_ = m; sN_ = n; sK_ = k; }
  __aicore__ inline void SetTail(int tailM = -1, int tailN = -1, int tailK = -1) {
    if (tailM > 0) sM_ = tailM;
    if (tailN > 0) sN_ = tailN;
    if (tailK > 0) sK_ = tailK;
  }
  __aicore__ inline void SetTensorA(const GlobalTensor<TA>& gm, bool isTransposeA = false) { aG_ = gm.GetPhyAddr(); aL_ = nullptr; transA_ = isTransposeA || A_TYPE::isTrans; }
  __aicore__ inline void SetTensorB(const GlobalTensor<TB>& gm, bool isTransposeB = false) { bG_ = gm.GetPhyAddr(); bL_ = nullptr; transB_ = isTransposeB || B_TYPE::isTrans; }
  __aicore__ inline void SetTensorA(const LocalTensor<TA>& l, bool isTransposeA = false) { aL_ = l.raw(); aG_ = nullptr; transA_ = isTransposeA || A_TYPE::isTrans; }
  __aicore__ inline void SetTensorB(const LocalTensor<TB>& l, bool isTransposeB = false) { bL_ = l.raw(); bG_ = nullptr; transB_ = isTransposeB || B_TYPE::isTrans; }
  __aicore__ inline void SetBias(const GlobalTensor<TBias>& gm) { bias_ = gm.GetPhyAddr(); biasG_ = true; }
  __aicore__ inline void SetBias(const LocalTensor<TBias>& l) { bias_ = l.raw(); biasG_ = false; }
  __aicore__ inline void DisableBias() { bias_ = nullptr; }
  __aicore__ inline void ClearBias() { bias_ = nullptr; }

  // Whole single-core result into GM ([sM, sN], row length N) or into a local tensor ([sM, sN]).
  template <bool sync = true>
  __aicore__ inline void IterateAll(const GlobalTensor<TC>& gm, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                                    bool waitIterateAll = false, bool fakeMsg = false, forge_emu::Loc loc = forge_emu::Loc::current()) {
    (void)waitIterateAll; (void)fakeMsg;
    forge_emu::full_barrier();  // the library orders its own pipes (hazard.h)
    compute(loc);
    forge_emu::Instr I = forge_emu::issue(forge_emu::P_FIX, "Matmul::IterateAll", loc);
    int ld = enSequentialWrite ? sN_ : N_;
    for (int i = 0; i < sM_; ++i)
      for (int j = 0; j < sN_; ++j) store_gm(gm.GetPhyAddr(), (uint64_t)i * ld + j, acc_[(size_t)i * sN_ + j], enAtomic, I, "Matmul::IterateAll", loc);
  }
  template <bool sync = true>
  __aicore__ inline void IterateAll(const LocalTensor<TC>& ub, uint8_t enAtomic = 0, forge_emu::Loc loc = forge_emu::Loc::current()) {
    forge_emu::full_barrier();
    compute(loc);
    ub.check_range(0, (uint64_t)sM_ * sN_ * sizeof(TC), "Matmul::IterateAll(local)", loc);
    for (int i = 0; i < sM_ * sN_; ++i) ub.raw()[i] = TC(enAtomic ? (float)ub.raw()[i] + acc_[i] : acc_[i]);
    forge_emu::full_barrier();
  }
  __aicore__ inline void WaitIterateAll() {}

  // Block-by-block: each Iterate() advances to the next baseM x baseN block of C.
  template <bool sync = true>
  __aicore__ inline bool Iterate(bool enPartialSum = false, forge_emu::Loc loc = forge_emu::Loc::current()) {
    (void)enPartialSum;
    forge_emu::full_barrier();
    if (!iterating_) { compute(loc); iterating_ = true; blk_ = -1; }
    int bm = t_.baseM > 0 ? t_.baseM : sM_, bn = t_.baseN > 0 ? t_.baseN : sN_;
    int mb = (sM_ + bm - 1) / bm, nb = (sN_ + bn - 1) / bn;
    if (++blk_ >= mb * nb) { iterating_ = false; return false; }
    if (t_.iterateOrder == 0) { cm_ = blk_ % mb; cn_ = blk_ / mb; } else { cn_ = blk_ % nb; cm_ = blk_ / nb; }
    return true;
  }
  template <bool sync = true>
  __aicore__ inline void GetTensorC(const GlobalTensor<TC>& gm, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                                    forge_emu::Loc loc = forge_emu::Loc::current()) {
    int bm = t_.baseM > 0 ? t_.baseM : sM_, bn = t_.baseN > 0 ? t_.baseN : sN_;
    int m0 = cm_ * bm, n0 = cn_ * bn, rm = std::min(bm, sM_ - m0), rn = std::min(bn, sN_ - n0);
    forge_emu::Instr I = forge_emu::issue(forge_emu::P_FIX, "Matmul::GetTensorC", loc);
    for (int i = 0; i < rm; ++i)
      for (int j = 0; j < rn; ++j) {
        uint64_t at = enSequentialWrite ? (uint64_t)i * bn + j : (uint64_t)(m0 + i) * N_ + (n0 + j);
        store_gm(gm.GetPhyAddr(), at, acc_[(size_t)(m0 + i) * sN_ + n0 + j], enAtomic, I, "Matmul::GetTensorC", loc);
      }
  }
  template <bool sync = true>
  __aicore__ inline void GetTensorC(const LocalTensor<TC>& ub, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                                    forge_emu::Loc loc = forge_emu::Loc::current()) {
    (void)enSequentialWrite;
    int bm = t_.baseM > 0 ? t_.baseM : sM_, bn = t_.baseN > 0 ? t_.baseN : sN_;
    int m0 = cm_ * bm, n0 = cn_ * bn, rm = std::min(bm, sM_ - m0), rn = std::min(bn, sN_ - n0);
    ub.check_range(0, (uint64_t)bm * bn * sizeof(TC), "Matmul::GetTensorC(local)", loc);
    for (int i = 0; i < rm; ++i)
      for (int j = 0; j < rn; ++j) {
        TC* p = ub.raw() + (size_t)i * bn + j;
        float v = acc_[(size_t)(m0 + i) * sN_ + n0 + j];
        *p = TC(enAtomic ? (float)*p + v : v);
      }
    forge_emu::full_barrier();
  }
  __aicore__ inline void End() { iterating_ = false; }

 private:
  void check_tiling(const forge_emu::Loc& loc) const {
    using namespace forge_emu;
    const TCubeTiling& t = t_;
    auto over = [&](const char* mem, long long used, long long cap, const std::string& parts) {
      Diag("over_allocation").kv("memory", mem).kv("used", used).kv("capacity", cap).kv("buffers", parts)
          .msg(std::string("Matmul tiling: ") + mem + " " + kib(used) + " > " + kib(cap) + ": " + parts + " (ascend.md §2.6)")
          .at(loc).fail(EXIT_OVER_ALLOCATION);
    };
    if (t.baseM <= 0 || t.baseN <= 0 || t.baseK <= 0) return;  // no blocking given: nothing to check
    int c0 = 32 / (int)sizeof(TA);
    if (t.baseM % 16 || t.baseN % 16 || t.baseK % c0)
      Diag("bad_api").kv("op", "Matmul::Init").kv("baseM", t.baseM).kv("baseN", t.baseN).kv("baseK", t.baseK)
          .msg("baseM and baseN must be multiples of 16 and baseK of C0=" + std::to_string(c0) + " (ascend.md §2.6)").at(loc).fail(EXIT_BAD_API);
    int dbA = t.dbL0A > 0 ? t.dbL0A : 1, dbB = t.dbL0B > 0 ? t.dbL0B : 1, dbC = t.dbL0C > 0 ? t.dbL0C : 1;
    long long a = (long long)t.baseM * t.baseK * sizeof(TA) * dbA, b = (long long)t.baseN * t.baseK * sizeof(TB) * dbB;
    long long c = (long long)t.baseM * t.baseN * 4 * dbC;
    const Limits& L = limits();
    if (a > L.l0a) over("L0A", a, L.l0a, "baseM " + std::to_string(t.baseM) + " x baseK " + std::to_string(t.baseK) + " x " + std::to_string(sizeof(TA)) + " B x dbL0A " + std::to_string(dbA));
    if (b > L.l0b) over("L0B", b, L.l0b, "baseN " + std::to_string(t.baseN) + " x baseK " + std::to_string(t.baseK) + " x " + std::to_string(sizeof(TB)) + " B x dbL0B " + std::to_string(dbB));
    if (c > L.l0c) over("L0C", c, L.l0c, "baseM " + std::to_string(t.baseM) + " x baseN " + std::to_string(t.baseN) + " x 4 B x dbL0C " + std::to_string(dbC));
    long long l1a = (long long)(t.depthA1 > 0 ? t.depthA1 : 1) * t.baseM * t.baseK * sizeof(TA);
    long long l1b = (long long)(t.depthB1 > 0 ? t.depthB1 : 1) * t.baseN * t.baseK * sizeof(TB);
    long long l1bias = t.isBias ? (long long)t.baseN * 4 : 0;
    if (l1a + l1b + l1bias > L.l1)
      over("L1", l1a + l1b + l1bias, L.l1, "A1 depthA1 " + std::to_string(t.depthA1) + " x " + std::to_string(t.baseM * t.baseK * (int)sizeof(TA)) +
           " B, B1 depthB1 " + std::to_string(t.depthB1) + " x " + std::to_string(t.baseN * t.baseK * (int)sizeof(TB)) + " B, bias " + std::to_string(l1bias) + " B");
  }
  template <class P>
  float load(const P* base, bool gm, uint64_t at, const char* op, const forge_emu::Loc& loc) const {
    if (gm) forge_emu::check_gm(base + at, sizeof(P), op, loc);
    return (float)base[at];
  }
  // The result leaves L0C through Fixpipe: GM writes on PIPE_FIX, which a CrossCoreSetFlag after
  // PIPE_FIX orders (hazard.h). Atomic adds commute, so they are not checked against each other.
  void store_gm(TC* base, uint64_t at, float v, uint8_t atomic, const forge_emu::Instr& I, const char* op, const forge_emu::Loc& loc) {
    forge_emu::check_gm(base + at, sizeof(TC), op, loc);
    if (!atomic) forge_emu::touch_gm(I, op, base + at, sizeof(TC), true, loc);
    base[at] = TC(atomic ? (float)base[at] + v : v);
  }
  // The library loads A, B and a GM bias on MTE2 (GM->L1), and every result it writes depends on
  // those loads (MTE2 -> MTE1 -> M -> FIX inside the API), so its Fixpipe knows them complete: a
  // CrossCoreSetFlag after PIPE_FIX tells another core it may overwrite them. The loads are checked
  // against other cores' GM writes like any DataCopy(GM->local) (hazard.h).
  void load_gm(int ldA, int ldB, const forge_emu::Loc& loc) {
    using namespace forge_emu;
    if (!aG_ && !bG_ && !(bias_ && biasG_)) return;
    Instr I = issue(P_MTE2, "Matmul(GM->L1 loads of A/B/bias)", loc);
    auto rows = [&](const void* base, size_t elem, int ld, int nrows, int len, const char* op) {
      for (int r = 0; r < nrows; ++r)
        touch_gm(I, op, static_cast<const uint8_t*>(base) + (uint64_t)r * ld * elem, (uint64_t)len * elem, false, loc);
    };
    if (aG_) { if (transA_) rows(aG_, sizeof(TA), ldA, sK_, sM_, "Matmul(A)"); else rows(aG_, sizeof(TA), ldA, sM_, sK_, "Matmul(A)"); }
    if (bG_) { if (transB_) rows(bG_, sizeof(TB), ldB, sN_, sK_, "Matmul(B)"); else rows(bG_, sizeof(TB), ldB, sK_, sN_, "Matmul(B)"); }
    if (bias_ && biasG_) rows(bias_, sizeof(TBias), 0, 1, sN_, "Matmul(bias)");
    Hazards& h = hz();
    learn(h, P_FIX, snapshot(h, P_MTE2));
  }
  void compute(const forge_emu::Loc& loc) {
    using namespace forge_emu;
    if (!inited_) Diag("bad_api").kv("op", "Matmul").msg("Matmul used before Init / REGIST_MATMUL_OBJ").at(loc).fail(EXIT_BAD_API);
    const TA* a = aG_ ? aG_ : aL_;
    const TB* b = bG_ ? bG_ : bL_;
    if (!a || !b) Diag("bad_api").kv("op", "Matmul").msg("SetTensorA/SetTensorB not called").at(loc).fail(EXIT_BAD_API);
    int ldA = transA_ ? (aG_ ? M_ : sM_) : (aG_ ? Ka_ : sK_);
    int ldB = transB_ ? (bG_ ? Kb_ : sK_) : (bG_ ? N_ : sN_);
    load_gm(ldA, ldB, loc);
    acc_.assign((size_t)sM_ * sN_, 0.f);
    std::vector<float> arow((size_t)sK_);
    for (int i = 0; i < sM_; ++i) {
      for (int k = 0; k < sK_; ++k) arow[k] = load(a, aG_ != nullptr, transA_ ? (uint64_t)k * ldA + i : (uint64_t)i * ldA + k, "Matmul(A)", loc);
      for (int j = 0; j < sN_; ++j) {
        float s = 0.f;
        for (int k = 0; k < sK_; ++k)
          s += arow[k] * load(b, bG_ != nullptr, transB_ ? (uint64_t)j * ldB + k : (uint64_t)k * ldB + j, "Matmul(B)", loc);
        if (bias_) s += load(bias_, biasG_, (uint64_t)j, "Matmul(bias)", loc);
        acc_[(size_t)i * sN_ + j] = s;
      }
    }
  }

  TCubeTiling t_{};
  bool inited_ = false, transA_ = false, transB_ = false, iterating_ = false;
  int M_ = 0, N_ = 0, Ka_ = 0, Kb_ = 0, sM_ = 0, sN_ = 0, sK_ = 0, blk_ = -1, cm_ = 0, cn_ = 0;
  const TA* aG_ = nullptr; const TA* aL_ = nullptr;
  const TB* bG_ = nullptr; const TB* bL_ = nullptr;
  const TBias* bias_ = nullptr;
  bool biasG_ = false;
  std::vector<float> acc_;
};

namespace detail {
inline void regist_matmul(TPipe*) {}
template <class MM, class... Rest>
inline void regist_matmul(TPipe* pipe, MM& mm, const TCubeTiling* t, Rest&&... rest) {
  mm.Init(t, pipe);
  regist_matmul(pipe, rest...);
}
}  // namespace detail

}  // namespace AscendC

namespace matmul {
using AscendC::Matmul;
using AscendC::MatmulType;
using AscendC::MatmulConfig;
using AscendC::CubeFormat;
using AscendC::LayoutMode;
using AscendC::CFG_NORM;
using AscendC::CFG_MDL;
}  // namespace matmul

// REGIST_MATMUL_OBJ(&pipe, workspace, mm1, &tiling1 [, mm2, &tiling2 ...])
#define REGIST_MATMUL_OBJ(pipe, workspace, ...) \
  do { (void)(workspace); ::AscendC::detail::regist_matmul((pipe), __VA_ARGS__); } while (0)
