// forge Ascend C CPU emulator: configuration, diagnostics, cores and the deterministic scheduler.
//
// Every block (AIV and AIC) runs as a cooperative coroutine (ucontext) on one thread. A block only
// gives up the CPU when it waits on something another block must provide (a cross-core flag, an
// all-core barrier). When every live block waits and nothing can wake any of them, the emulator
// reports a deadlock instead of hanging. Bugs are reported as ONE JSON line on stderr starting with
// {"emu_error": ...} and a distinct exit code (see forge_emu::Exit and README.md).
#pragma once
#include <array>
#include <deque>
#include <map>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <source_location>
#include <string>
#include <vector>
#include <ucontext.h>
#include <sys/mman.h>
#include "types.h"

// ---- hardware sizes: always passed by the runner from the target YAML (runner.py) ------------
#if !defined(FORGE_EMU_UB_BYTES) || !defined(FORGE_EMU_L1_BYTES) || !defined(FORGE_EMU_L0A_BYTES) || \
    !defined(FORGE_EMU_L0B_BYTES) || !defined(FORGE_EMU_L0C_BYTES)
#error "forge emulator: compile through forge.backends.ascend.emu.runner, which defines the FORGE_EMU_* sizes"
#endif
#if !defined(FORGE_EMU_UB_ALIGN) || !defined(FORGE_EMU_L1_ALIGN) || !defined(FORGE_EMU_L0_ALIGN) || \
    !defined(FORGE_EMU_L0C_ALIGN) || !defined(FORGE_EMU_EVENT_IDS) || !defined(FORGE_EMU_QUE_BUFS_PER_POSITION) || \
    !defined(FORGE_EMU_QUE_BUFS_PER_KERNEL) || !defined(FORGE_EMU_CROSS_FLAG_IDS) || \
    !defined(FORGE_EMU_CROSS_FLAG_MAX_PENDING) || !defined(FORGE_EMU_AIC_CORES) || !defined(FORGE_EMU_AIV_CORES)
#error "forge emulator: a FORGE_EMU_* limit is missing; compile through runner.py"
#endif
#ifndef FORGE_EMU_BT_BYTES
#define FORGE_EMU_BT_BYTES 0
#endif
#ifndef FORGE_EMU_FB_BYTES
#define FORGE_EMU_FB_BYTES 0
#endif

namespace forge_emu {

using Loc = std::source_location;
using AscendC::TPosition;
using AscendC::AscendCoreType;

// Exit codes, one per kind of bug (README.md lists them; runner.py maps them back).
enum Exit : int {
  EXIT_OK = 0, EXIT_SPEC = 3, EXIT_OVER_ALLOCATION = 10, EXIT_QUEUE_OVERFLOW = 11, EXIT_EMPTY_DEQUE = 12,
  EXIT_DEADLOCK = 13, EXIT_MISALIGNED = 14, EXIT_GM_OUT_OF_BOUNDS = 15, EXIT_LOCAL_OUT_OF_BOUNDS = 16,
  EXIT_BAD_SYNC = 17, EXIT_FLAG_OVERFLOW = 18, EXIT_BAD_API = 19, EXIT_BAD_LAUNCH = 20, EXIT_MISSING_SYNC = 21,
};

// Limits; all come from the target through -D defines (runner.py, defaults.yaml).
struct Limits {
  uint32_t ub = FORGE_EMU_UB_BYTES, l1 = FORGE_EMU_L1_BYTES, l0a = FORGE_EMU_L0A_BYTES,
           l0b = FORGE_EMU_L0B_BYTES, l0c = FORGE_EMU_L0C_BYTES, bt = FORGE_EMU_BT_BYTES, fb = FORGE_EMU_FB_BYTES;
  uint32_t ub_align = FORGE_EMU_UB_ALIGN, l1_align = FORGE_EMU_L1_ALIGN, l0_align = FORGE_EMU_L0_ALIGN,
           l0c_align = FORGE_EMU_L0C_ALIGN;
  int event_ids = FORGE_EMU_EVENT_IDS;
  int que_bufs_per_position = FORGE_EMU_QUE_BUFS_PER_POSITION, que_bufs_per_kernel = FORGE_EMU_QUE_BUFS_PER_KERNEL;
  int cross_flag_ids = FORGE_EMU_CROSS_FLAG_IDS, cross_flag_max_pending = FORGE_EMU_CROSS_FLAG_MAX_PENDING;
  int aic_cores = FORGE_EMU_AIC_CORES, aiv_cores = FORGE_EMU_AIV_CORES;
};
inline const Limits& limits() { static Limits l; return l; }

// ---- memories of one core -------------------------------------------------------------------
enum Mem : int { MEM_UB = 0, MEM_L1, MEM_L0A, MEM_L0B, MEM_L0C, MEM_BT, MEM_FB, MEM_COUNT };
inline const char* mem_name(int m) {
  static const char* n[] = {"UB", "L1", "L0A", "L0B", "L0C", "BT", "FB"};
  return n[m];
}
inline uint32_t mem_capacity(int m) {
  const Limits& L = limits();
  uint32_t c[] = {L.ub, L.l1, L.l0a, L.l0b, L.l0c, L.bt, L.fb};
  return c[m];
}
inline uint32_t mem_align(int m) {
  const Limits& L = limits();
  uint32_t a[] = {L.ub_align, L.l1_align, L.l0_align, L.l0_align, L.l0c_align, 64, 128};  // BT/FB: ascend.md §1.3
  return a[m];
}
inline int position_mem(TPosition p) {  // ascend.md §2.2 (A2 column)
  switch (p) {
    case TPosition::VECIN: case TPosition::VECOUT: case TPosition::VECCALC: return MEM_UB;
    case TPosition::A1: case TPosition::B1: case TPosition::C1: case TPosition::TSCM: return MEM_L1;
    case TPosition::A2: return MEM_L0A;
    case TPosition::B2: return MEM_L0B;
    case TPosition::CO1: return MEM_L0C;
    case TPosition::C2: return MEM_BT;
    case TPosition::C2PIPE2GM: return MEM_FB;
    default: return -1;
  }
}
inline const char* position_name(TPosition p) {
  static const char* n[] = {"GM", "A1", "A2", "B1", "B2", "C1", "C2", "CO1", "CO2", "VECIN", "VECOUT", "VECCALC",
                            "SPM", "TSCM", "C2PIPE2GM", "C2PIPE2LOCAL"};
  int i = (int)p;
  return i < 16 ? n[i] : "?";
}
inline const char* event_name(AscendC::HardEvent e) {
  static const char* n[] = {"MTE2_MTE1", "MTE1_MTE2", "MTE1_M", "M_MTE1", "MTE2_V", "V_MTE2", "MTE3_V", "V_MTE3",
      "M_V", "V_M", "V_V", "MTE3_MTE1", "MTE1_MTE3", "MTE1_V", "MTE2_M", "M_MTE2", "V_MTE1", "M_FIX", "FIX_M",
      "MTE3_MTE2", "MTE2_MTE3", "S_V", "V_S", "S_MTE2", "MTE2_S", "S_MTE3", "MTE3_S", "MTE2_FIX", "FIX_MTE2",
      "FIX_S", "M_S", "FIX_MTE3", "MTE1_FIX", "FIX_MTE1", "FIX_FIX"};
  int i = (int)e;
  return i < (int)AscendC::HardEvent::MAX ? n[i] : "?";
}

// ---- diagnostics: one JSON line, then exit ----------------------------------------------------
inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += c; }
    else if ((unsigned char)c < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\u%04x", c); o += b; }
    else o += c;
  }
  return o;
}
inline std::string where(const Loc& l) {
  std::string f = l.file_name();
  size_t s = f.find_last_of('/');
  if (s != std::string::npos) f = f.substr(s + 1);
  return f + ":" + std::to_string(l.line());
}

struct Core;
Core* current_core();

class Diag {
 public:
  explicit Diag(const char* kind) { s_ = "{\"emu_error\": \"" + std::string(kind) + "\""; }
  Diag& kv(const char* k, const std::string& v) { s_ += ", \"" + std::string(k) + "\": \"" + json_escape(v) + "\""; return *this; }
  Diag& kv(const char* k, const char* v) { return kv(k, std::string(v)); }
  Diag& kv(const char* k, long long v) { s_ += ", \"" + std::string(k) + "\": " + std::to_string(v); return *this; }
  Diag& kv(const char* k, int v) { return kv(k, (long long)v); }
  Diag& kv(const char* k, unsigned v) { return kv(k, (long long)v); }
  Diag& kv(const char* k, unsigned long v) { return kv(k, (long long)v); }
  Diag& kv(const char* k, long v) { return kv(k, (long long)v); }
  Diag& raw(const char* k, const std::string& json) { s_ += ", \"" + std::string(k) + "\": " + json; return *this; }
  Diag& at(const Loc& l) { return kv("where", where(l)); }
  Diag& msg(const std::string& m) { return kv("detail", m); }
  [[noreturn]] void fail(int code);
 private:
  std::string s_;
};

// ---- cores ----------------------------------------------------------------------------------
constexpr int MAX_CROSS_FLAGS = 64;
constexpr int MAX_EVENTS = 16;

// The pipes whose order hazard.h checks (ascend.md §2.8 table), numbered as pipe_t numbers them
// up to MTE3; FIX gets the next index.
enum Pipe : int { P_S = 0, P_V, P_M, P_MTE1, P_MTE2, P_MTE3, P_FIX, P_COUNT, P_NONE = -1 };
// A vector clock over every (core, pipe) of the launch, indexed core id * P_COUNT + pipe: how many
// of each one's instructions are known to be complete.
using Clock = std::vector<uint32_t>;

// What one core knows of the order between pipes (hazard.h): per pipe, a clock; the instructions
// issued so far; per byte of each local memory the last writer and readers; the clocks that
// pending flags carry.
struct HazardCell {
  uint32_t w = 0;            // last writer: pipe << 28 | its instruction number (0: never written)
  uint32_t r[P_COUNT] = {};  // per pipe, the instruction number of its last read since that write
};
struct Hazards {
  int self = -1;                    // Core::id; -1 until first used
  uint32_t issued[P_COUNT] = {};
  Clock know[P_COUNT];              // know[p][n]: node n's instructions up to this number are complete before p's next
  std::vector<const char*> op[P_COUNT];
  std::vector<Loc> at[P_COUNT];     // op / at [p][n - 1]: instruction n of pipe p
  HazardCell* cells[MEM_COUNT] = {};
  std::vector<Clock> token;         // [HardEvent * MAX_EVENTS + id]: the clock a SetFlag left
  // per cross-core counter (mode 0, 1, 2, and on the AIC from AIV 0 and 1) and flag: the clock of
  // each set not yet waited for, oldest first
  std::deque<Clock> cross[5][MAX_CROSS_FLAGS];
};
// GM: per byte, its last writer and up to three readers since, as (node + 1, instruction number).
struct GmCell {
  uint32_t wnode = 0, wseq = 0;
  uint32_t rnode[3] = {}, rseq[3] = {};
};

struct Core {
  int id = 0;                    // position in the scheduler's list
  AscendCoreType type = AscendCoreType::AIV;
  int block_idx = 0, sub_idx = 0, group = 0;  // group: the physical AI core (AIC + its AIVs)
  uint8_t* mem[MEM_COUNT] = {};
  void* pipe = nullptr;          // the TPipe of this block (one per kernel, ascend.md §2.3)
  bool event_pending[(int)AscendC::HardEvent::MAX][MAX_EVENTS] = {};
  Hazards hz;                    // pipe-order check (hazard.h)
  Loc event_set_at[(int)AscendC::HardEvent::MAX][MAX_EVENTS];
  // cross-core flag counters (ascend.md §2.9): per mode; mode-2 sets from each AIV kept apart on the AIC
  int cross_cnt0[MAX_CROSS_FLAGS] = {}, cross_cnt1[MAX_CROSS_FLAGS] = {}, cross_cnt2[MAX_CROSS_FLAGS] = {};
  int cross_from_aiv[2][MAX_CROSS_FLAGS] = {};
  // scheduling
  ucontext_t ctx{};
  void* stack = nullptr;
  bool started = false, done = false;
  std::function<bool()> ready;   // set while blocked: true once the block may continue
  std::string wait_kind;         // what it waits on, for the deadlock report
  int wait_flag = -1;
  Loc wait_loc;

  uint8_t* memory(int m) {
    if (!mem[m]) {
      uint32_t cap = mem_capacity(m);
      mem[m] = static_cast<uint8_t*>(std::malloc(cap ? cap : 1));
      std::memset(mem[m], 0xFF, cap);  // poison: uninitialised reads give NaN / -1
    }
    return mem[m];
  }
  const char* type_name() const { return type == AscendCoreType::AIC ? "AIC" : "AIV"; }
};

struct GmRegion { uint8_t* base; uint64_t bytes; std::string name; };

struct Launch {
  int kernel_type = AscendC::KERNEL_TYPE_AIV_ONLY;
  int block_dim = 1;
  std::vector<Core*> cores;
  std::vector<GmRegion> gm;
  Core* current = nullptr;
  ucontext_t sched_ctx{};
  std::function<void()> entry;
  uint8_t* sys_workspace = nullptr;
  uint8_t* user_workspace = nullptr;
  // SyncAll barrier state, per core type
  long long syncall_arrived[2] = {0, 0};
  std::map<long long, Clock> syncall_clock[2];   // per generation: the join of what every arriving core knew
  std::vector<GmCell*> gm_cells;                 // per GmRegion, allocated when first touched (hazard.h)
};
inline Launch& launch() { static Launch L; return L; }
inline Core* current_core() { return launch().current; }
inline Core& cur() { return *launch().current; }

[[noreturn]] inline void Diag::fail(int code) {
  Core* c = current_core();
  if (c) { kv("block", c->block_idx); kv("core", c->type_name()); if (c->type == AscendCoreType::AIV) kv("sub_block", c->sub_idx); }
  s_ += "}";
  std::fflush(stdout);
  std::fprintf(stderr, "%s\n", s_.c_str());
  std::fflush(stderr);
  std::_Exit(code);
}

inline std::string kib(uint64_t b) {
  char buf[64];
  if (b % 1024 == 0) std::snprintf(buf, sizeof buf, "%llu KiB", (unsigned long long)(b / 1024));
  else std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  return buf;
}

// ---- GM bounds ------------------------------------------------------------------------------
inline void register_gm(uint8_t* base, uint64_t bytes, const std::string& name) { launch().gm.push_back({base, bytes, name}); }
inline void check_gm(const void* p, uint64_t bytes, const char* what, const Loc& loc) {
  if (bytes == 0) return;
  const uint8_t* a = static_cast<const uint8_t*>(p);
  for (const GmRegion& r : launch().gm)
    if (a >= r.base && a + bytes <= r.base + r.bytes) return;
  const GmRegion* near = nullptr;
  for (const GmRegion& r : launch().gm)
    if (a >= r.base && a < r.base + r.bytes + (1u << 20)) near = &r;
  Diag d("gm_out_of_bounds");
  d.kv("op", what).kv("bytes", (long long)bytes);
  if (near) d.kv("buffer", near->name).kv("offset", (long long)(a - near->base)).kv("buffer_bytes", (long long)near->bytes);
  d.msg(std::string(what) + " touches GM outside every kernel argument buffer").at(loc).fail(EXIT_GM_OUT_OF_BOUNDS);
}

// ---- blocking and scheduling ----------------------------------------------------------------
inline void yield_to_scheduler() {
  Core* c = current_core();
  swapcontext(&c->ctx, &launch().sched_ctx);
}
// Block the current core until `ok()` holds; `kind`/`flag`/`loc` name the wait for deadlock reports.
inline void block_until(std::function<bool()> ok, const char* kind, int flag, const Loc& loc) {
  Core* c = current_core();
  while (!ok()) {
    c->ready = ok; c->wait_kind = kind; c->wait_flag = flag; c->wait_loc = loc;
    yield_to_scheduler();
  }
  c->ready = nullptr; c->wait_kind.clear(); c->wait_flag = -1;
}

inline void core_trampoline() {
  launch().entry();
  Core* c = current_core();
  c->done = true;
  swapcontext(&c->ctx, &launch().sched_ctx);
}

[[noreturn]] inline void report_deadlock() {
  Launch& L = launch();
  Core* first = nullptr;
  std::string waiting = "[";
  for (Core* c : L.cores) {
    if (c->done) continue;
    if (!first) first = c;
    if (waiting.size() > 1) waiting += ", ";
    waiting += "{\"block\": " + std::to_string(c->block_idx) + ", \"core\": \"" + c->type_name() +
               "\", \"wait\": \"" + c->wait_kind + "\", \"flag\": " + std::to_string(c->wait_flag) +
               ", \"where\": \"" + json_escape(where(c->wait_loc)) + "\"}";
  }
  waiting += "]";
  L.current = first;
  Diag("deadlock").kv("wait", first->wait_kind).kv("flag", first->wait_flag).at(first->wait_loc)
      .msg("every live block waits on a flag that no block can set any more").raw("waiting", waiting)
      .fail(EXIT_DEADLOCK);
}

// Runs every core to completion, round robin, deterministic.
inline void run_cores() {
  Launch& L = launch();
  const size_t stack_bytes = 8u << 20;
  for (Core* c : L.cores) {
    c->stack = mmap(nullptr, stack_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    getcontext(&c->ctx);
    c->ctx.uc_stack.ss_sp = c->stack;
    c->ctx.uc_stack.ss_size = stack_bytes;
    c->ctx.uc_link = nullptr;
    makecontext(&c->ctx, core_trampoline, 0);
  }
  while (true) {
    bool live = false, progress = false;
    for (Core* c : L.cores) {
      if (c->done) continue;
      live = true;
      if (c->ready && !c->ready()) continue;
      L.current = c;
      progress = true;
      swapcontext(&L.sched_ctx, &c->ctx);
      L.current = nullptr;
    }
    if (!live) break;
    if (!progress) report_deadlock();
  }
  for (Core* c : L.cores) munmap(c->stack, stack_bytes);
}

inline const char* kernel_type_name(int t) {
  static const char* n[] = {"KERNEL_TYPE_AIV_ONLY", "KERNEL_TYPE_AIC_ONLY", "KERNEL_TYPE_MIX_AIV_1_0",
      "KERNEL_TYPE_MIX_AIC_1_0", "KERNEL_TYPE_MIX_AIC_1_1", "KERNEL_TYPE_MIX_AIC_1_2", "KERNEL_TYPE_AICORE",
      "KERNEL_TYPE_MIX_VECTOR_CORE"};
  return (t >= 0 && t < 8) ? n[t] : "?";
}
inline bool kernel_is_mix() {
  int t = launch().kernel_type;
  return t == AscendC::KERNEL_TYPE_MIX_AIC_1_1 || t == AscendC::KERNEL_TYPE_MIX_AIC_1_2 ||
         t == AscendC::KERNEL_TYPE_MIX_AIV_1_0 || t == AscendC::KERNEL_TYPE_MIX_AIC_1_0;
}

// The statement KERNEL_TASK_TYPE_DEFAULT(t) checks that the runner launched the kernel as `t`.
inline void declare_kernel_type(int t, const Loc& loc = Loc::current()) {
  if (t != launch().kernel_type)
    Diag("bad_launch").kv("declared", kernel_type_name(t)).kv("launched", kernel_type_name(launch().kernel_type))
        .msg("the kernel declares a different kernel type than the one it was launched as (pass kernel_type to run_kernel)")
        .at(loc).fail(EXIT_BAD_LAUNCH);
}

// Builds the block list of a launch (ascend.md §2.1 "What blockDim counts", §2.9 1:2 pairing).
inline void make_cores(int kernel_type, int block_dim) {
  Launch& L = launch();
  L.kernel_type = kernel_type;
  L.block_dim = block_dim;
  auto add = [&](AscendCoreType t, int idx, int sub, int group) {
    Core* c = new Core();
    c->id = (int)L.cores.size(); c->type = t; c->block_idx = idx; c->sub_idx = sub; c->group = group;
    L.cores.push_back(c);
  };
  int aiv_per_aic = 0;
  bool with_aic = false, with_aiv = false;
  switch (kernel_type) {
    case AscendC::KERNEL_TYPE_AIV_ONLY: case AscendC::KERNEL_TYPE_MIX_AIV_1_0: case AscendC::KERNEL_TYPE_MIX_VECTOR_CORE:
      with_aiv = true; break;
    case AscendC::KERNEL_TYPE_AIC_ONLY: case AscendC::KERNEL_TYPE_MIX_AIC_1_0: case AscendC::KERNEL_TYPE_AICORE:
      with_aic = true; break;
    case AscendC::KERNEL_TYPE_MIX_AIC_1_1: with_aic = with_aiv = true; aiv_per_aic = 1; break;
    case AscendC::KERNEL_TYPE_MIX_AIC_1_2: with_aic = with_aiv = true; aiv_per_aic = 2; break;
    default: Diag("bad_launch").kv("kernel_type", kernel_type).msg("unknown kernel type").fail(EXIT_BAD_LAUNCH);
  }
  if (block_dim < 1 || block_dim > 65535)
    Diag("bad_launch").kv("block_dim", block_dim).msg("blockDim must be in [1, 65535] (ascend.md §2.1)").fail(EXIT_BAD_LAUNCH);
  if (with_aic && with_aiv && block_dim > limits().aic_cores)
    Diag("bad_launch").kv("block_dim", block_dim).kv("ai_cores", limits().aic_cores)
        .msg("a mixed kernel's blockDim is at most the number of physical AI cores (ascend.md §2.1)").fail(EXIT_BAD_LAUNCH);
  for (int b = 0; b < block_dim; ++b) {
    if (with_aic) add(AscendCoreType::AIC, b, 0, b);
    if (with_aiv && aiv_per_aic == 0) add(AscendCoreType::AIV, b, 0, b);
    for (int s = 0; s < aiv_per_aic; ++s) add(AscendCoreType::AIV, b * aiv_per_aic + s, s, b);
  }
}

inline Core* find_core(AscendCoreType t, int group, int sub) {
  for (Core* c : launch().cores)
    if (c->type == t && c->group == group && (t == AscendCoreType::AIC || c->sub_idx == sub)) return c;
  return nullptr;
}
inline int aivs_per_group() {
  int t = launch().kernel_type;
  return t == AscendC::KERNEL_TYPE_MIX_AIC_1_2 ? 2 : 1;
}

}  // namespace forge_emu
