// A sum over the first n values on one core, in the element type DTYPE, by the reduction FORM
// picks: 0 ReduceSum (the count form), 1 WholeReduceSum (one repeat), 2 BlockReduceSum (one
// repeat, a sum per 32 B block): what each gives, in the order and precision the vendor documents.
#include "kernel_operator.h"
using namespace AscendC;
#ifndef DTYPE
#define DTYPE half
#endif
#ifndef FORM
#define FORM 0
#endif
constexpr uint32_t CAP = 1024;                        // elements the input buffer holds
constexpr uint32_t OUT = 32 / sizeof(DTYPE);          // one 32 B block of output

extern "C" __global__ __aicore__ void reduce_sum(GM_ADDR x, GM_ADDR y, uint32_t n) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> inQ;
  TQue<TPosition::VECOUT, 1> outQ;
  TBuf<TPosition::VECCALC> work;
  GlobalTensor<DTYPE> xGm, yGm;
  xGm.SetGlobalBuffer((__gm__ DTYPE*)x, CAP);
  yGm.SetGlobalBuffer((__gm__ DTYPE*)y, OUT);
  pipe.InitBuffer(inQ, 1, CAP * sizeof(DTYPE));
  pipe.InitBuffer(outQ, 1, OUT * sizeof(DTYPE));
  pipe.InitBuffer(work, 32);
  LocalTensor<DTYPE> xl = inQ.AllocTensor<DTYPE>();
  DataCopy(xl, xGm, CAP);
  inQ.EnQue(xl);
  xl = inQ.DeQue<DTYPE>();
  LocalTensor<DTYPE> yl = outQ.AllocTensor<DTYPE>();
  Duplicate(yl, (DTYPE)0, OUT);
  PipeBarrier<PIPE_V>();
#if FORM == 0
  ReduceSum(yl, xl, work.Get<DTYPE>(), n);
#elif FORM == 1
  WholeReduceSum(yl, xl, (int32_t)n, 1, 1, 1, 8);
#else
  BlockReduceSum(yl, xl, 1, (int32_t)n, 1, 1, 8);
#endif
  outQ.EnQue(yl);
  yl = outQ.DeQue<DTYPE>();
  DataCopy(yGm, yl, OUT);
  outQ.FreeTensor(yl);
  inQ.FreeTensor(xl);
}
