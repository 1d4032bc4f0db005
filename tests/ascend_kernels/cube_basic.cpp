// Hand-written cube matmul with the basic API (ascend.md §2.4.4): GM -ND2NZ-> L1 -LoadData-> L0A/L0B
// -Mmad-> L0C -Fixpipe NZ2ND-> GM. C[M,N] fp32 = A[M,K] fp16 x B, one AIC block.
// B_NK=0: B is row-major [K, N]: L1 NZ -> L0B ZN needs ifTranspose, one LoadData per C0 row block.
// B_NK=1: B is given as row-major [N, K] (C = A x Bᵀ): its NZ is already ZN, one sequential LoadData.
#include "kernel_operator.h"
using namespace AscendC;
#ifndef B_NK
#define B_NK 0
#endif
constexpr uint32_t M = 48, N = 32, K = 64;
constexpr uint32_t M1 = M / 16, N1 = N / 16, K1 = K / 16, FRAC = 256;   // fp16: C0 = 16

extern "C" __global__ __aicore__ void cube_mm(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
  TPipe pipe;
  TQue<TPosition::A1, 1> qA1; TQue<TPosition::B1, 1> qB1;
  TQue<TPosition::A2, 1> qA2; TQue<TPosition::B2, 1> qB2;
  TQue<TPosition::CO1, 1> qC;
  pipe.InitBuffer(qA1, 1, M * K * sizeof(half));
  pipe.InitBuffer(qB1, 1, K * N * sizeof(half));
  pipe.InitBuffer(qA2, 1, M * K * sizeof(half));
  pipe.InitBuffer(qB2, 1, K * N * sizeof(half));
  pipe.InitBuffer(qC, 1, M * N * sizeof(float));
  GlobalTensor<half> aGm, bGm; GlobalTensor<float> cGm;
  aGm.SetGlobalBuffer((__gm__ half*)a, M * K);
  bGm.SetGlobalBuffer((__gm__ half*)b, K * N);
  cGm.SetGlobalBuffer((__gm__ float*)c, M * N);

  LocalTensor<half> a1 = qA1.AllocTensor<half>(), b1 = qB1.AllocTensor<half>();
  DataCopy(a1, aGm, Nd2NzParams{1, M, K, 0, K, M, 1, 0});
  if (B_NK) DataCopy(b1, bGm, Nd2NzParams{1, N, K, 0, K, N, 1, 0});
  else DataCopy(b1, bGm, Nd2NzParams{1, K, N, 0, N, K, 1, 0});
  qA1.EnQue(a1); qB1.EnQue(b1);
  a1 = qA1.DeQue<half>(); b1 = qB1.DeQue<half>();

  LocalTensor<half> a2 = qA2.AllocTensor<half>(), b2 = qB2.AllocTensor<half>();
  for (uint32_t i = 0; i < M1; ++i)          // NZ -> ZZ: row block i takes fractals i, i+M1, ...
    LoadData(a2[i * K1 * FRAC], a1[i * FRAC], LoadData2DParams{0, (uint8_t)K1, (uint16_t)M1, 0, 0, false, 0});
  if (B_NK) {
    LoadData(b2, b1, LoadData2DParams{0, (uint8_t)(K1 * N1), 1, 0, 0, false, 0});
  } else {
    for (uint32_t i = 0; i < K1; ++i)        // NZ -> ZN: k block i takes fractals i, i+K1, ... transposed
      LoadData(b2[i * N1 * FRAC], b1[i * FRAC], LoadData2DParams{0, (uint8_t)N1, (uint16_t)K1, 0, 0, true, 0});
  }
  qA1.FreeTensor(a1); qB1.FreeTensor(b1);
  qA2.EnQue(a2); qB2.EnQue(b2);
  a2 = qA2.DeQue<half>(); b2 = qB2.DeQue<half>();

  LocalTensor<float> c0 = qC.AllocTensor<float>();
  MmadParams mp; mp.m = M; mp.n = N; mp.k = K; mp.cmatrixInitVal = true;
  Mmad(c0, a2, b2, mp);
  qA2.FreeTensor(a2); qB2.FreeTensor(b2);
  qC.EnQue(c0);
  c0 = qC.DeQue<float>();
  FixpipeParamsV220 fp; fp.nSize = N; fp.mSize = M; fp.srcStride = M; fp.dstStride = N;
  Fixpipe<float, float, CFG_ROW_MAJOR>(cGm, c0, fp);
  qC.FreeTensor(c0);
}
