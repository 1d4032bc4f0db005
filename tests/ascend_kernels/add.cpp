// Hand-written vector add, the vendor's "Add" sample shape (ascend.md §2.3 vector paradigm):
// CopyIn (MTE2) -> Compute (V) -> CopyOut (MTE3), double-buffered queues, fp16.
#include "kernel_operator.h"
using namespace AscendC;

#ifndef BUFFER_NUM
#define BUFFER_NUM 2
#endif
#ifndef TILE
#define TILE 256            // elements per tile
#endif

struct AddTiling { uint32_t total; uint32_t perCore; };

class KernelAdd {
 public:
  __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, const AddTiling& t) {
    n_ = t.perCore;
    uint64_t base = GetBlockIdx() * (uint64_t)t.perCore;
    xGm.SetGlobalBuffer((__gm__ half*)x + base, n_);
    yGm.SetGlobalBuffer((__gm__ half*)y + base, n_);
    zGm.SetGlobalBuffer((__gm__ half*)z + base, n_);
    pipe.InitBuffer(inX, BUFFER_NUM, TILE * sizeof(half));
    pipe.InitBuffer(inY, BUFFER_NUM, TILE * sizeof(half));
    pipe.InitBuffer(outZ, BUFFER_NUM, TILE * sizeof(half));
  }
  __aicore__ inline void Process() {
    for (uint32_t i = 0; i < n_ / TILE; ++i) { CopyIn(i); Compute(); CopyOut(i); }
  }
 private:
  __aicore__ inline void CopyIn(uint32_t i) {
    LocalTensor<half> x = inX.AllocTensor<half>();
    LocalTensor<half> y = inY.AllocTensor<half>();
    DataCopy(x, xGm[i * TILE], TILE);
    DataCopy(y, yGm[i * TILE], TILE);
    inX.EnQue(x);
    inY.EnQue(y);
  }
  __aicore__ inline void Compute() {
    LocalTensor<half> x = inX.DeQue<half>();
    LocalTensor<half> y = inY.DeQue<half>();
    LocalTensor<half> z = outZ.AllocTensor<half>();
    Add(z, x, y, TILE);
    outZ.EnQue(z);
    inX.FreeTensor(x);
    inY.FreeTensor(y);
  }
  __aicore__ inline void CopyOut(uint32_t i) {
    LocalTensor<half> z = outZ.DeQue<half>();
    DataCopy(zGm[i * TILE], z, TILE);
    outZ.FreeTensor(z);
  }
  TPipe pipe;
  TQue<TPosition::VECIN, BUFFER_NUM> inX, inY;
  TQue<TPosition::VECOUT, BUFFER_NUM> outZ;
  GlobalTensor<half> xGm, yGm, zGm;
  uint32_t n_ = 0;
};

extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  GET_TILING_DATA_WITH_STRUCT(AddTiling, t, tiling);
  KernelAdd op;
  op.Init(x, y, z, t);
  op.Process();
}
