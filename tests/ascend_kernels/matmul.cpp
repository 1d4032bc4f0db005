// Hand-written cube matmul with the Matmul high-level API (ascend.md §2.6): C[M,N] fp32 = A[M,K] fp16
// x B[K,N] fp16 (or B[N,K] with TRANS_B), the M x N grid split over AIC blocks by singleCoreM/N.
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
using namespace AscendC;
#ifndef TRANS_B
#define TRANS_B 0
#endif

extern "C" __global__ __aicore__ void matmul_custom(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
  GET_TILING_DATA_WITH_STRUCT(TCubeTiling, t, tiling);
  SetSysWorkspace(workspace);
  int nBlocksN = (t.N + t.singleCoreN - 1) / t.singleCoreN;
  int bm = GetBlockIdx() / nBlocksN, bn = GetBlockIdx() % nBlocksN;
  int m0 = bm * t.singleCoreM, n0 = bn * t.singleCoreN;
  if (m0 >= t.M) return;
  int tailM = t.M - m0 < t.singleCoreM ? t.M - m0 : t.singleCoreM;
  int tailN = t.N - n0 < t.singleCoreN ? t.N - n0 : t.singleCoreN;
  GlobalTensor<half> aGm, bGm;
  GlobalTensor<float> cGm;
  aGm.SetGlobalBuffer((__gm__ half*)a + (uint64_t)m0 * t.Ka);
  bGm.SetGlobalBuffer((__gm__ half*)b + (TRANS_B ? (uint64_t)n0 * t.Kb : (uint64_t)n0));
  cGm.SetGlobalBuffer((__gm__ float*)c + (uint64_t)m0 * t.N + n0);
  TPipe pipe;
  Matmul<MatmulType<TPosition::GM, CubeFormat::ND, half>, MatmulType<TPosition::GM, CubeFormat::ND, half, TRANS_B>,
         MatmulType<TPosition::GM, CubeFormat::ND, float>> mm;
  REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
  mm.SetTensorA(aGm);
  mm.SetTensorB(bGm, TRANS_B);
  mm.SetTail(tailM, tailN);
  mm.IterateAll(cGm);
  mm.End();
}
