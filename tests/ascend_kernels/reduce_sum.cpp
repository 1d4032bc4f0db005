// ReduceSum over the first n values (the count form) on one core, in the element type DTYPE:
// what its result is, in the order and precision the vendor documents for it.
#include "kernel_operator.h"
using namespace AscendC;
#ifndef DTYPE
#define DTYPE half
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
  ReduceSum(yl, xl, work.Get<DTYPE>(), n);
  outQ.EnQue(yl);
  yl = outQ.DeQue<DTYPE>();
  DataCopy(yGm, yl, OUT);
  outQ.FreeTensor(yl);
  inQ.FreeTensor(xl);
}
