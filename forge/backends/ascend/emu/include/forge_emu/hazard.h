// forge Ascend C CPU emulator: the order between pipes and between cores (ascend.md §2.8, §2.9).
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
//   - the high-level Matmul synchronises internally and is taken as a full barrier; it loads A, B
//     and a GM bias on MTE2, and its results leave through Fixpipe after those loads, so its GM
//     reads are MTE2 reads that its FIX writes know complete (lib/matmul_intf.h).
// Each byte of UB/L1/L0 remembers its last writer and, per pipe, its last reader. An access that
// depends on another pipe's earlier access (read after write, write after write, write after
// read) must know that access complete, or the kernel is reported as `missing_sync`, naming both
// instructions and the sync that would order them. Within one pipe instructions issue in order but
// may overlap (ascend.md §5 "Concurrency rules"): a vector op reading a vector result needs
// PipeBarrier<PIPE_V> (§2.8), and MTE2 or MTE3 transfers with overlapping destinations need
// PipeBarrier on that pipe (§2.4.5). Scalar reads complete when issued, so no pipe waits for them;
// scalar writes must be flagged to the pipe that reads them (S_V, S_MTE3; §2.8 "Automatic
// synchronisation").
// GM is shared by every core, so the clocks run over every (core, pipe) of the launch: a
// CrossCoreSetFlag<mode, pipe> carries what `pipe` of the setting core knew and had issued, and
// the CrossCoreWaitFlag that consumes it (issued on PIPE_S, so it holds back every later
// instruction of the waiting core) hands that to every pipe there (§2.9); SyncAll joins every
// core's. A GM byte remembers its last writer and up to three readers since; a core that reads
// another core's GM write, or overwrites what another core reads or wrote, without a flag chain
// between them races (a workspace slot reused before its reader is done, a flag set after the
// wrong pipe).
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

inline int nodes() { return (int)launch().cores.size() * P_COUNT; }
inline Hazards& hz(Core& c) {
  Hazards& h = c.hz;
  if (h.self < 0) {
    h.self = c.id;
    for (int p = 0; p < P_COUNT; ++p) h.know[p].assign(nodes(), 0);
    h.token.assign((size_t)AscendC::HardEvent::MAX * MAX_EVENTS, Clock());
  }
  return h;
}
inline Hazards& hz() { return hz(cur()); }
inline int node(const Hazards& h, int pipe) { return h.self * P_COUNT + pipe; }

inline Instr issue(int pipe, const char* op, const Loc& loc) {
  if (pipe == P_NONE) return {};
  Hazards& h = hz();
  if (h.issued[pipe] >= SEQ_MASK)
    Diag("bad_api").kv("op", op).msg("more than 2^28 instructions on one pipe: too long a run for the emulator's order check").at(loc).fail(EXIT_BAD_API);
  h.op[pipe].push_back(op);
  h.at[pipe].push_back(loc);
  return {pipe, ++h.issued[pipe]};
}

// ---- sync: what each pipe learns ------------------------------------------------------------
// What pipe `src` knows, its own instructions so far included (a flag fires once they are done);
// src < 0: what every pipe of this core knows and everything it has issued.
inline Clock snapshot(Hazards& h, int src) {
  Clock t(nodes(), 0);
  for (int p = 0; p < P_COUNT; ++p) {
    if (src >= 0 && p != src) continue;
    for (size_t n = 0; n < t.size(); ++n) t[n] = std::max(t[n], h.know[p][n]);
    t[node(h, p)] = h.issued[p];
  }
  return t;
}
inline void learn(Hazards& h, int dst, const Clock& t) {  // dst < 0: every pipe
  if (t.empty()) return;
  for (int p = 0; p < P_COUNT; ++p)
    if (dst < 0 || p == dst)
      for (size_t n = 0; n < t.size(); ++n) h.know[p][n] = std::max(h.know[p][n], t[n]);
}
inline void barrier(Hazards& h, int pipe) {  // P_NONE: PIPE_ALL
  if (pipe == P_NONE) learn(h, -1, snapshot(h, -1));
  else h.know[pipe][node(h, pipe)] = h.issued[pipe];
}
inline void full_barrier() { barrier(hz(), P_NONE); }

// ---- accesses -------------------------------------------------------------------------------
// A read-after-write / write-after-write / write-after-read between instruction `I` of this core
// and an earlier access (node q, instruction s): ordered when I's pipe knows it complete. `kind`
// is 'R' (read after write), 'W' (write after write) or 'A' (write after read). Same-pipe pairs
// are ordered by issue except the ones ascend.md names (see the header comment).
inline bool ordered(const Hazards& h, const Instr& I, int q, uint32_t s, char kind) {
  const int p = I.pipe;
  if (q == node(h, p)) {
    if (s == I.seq) return true;
    if (p == P_V && kind == 'R') return h.know[p][q] >= s;
    if ((p == P_MTE2 || p == P_MTE3) && kind == 'W') return h.know[p][q] >= s;
    return true;
  }
  return h.know[p][q] >= s;
}

[[noreturn]] inline void report_race(const Instr& I, const char* op, int q, uint32_t s, const char* hazard,
                                     const std::string& memory, const std::string& position, uint64_t offset,
                                     const Loc& loc) {
  const Hazards& h = hz();
  const int qcore = q / P_COUNT, qpipe = q % P_COUNT;
  const Hazards& qh = launch().cores[qcore]->hz;
  const bool remote = qcore != h.self;
  std::string needs;
  if (remote) needs = "CrossCoreSetFlag<mode, PIPE_" + std::string(pipe_name(qpipe)) + "> on that core after it, waited for here";
  else if (qpipe == I.pipe) needs = std::string("PipeBarrier<PIPE_") + pipe_name(qpipe) + ">()";
  else needs = std::string("SetFlag/WaitFlag<HardEvent::") + pipe_name(qpipe) + "_" + pipe_name(I.pipe) + ">";
  const std::string hz_kind = hazard;
  const char* what = hz_kind == "read after write" ? "reads what" : "overwrites what";
  const char* earlier = hz_kind == "write after read" ? "may still be reading" : "wrote";
  const Core& qc = *launch().cores[qcore];
  std::string who = remote ? std::string(", ") + qc.type_name() + " block " + std::to_string(qc.block_idx) : "";
  std::string prev_op = qh.op[qpipe][s - 1], prev_at = where(qh.at[qpipe][s - 1]);
  Diag d("missing_sync");
  d.kv("op", op).kv("pipe", pipe_name(I.pipe)).kv("hazard", hazard).kv("memory", memory);
  if (!position.empty()) d.kv("position", position);
  d.kv("offset", (long long)offset).kv("earlier_op", prev_op).kv("earlier_pipe", pipe_name(qpipe)).kv("earlier_where", prev_at);
  if (remote) d.kv("earlier_block", qc.block_idx).kv("earlier_core", qc.type_name());
  d.kv("needs", needs)
      .msg(std::string(op) + " (" + pipe_name(I.pipe) + ") " + what + " " + prev_op + " (" + pipe_name(qpipe) + who + ", " + prev_at +
           ") " + earlier + " with nothing ordering the two; the hardware races here. Needs " + needs +
           (remote ? "" : " between them"))
      .at(loc).fail(EXIT_MISSING_SYNC);
}

inline HazardCell* cells_of(Hazards& h, int mem) {
  if (!h.cells[mem]) {
    uint32_t cap = mem_capacity(mem);
    h.cells[mem] = static_cast<HazardCell*>(std::calloc(cap ? cap : 1, sizeof(HazardCell)));
  }
  return h.cells[mem];
}

// Records bytes [off, off + n) of local memory `mem` (offsets from the memory's base) as read or
// written by `I` after checking each against the accesses before it. `buf_start` only names the
// offset in reports.
__attribute__((optimize("O2"))) inline void touch(const Instr& I, const char* op, int mem, AscendC::TPosition pos,
                                                  uint32_t buf_start, uint64_t off, uint64_t n, bool write, const Loc& loc) {
  if (I.pipe == P_NONE || n == 0) return;
  Hazards& h = hz();
  HazardCell* cells = cells_of(h, mem);
  const int p = I.pipe, base = h.self * P_COUNT;
  for (uint64_t b = off; b < off + n; ++b) {
    HazardCell& c = cells[b];
    const int q = base + (int)(c.w >> 28);
    const uint32_t s = c.w & SEQ_MASK;
    if (write) {
      // the readers since the last write first: the sync they need also orders that write.
      // Scalar reads complete when issued, so no later instruction can overtake them.
      for (int r = P_V; r < P_COUNT; ++r)
        if (c.r[r] && !ordered(h, I, base + r, c.r[r], 'A'))
          report_race(I, op, base + r, c.r[r], "write after read", mem_name(mem), position_name(pos), b - buf_start, loc);
      if (c.w && !ordered(h, I, q, s, 'W'))
        report_race(I, op, q, s, "write after write", mem_name(mem), position_name(pos), b - buf_start, loc);
      c = HazardCell{};
      c.w = ((uint32_t)p << 28) | I.seq;
    } else {
      if (c.w && !ordered(h, I, q, s, 'R'))
        report_race(I, op, q, s, "read after write", mem_name(mem), position_name(pos), b - buf_start, loc);
      c.r[p] = I.seq;
    }
  }
}

// The same for GM bytes [p, p + n), which every core shares: the order between cores is what
// CrossCoreSetFlag/CrossCoreWaitFlag and SyncAll carry (sync.h). Bytes outside every kernel
// argument are not tracked (check_gm reports them).
__attribute__((optimize("O2"))) inline void touch_gm(const Instr& I, const char* op, const void* ptr, uint64_t n, bool write,
                                                     const Loc& loc) {
  if (I.pipe == P_NONE || n == 0) return;
  Launch& L = launch();
  const uint8_t* a = static_cast<const uint8_t*>(ptr);
  size_t ri = 0;
  while (ri < L.gm.size() && !(a >= L.gm[ri].base && a + n <= L.gm[ri].base + L.gm[ri].bytes)) ++ri;
  if (ri == L.gm.size()) return;
  if (L.gm_cells.size() < L.gm.size()) L.gm_cells.resize(L.gm.size(), nullptr);
  if (!L.gm_cells[ri]) L.gm_cells[ri] = static_cast<GmCell*>(std::calloc(L.gm[ri].bytes ? L.gm[ri].bytes : 1, sizeof(GmCell)));
  Hazards& h = hz();
  const uint32_t me = (uint32_t)node(h, I.pipe) + 1;
  const uint64_t off = (uint64_t)(a - L.gm[ri].base);
  for (uint64_t b = off; b < off + n; ++b) {
    GmCell& c = L.gm_cells[ri][b];
    if (write) {
      for (int k = 0; k < 3; ++k)
        if (c.rnode[k] && (int)c.rnode[k] - 1 != node(h, P_S) &&
            !ordered(h, I, (int)c.rnode[k] - 1, c.rseq[k], 'A'))
          report_race(I, op, (int)c.rnode[k] - 1, c.rseq[k], "write after read", "GM", L.gm[ri].name, b, loc);
      if (c.wnode && !ordered(h, I, (int)c.wnode - 1, c.wseq, 'W'))
        report_race(I, op, (int)c.wnode - 1, c.wseq, "write after write", "GM", L.gm[ri].name, b, loc);
      c = GmCell{};
      c.wnode = me; c.wseq = I.seq;
    } else {
      if (c.wnode && !ordered(h, I, (int)c.wnode - 1, c.wseq, 'R'))
        report_race(I, op, (int)c.wnode - 1, c.wseq, "read after write", "GM", L.gm[ri].name, b, loc);
      int k = 0;   // this node's slot, else a free one, else the oldest reader's
      while (k < 3 && c.rnode[k] && c.rnode[k] != me) ++k;
      if (k == 3) { k = 0; for (int j = 1; j < 3; ++j) if (c.rseq[j] < c.rseq[k]) k = j; }
      c.rnode[k] = me; c.rseq[k] = I.seq;
    }
  }
}

}  // namespace forge_emu
