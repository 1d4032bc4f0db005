// Hand-written RMSNorm (fp16 in/out, fp32 compute), the vector skeleton of ascend.md §2.10:
// queues for x/y, TBufs for fp32 temporaries, ReduceSum, V_S sync before the scalar read,
// scalar kernel parameters (CANN 8.x parameters are pointers or primitives, §2.7).
#include "kernel_operator.h"
using namespace AscendC;
constexpr int32_t BUFFER_NUM = 2;
struct RmsTiling { uint32_t rows, colsPad, colsReal, rowsPerCore; float eps; };

class RmsNormK {
 public:
  __aicore__ inline void Init(GM_ADDR x, GM_ADDR g, GM_ADDR y, const RmsTiling& t) {
    t_ = t;
    uint32_t r0 = GetBlockIdx() * t.rowsPerCore;
    nRows_ = (r0 >= t.rows) ? 0 : ((t.rows - r0 < t.rowsPerCore) ? t.rows - r0 : t.rowsPerCore);
    xGm.SetGlobalBuffer((__gm__ half*)x + (uint64_t)r0 * t.colsPad, (uint64_t)nRows_ * t.colsPad);
    yGm.SetGlobalBuffer((__gm__ half*)y + (uint64_t)r0 * t.colsPad, (uint64_t)nRows_ * t.colsPad);
    gGm.SetGlobalBuffer((__gm__ half*)g, t.colsPad);
    pipe.InitBuffer(inQ, BUFFER_NUM, t.colsPad * sizeof(half));
    pipe.InitBuffer(outQ, BUFFER_NUM, t.colsPad * sizeof(half));
    pipe.InitBuffer(gF, t.colsPad * sizeof(float));
    pipe.InitBuffer(xF, t.colsPad * sizeof(float));
    pipe.InitBuffer(sqF, t.colsPad * sizeof(float));
    pipe.InitBuffer(wk, t.colsPad * sizeof(float));
    pipe.InitBuffer(red, 64 * sizeof(float));
  }
  __aicore__ inline void Process() {
    LoadGamma();
    for (uint32_t i = 0; i < nRows_; ++i) { CopyIn(i); Compute(); CopyOut(i); }
  }
 private:
  __aicore__ inline void LoadGamma() {
    LocalTensor<half> g = inQ.AllocTensor<half>();
    DataCopy(g, gGm, t_.colsPad);
    inQ.EnQue(g); g = inQ.DeQue<half>();
    Cast(gF.Get<float>(), g, RoundMode::CAST_NONE, t_.colsPad);
    inQ.FreeTensor(g);
  }
  __aicore__ inline void CopyIn(uint32_t i) {
    LocalTensor<half> x = inQ.AllocTensor<half>();
    DataCopy(x, xGm[(uint64_t)i * t_.colsPad], t_.colsPad);
    inQ.EnQue(x);
  }
  __aicore__ inline void Compute() {
    LocalTensor<half> x = inQ.DeQue<half>();
    LocalTensor<float> xf = xF.Get<float>(), sq = sqF.Get<float>(), r = red.Get<float>();
    Cast(xf, x, RoundMode::CAST_NONE, t_.colsPad);  inQ.FreeTensor(x);
    PipeBarrier<PIPE_V>();
    Mul(sq, xf, xf, t_.colsPad);                   PipeBarrier<PIPE_V>();
    ReduceSum(r, sq, wk.Get<float>(), t_.colsPad);
    event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
    SetFlag<HardEvent::V_S>(e); WaitFlag<HardEvent::V_S>(e);
    float rstd = 1.0f / sqrt(r.GetValue(0) / t_.colsReal + t_.eps);
    Muls(xf, xf, rstd, t_.colsPad);                PipeBarrier<PIPE_V>();
    Mul(xf, xf, gF.Get<float>(), t_.colsPad);      PipeBarrier<PIPE_V>();
    LocalTensor<half> y = outQ.AllocTensor<half>();
    Cast(y, xf, RoundMode::CAST_NONE, t_.colsPad);
    outQ.EnQue(y);
  }
  __aicore__ inline void CopyOut(uint32_t i) {
    LocalTensor<half> y = outQ.DeQue<half>();
    DataCopy(yGm[(uint64_t)i * t_.colsPad], y, t_.colsPad);
    outQ.FreeTensor(y);
  }
  TPipe pipe;
  TQue<TPosition::VECIN, 1> inQ;  TQue<TPosition::VECOUT, 1> outQ;
  TBuf<TPosition::VECCALC> gF, xF, sqF, wk, red;
  GlobalTensor<half> xGm, yGm, gGm;
  RmsTiling t_; uint32_t nRows_ = 0;
};

extern "C" __global__ __aicore__ void rms_norm_forge(GM_ADDR x, GM_ADDR g, GM_ADDR y,
    uint32_t rows, uint32_t colsPad, uint32_t colsReal, uint32_t rowsPerCore, float eps) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  RmsTiling t{rows, colsPad, colsReal, rowsPerCore, eps};
  RmsNormK op; op.Init(x, g, y, t); op.Process();
}
