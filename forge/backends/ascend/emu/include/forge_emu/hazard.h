// forge Ascend C CPU emulator: the order between pipes (ascend.md §2.8).
//
// The emulator runs a block's instructions in program order, so a kernel that forgets a flag still
// computes the right answer here while on the hardware two pipes race. This header finds those
// races. Every instruction is issued to one pipe (S for GetValue/SetValue, V for vector ops and
// UB->UB copies, MTE2 for GM->UB/L1, MTE3 for UB->GM, MTE1 for L1->L0, M for Mmad, FIX for
// Fixpipe; ascend.md §2.8 table, copy_ubuf_to_ubuf runs on PIPE_V per the CCE intrinsic docs).
// Each pipe keeps a vector clock of what it knows to be complete on every pipe:
//   - SetFlag<SRC_DST> fires once every SRC instruction issued before it is complete; WaitFlag
//     hands what SRC knew, and SRC's own progress, to DST;
//   - PipeBarrier<p> makes p's earlier instructions complete before its next; PIPE_ALL and
//     SyncAll do that for every pipe;
//   - a TQue's EnQue/DeQue carry MTE2->V (VECIN) and V->MTE3 (VECOUT) (ascend.md §2.3), MTE2->MTE1
//     (A1/B1), MTE1->M (A2/B2), M->FIX (CO1), and FreeTensor/AllocTensor the reverse; any other
//     queue is taken to order everything issued before its EnQue / FreeTensor;
//   - the high-level Matmul synchronises internally and is taken as a full barrier.
// Each byte of UB/L1/L0 remembers its last writer and, per pipe, its last reader. An access that
// depends on another pipe's earlier access (read after write, write after write, write after
// read) must know that access complete, or the kernel is reported as `missing_sync`, naming both
// instructions and the sync that would order them. Within one pipe instructions issue in order but
// may overlap (ascend.md §5 "Concurrency rules"): a vector op reading a vector result needs
// PipeBarrier<PIPE_V> (§2.8), and MTE2 or MTE3 transfers with overlapping destinations need
// PipeBarrier on that pipe (§2.4.5). Scalar reads complete when issued, so no pipe waits for them;
// scalar writes must be flagged to the pipe that reads them (S_V, S_MTE3; §2.8 "Automatic
// synchronisation"). GM is not tracked: the order of GM accesses between cores is the cross-core
// flags', which the emulator's scheduler already follows.
#pragma once
#include <algorithm>
#include "runtime.h"

namespace forge_emu {

inline const char* pipe_name(int p) {
  static const char* n[] = {"S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"};
  return p >= 0 && p < P_COUNT ? n[p] : "?";
}
inline int pipe_index(AscendC::pipe_t p) {
  switch (p) {
    case AscendC::PIPE_S: return P_S; case AscendC::PIPE_V: return P_V; case AscendC::PIPE_M: return P_M;
    case AscendC::PIPE_MTE1: return P_MTE1; case AscendC::PIPE_MTE2: return P_MTE2; case AscendC::PIPE_MTE3: return P_MTE3;
    case AscendC::PIPE_FIX: return P_FIX;
    default: return P_NONE;
  }
}
// The source and destination pipe of a HardEvent, read from its name ("MTE2_V" -> MTE2, V).
inline std::pair<int, int> event_pipes(AscendC::HardEvent e) {
  std::string n = event_name(e);
  size_t u = n.find('_');
  auto idx = [](const std::string& s) {
    for (int p = 0; p < P_COUNT; ++p) if (s == pipe_name(p)) return p;
    return (int)P_NONE;
  };
  return {idx(n.substr(0, u)), idx(n.substr(u + 1))};
}

// One instruction: the pipe it was issued to and its number there (1, 2, ...).
struct Instr {
  int pipe = P_NONE;
  uint32_t seq = 0;
};
constexpr uint32_t SEQ_MASK = (1u << 28) - 1;

inline Instr issue(int pipe, const char* op, const Loc& loc) {
  if (pipe == P_NONE) return {};
  Hazards& h = cur().hz;
  if (h.issued[pipe] >= SEQ_MASK)
    Diag("bad_api").kv("op", op).msg("more than 2^28 instructions on one pipe: too long a run for the emulator's order check").at(loc).fail(EXIT_BAD_API);
  h.op[pipe].push_back(op);
  h.at[pipe].push_back(loc);
  return {pipe, ++h.issued[pipe]};
}

// ---- sync: what each pipe learns ------------------------------------------------------------
inline PipeClock snapshot(const Hazards& h, int src) {  // src < 0: everything issued so far
  if (src < 0) { PipeClock t; for (int q = 0; q < P_COUNT; ++q) t[q] = h.issued[q]; return t; }
  PipeClock t = h.know[src];
  t[src] = h.issued[src];
  return t;
}
inline void learn(Hazards& h, int dst, const PipeClock& t) {  // dst < 0: every pipe
  for (int p = 0; p < P_COUNT; ++p)
    if (dst < 0 || p == dst)
      for (int q = 0; q < P_COUNT; ++q) h.know[p][q] = std::max(h.know[p][q], t[q]);
}
inline void barrier(Hazards& h, int pipe) {  // P_NONE: PIPE_ALL
  if (pipe == P_NONE) learn(h, -1, snapshot(h, -1));
  else h.know[pipe][pipe] = h.issued[pipe];
}
inline void full_barrier() { barrier(cur().hz, P_NONE); }

// ---- accesses -------------------------------------------------------------------------------
// A read-after-write / write-after-write / write-after-read between instruction `I` and an earlier
// access (pipe q, instruction s): ordered when I's pipe knows it complete. Same-pipe pairs are
// ordered by issue except the ones ascend.md names (see the header comment).
inline bool ordered(const Hazards& h, const Instr& I, int q, uint32_t s, char kind) {
  int p = I.pipe;
  if (q == p) {
    if (s == I.seq) return true;
    if (p == P_V && kind == 'R') return h.know[p][p] >= s;
    if ((p == P_MTE2 || p == P_MTE3) && kind == 'W') return h.know[p][p] >= s;
    return true;
  }
  return h.know[p][q] >= s;
}

[[noreturn]] inline void report_race(const Instr& I, const char* op, int q, uint32_t s, const char* hazard, int mem,
                                     AscendC::TPosition pos, uint64_t offset, const Loc& loc) {
  const Hazards& h = cur().hz;
  std::string needs = q == I.pipe ? std::string("PipeBarrier<PIPE_") + pipe_name(q) + ">()"
                                  : std::string("SetFlag/WaitFlag<HardEvent::") + pipe_name(q) + "_" + pipe_name(I.pipe) + ">";
  const std::string hz = hazard;
  const char* what = hz == "read after write" ? "reads what" : "overwrites what";
  const char* earlier = hz == "write after read" ? "may still be reading" : "wrote";
  std::string prev_op = h.op[q][s - 1], prev_at = where(h.at[q][s - 1]);
  Diag("missing_sync").kv("op", op).kv("pipe", pipe_name(I.pipe)).kv("hazard", hazard)
      .kv("memory", mem_name(mem)).kv("position", position_name(pos)).kv("offset", (long long)offset)
      .kv("earlier_op", prev_op).kv("earlier_pipe", pipe_name(q)).kv("earlier_where", prev_at).kv("needs", needs)
      .msg(std::string(op) + " (" + pipe_name(I.pipe) + ") " + what + " " + prev_op + " (" + pipe_name(q) + ", " + prev_at +
           ") " + earlier + " with nothing ordering the two; the hardware races here. Needs " + needs + " between them")
      .at(loc).fail(EXIT_MISSING_SYNC);
}

inline HazardCell* cells_of(Hazards& h, int mem) {
  if (!h.cells[mem]) {
    uint32_t cap = mem_capacity(mem);
    h.cells[mem] = static_cast<HazardCell*>(std::calloc(cap ? cap : 1, sizeof(HazardCell)));
  }
  return h.cells[mem];
}

// Records bytes [off, off + n) of `mem` (offsets from the memory's base) as read or written by `I`
// after checking each against the accesses before it. `buf_start` only names the offset in reports.
__attribute__((optimize("O2"))) inline void touch(const Instr& I, const char* op, int mem, AscendC::TPosition pos,
                                                  uint32_t buf_start, uint64_t off, uint64_t n, bool write, const Loc& loc) {
  if (I.pipe == P_NONE || n == 0) return;
  Hazards& h = cur().hz;
  HazardCell* cells = cells_of(h, mem);
  const int p = I.pipe;
  for (uint64_t b = off; b < off + n; ++b) {
    HazardCell& c = cells[b];
    const int q = (int)(c.w >> 28);
    const uint32_t s = c.w & SEQ_MASK;
    if (write) {
      // the readers since the last write first: the sync they need also orders that write.
      // Scalar reads complete when issued, so no later instruction can overtake them.
      for (int r = P_V; r < P_COUNT; ++r)
        if (c.r[r] && r != p && !ordered(h, I, r, c.r[r], 'A'))
          report_race(I, op, r, c.r[r], "write after read", mem, pos, b - buf_start, loc);
      if (c.w && !ordered(h, I, q, s, 'W')) report_race(I, op, q, s, "write after write", mem, pos, b - buf_start, loc);
      c = HazardCell{};
      c.w = ((uint32_t)p << 28) | I.seq;
    } else {
      if (c.w && !ordered(h, I, q, s, 'R')) report_race(I, op, q, s, "read after write", mem, pos, b - buf_start, loc);
      c.r[p] = I.seq;
    }
  }
}

}  // namespace forge_emu
