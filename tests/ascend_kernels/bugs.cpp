// Planted bugs, one per `which` value; each line marked "BUG:<kind>" is where the emulator must point.
//   0 none, 1 over_allocation, 2 queue_overflow (AllocTensor), 3 empty_deque, 4 deadlock (missing SetFlag),
//   5 misaligned copy length, 6 queue_overflow (EnQue beyond depth), 7 gm_out_of_bounds,
//   8 local_out_of_bounds, 9 misaligned UB address; missing_sync (the order between pipes, hazard.h):
//   10 no V_MTE3 before copying a vector result out, 11 no V_S before reading one on the scalar unit,
//   12 no PipeBarrier<PIPE_V> between dependent vector ops, 13 no MTE2_V between a copy into a TBuf
//   and its vector use, 14 no V_MTE2 before overwriting a TBuf the vector unit reads, 15 no S_V
//   between a SetValue and its vector use
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void planted(GM_ADDR x, GM_ADDR y, uint32_t which) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  constexpr uint32_t N = 256;                       // halves: 512 B
  GlobalTensor<half> xGm, yGm;
  xGm.SetGlobalBuffer((__gm__ half*)x + GetBlockIdx() * N, N);
  yGm.SetGlobalBuffer((__gm__ half*)y + GetBlockIdx() * N, N);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> inQ;
  TQue<TPosition::VECOUT, 1> outQ;
  TBuf<TPosition::VECCALC> big, tb;
  pipe.InitBuffer(inQ, 2, N * sizeof(half));
  pipe.InitBuffer(outQ, 1, N * sizeof(half));
  if (which == 1) pipe.InitBuffer(big, 192 * 1024);  // BUG:over_allocation
  if (which >= 13) pipe.InitBuffer(tb, N * sizeof(half));
  LocalTensor<half> a = inQ.AllocTensor<half>();
  if (which == 2) { LocalTensor<half> b = inQ.AllocTensor<half>(); LocalTensor<half> c = inQ.AllocTensor<half>(); (void)b; (void)c; }  // BUG:queue_overflow
  if (which == 5) DataCopy(a, xGm, 10);             // BUG:misaligned
  if (which == 7) DataCopy(a, xGm[N * 64], N);      // BUG:gm_out_of_bounds
  if (which == 8) DataCopy(a, xGm, 2 * N);          // BUG:local_out_of_bounds
  if (which == 9) DataCopy(a[3], xGm, 16);          // BUG:misaligned_address
  DataCopy(a, xGm, N);
  if (which == 3) { LocalTensor<half> e = outQ.DeQue<half>(); (void)e; }  // BUG:empty_deque
  if (which == 6) { LocalTensor<half> b = inQ.AllocTensor<half>(); inQ.EnQue(a); inQ.EnQue(b); }  // BUG:enque_depth
  inQ.EnQue(a);
  a = inQ.DeQue<half>();
  LocalTensor<half> o = outQ.AllocTensor<half>();
  Adds(o, a, half(1.0f), N);
  inQ.FreeTensor(a);
  if (which == 11) { half v = o.GetValue(0); (void)v; }  // BUG:missing_v_s
  if (which == 12) Muls(o, o, half(2.0f), N);        // BUG:missing_barrier
  if (which >= 13) {
    LocalTensor<half> t = tb.Get<half>();
    if (which == 13) {
      DataCopy(t, xGm, N);
      Adds(o, t, half(1.0f), N);                     // BUG:missing_mte2_v
    }
    if (which == 14) {
      DataCopy(t, xGm, N);
      SetFlag<HardEvent::MTE2_V>(0);
      WaitFlag<HardEvent::MTE2_V>(0);
      Adds(o, t, half(1.0f), N);
      DataCopy(t, xGm, N);                           // BUG:missing_v_mte2
    }
    if (which == 15) {
      t.SetValue(0, half(1.0f));
      Adds(o, t, half(1.0f), N);                     // BUG:missing_s_v
    }
  }
  if (which == 4) {
    WaitFlag<HardEvent::V_MTE3>(3);                  // BUG:deadlock (no SetFlag<V_MTE3>(3) before it)
  } else if (which != 10) {
    SetFlag<HardEvent::V_MTE3>(3);
    WaitFlag<HardEvent::V_MTE3>(3);
  }
  DataCopy(yGm, o, N);                               // BUG:missing_v_mte3
  outQ.FreeTensor(o);
}
