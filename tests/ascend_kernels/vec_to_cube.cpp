// Hand-written MIX 1:2 hand-off the other way round from crosscore.cpp (the P -> P·V step of
// ascend.md §2.10): per step each AIV scales its half of the rows of X_step by 2 into a one-slot GM
// workspace and signals READY (CrossCoreSetFlag<2, PIPE_MTE3>); the AIC waits, reads the slot as
// the high-level Matmul's A (Y_step = 2·X_step @ W) and signals DONE (CrossCoreSetFlag<2,
// PIPE_FIX>: its result depends on its loads, so they are done by then) before the AIVs overwrite
// the slot. `race` plants a race on the slot: 1 the AIVs set READY after PIPE_V, before their
// copy out is done; 2 the AIC sets DONE before its Matmul, so the AIVs may overwrite the slot
// while it is loaded.
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
using namespace AscendC;

constexpr uint16_t READY = 5;   // cross-core flag ids (ascend.md §2.9: use <= 10)
constexpr uint16_t DONE = 6;
constexpr int ROWS = 16, KD = 32, COLS = 32;   // one step: [16, 32] @ [32, 32]

extern "C" __global__ __aicore__ void vec_to_cube(GM_ADDR x, GM_ADDR w, GM_ADDR y, GM_ADDR ws, uint32_t steps, int32_t race) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  int core = GetBlockIdx() / (ASCEND_IS_AIV ? 2 : 1);          // the physical AI core
  __gm__ half* slot = (__gm__ half*)ws + (uint64_t)core * ROWS * KD;
  TPipe pipe;
  if ASCEND_IS_AIV {
    int sub = GetSubBlockIdx();
    constexpr int HALF_ROWS = ROWS / 2;
    TQue<TPosition::VECIN, 1> inQ;
    TQue<TPosition::VECOUT, 1> outQ;
    pipe.InitBuffer(inQ, 1, HALF_ROWS * KD * sizeof(half));
    pipe.InitBuffer(outQ, 1, HALF_ROWS * KD * sizeof(half));
    GlobalTensor<half> xGm, pGm;
    pGm.SetGlobalBuffer(slot + sub * HALF_ROWS * KD);
    for (uint32_t s = 0; s < steps; ++s) {
      if (s > 0) CrossCoreWaitFlag(DONE);              // the AIC has read the slot
      xGm.SetGlobalBuffer((__gm__ half*)x + (((uint64_t)core * steps + s) * ROWS + sub * HALF_ROWS) * KD);
      LocalTensor<half> a = inQ.AllocTensor<half>();
      DataCopy(a, xGm, HALF_ROWS * KD);
      inQ.EnQue(a);
      a = inQ.DeQue<half>();
      LocalTensor<half> b = outQ.AllocTensor<half>();
      Muls(b, a, (half)2.0f, HALF_ROWS * KD);
      inQ.FreeTensor(a);
      outQ.EnQue(b);
      b = outQ.DeQue<half>();
      DataCopy(pGm, b, HALF_ROWS * KD);                              // BUG:write_slot
      outQ.FreeTensor(b);
      if (race == 1) CrossCoreSetFlag<2, PIPE_V>(READY);
      else CrossCoreSetFlag<2, PIPE_MTE3>(READY);
    }
  }
  if ASCEND_IS_AIC {
    TCubeTiling t{};
    t.M = ROWS; t.N = COLS; t.Ka = t.Kb = KD; t.singleCoreM = ROWS; t.singleCoreN = COLS; t.singleCoreK = KD;
    t.baseM = 16; t.baseN = 32; t.baseK = 32; t.depthA1 = t.depthB1 = 1; t.dbL0A = t.dbL0B = t.dbL0C = 1;
    Matmul<MatmulType<TPosition::GM, CubeFormat::ND, half>, MatmulType<TPosition::GM, CubeFormat::ND, half>,
           MatmulType<TPosition::GM, CubeFormat::ND, float>> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    GlobalTensor<half> pGm, wGm;
    GlobalTensor<float> yGm;
    pGm.SetGlobalBuffer(slot);
    wGm.SetGlobalBuffer((__gm__ half*)w);
    for (uint32_t s = 0; s < steps; ++s) {
      CrossCoreWaitFlag(READY);                                     // both AIVs wrote the slot
      yGm.SetGlobalBuffer((__gm__ float*)y + ((uint64_t)core * steps + s) * ROWS * COLS);
      if (race == 2) CrossCoreSetFlag<2, PIPE_FIX>(DONE);
      mm.SetTensorA(pGm); mm.SetTensorB(wGm); mm.IterateAll(yGm); mm.End();   // BUG:read_slot
      if (race != 2) CrossCoreSetFlag<2, PIPE_FIX>(DONE);
    }
  }
}
