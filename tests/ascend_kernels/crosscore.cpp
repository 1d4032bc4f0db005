// Hand-written MIX 1:2 producer/consumer (ascend.md §2.9, the FA hand-off of §2.10 "Mix-kernel skeleton"):
// per step the AIC computes S = X_step @ W into a 2-slot GM workspace ring and signals READY
// (CrossCoreSetFlag<2, PIPE_FIX>); each AIV waits, scales its half of the rows by 2 and writes them
// out, then signals FREE (CrossCoreSetFlag<2, PIPE_MTE3>) so the AIC may reuse the slot.
// `skip_step` >= 0 plants a bug: the AIC forgets the READY set of that step. `race` plants a race
// on the ring: 1 the AIC sets READY before it writes the step's product, 2 it reuses a slot
// without waiting for FREE.
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
using namespace AscendC;

constexpr uint16_t READY = 3;   // cross-core flag ids (ascend.md §2.9: use <= 10)
constexpr uint16_t FREE = 4;
constexpr int RING = 2;
constexpr int ROWS = 16, KD = 32, COLS = 32;   // one step: [16, 32] @ [32, 32]

extern "C" __global__ __aicore__ void cv_pipeline(GM_ADDR x, GM_ADDR w, GM_ADDR y, GM_ADDR ws, uint32_t steps, int32_t skip_step, int32_t race) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  int core = GetBlockIdx() / (ASCEND_IS_AIV ? 2 : 1);          // the physical AI core
  __gm__ float* ring = (__gm__ float*)ws + (uint64_t)core * RING * ROWS * COLS;
  TPipe pipe;
  if ASCEND_IS_AIC {
    TCubeTiling t{};
    t.M = ROWS; t.N = COLS; t.Ka = t.Kb = KD; t.singleCoreM = ROWS; t.singleCoreN = COLS; t.singleCoreK = KD;
    t.baseM = 16; t.baseN = 32; t.baseK = 32; t.depthA1 = t.depthB1 = 1; t.dbL0A = t.dbL0B = t.dbL0C = 1;
    Matmul<MatmulType<TPosition::GM, CubeFormat::ND, half>, MatmulType<TPosition::GM, CubeFormat::ND, half>,
           MatmulType<TPosition::GM, CubeFormat::ND, float>> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    GlobalTensor<half> xGm, wGm;
    GlobalTensor<float> sGm;
    wGm.SetGlobalBuffer((__gm__ half*)w);
    for (uint32_t s = 0; s < steps; ++s) {
      if (s >= RING && race != 2) CrossCoreWaitFlag(FREE);         // both AIVs released slot s % RING
      xGm.SetGlobalBuffer((__gm__ half*)x + ((uint64_t)core * steps + s) * ROWS * KD);
      sGm.SetGlobalBuffer(ring + (s % RING) * ROWS * COLS);
      if (race == 1) CrossCoreSetFlag<2, PIPE_FIX>(READY);
      mm.SetTensorA(xGm); mm.SetTensorB(wGm); mm.IterateAll(sGm); mm.End();   // BUG:race_write
      if ((int32_t)s != skip_step && race != 1) CrossCoreSetFlag<2, PIPE_FIX>(READY);
    }
  }
  if ASCEND_IS_AIV {
    int sub = GetSubBlockIdx();
    constexpr int HALF_ROWS = ROWS / 2;
    TQue<TPosition::VECIN, 1> inQ;
    TQue<TPosition::VECOUT, 1> outQ;
    pipe.InitBuffer(inQ, 1, HALF_ROWS * COLS * sizeof(float));
    pipe.InitBuffer(outQ, 1, HALF_ROWS * COLS * sizeof(float));
    GlobalTensor<float> sGm, yGm;
    for (uint32_t s = 0; s < steps; ++s) {
      CrossCoreWaitFlag(READY);
      sGm.SetGlobalBuffer(ring + (s % RING) * ROWS * COLS + sub * HALF_ROWS * COLS);
      yGm.SetGlobalBuffer((__gm__ float*)y + (((uint64_t)core * steps + s) * ROWS + sub * HALF_ROWS) * COLS);
      LocalTensor<float> a = inQ.AllocTensor<float>();
      DataCopy(a, sGm, HALF_ROWS * COLS);                           // BUG:race_read
      inQ.EnQue(a);
      a = inQ.DeQue<float>();
      LocalTensor<float> b = outQ.AllocTensor<float>();
      Muls(b, a, 2.0f, HALF_ROWS * COLS);
      inQ.FreeTensor(a);
      outQ.EnQue(b);
      b = outQ.DeQue<float>();
      DataCopy(yGm, b, HALF_ROWS * COLS);
      outQ.FreeTensor(b);
      CrossCoreSetFlag<2, PIPE_MTE3>(FREE);
    }
  }
}
