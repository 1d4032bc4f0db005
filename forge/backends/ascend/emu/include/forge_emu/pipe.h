// forge Ascend C CPU emulator: TPipe, TQue / TQueBind and TBuf (ascend.md §2.3).
//
// Checked here: InitBuffer totals against the memory's capacity (UB/L1/L0A/L0B/L0C, with the
// list of buffers and where each was created), queue buffers per position and per kernel,
// AllocTensor with every buffer in use, EnQue beyond the queue depth, DeQue from an empty queue,
// FreeTensor of a tensor the queue does not own.
#pragma once
#include <deque>
#include <tuple>
#include "tensor.h"

namespace AscendC {

class TPipe;

namespace detail {
struct QueState {
  enum SlotState : uint8_t { FREE = 0, ALLOCATED, ENQUEUED, DEQUEUED };
  TPosition pos = TPosition::VECIN;
  int depth = 1;
  int mem = -1, core = -1;
  uint32_t len = 0;
  std::vector<uint32_t> offs;
  std::vector<SlotState> state;
  std::vector<uint32_t> gen;   // per slot: FreeTensors so far, so a tensor kept past its FreeTensor is told apart
  std::deque<int> fifo;
  forge_emu::Loc init_loc;
  // the pipe that fills the queue's buffers and the one that drains them (hazard.h); P_NONE: the
  // queue is taken to order every pipe
  int producer = forge_emu::P_NONE, consumer = forge_emu::P_NONE;
  std::vector<forge_emu::Clock> enq_token, free_token;   // per slot, taken at EnQue / FreeTensor
  bool inited() const { return !offs.empty(); }
};

// The flags a TQue's EnQue/DeQue carry, by position (ascend.md §2.3: MTE2->V for VECIN, V->MTE3
// for VECOUT; the cube queues follow the data path of §2.4.4: GM->L1 on MTE2, L1->L0 on MTE1,
// L0A/L0B->L0C on M, L0C out on FIX). A TQueBind between two positions orders every pipe.
inline std::pair<int, int> queue_pipes(TPosition src, TPosition dst) {
  using namespace forge_emu;
  if (src != dst) return {P_NONE, P_NONE};
  switch (src) {
    case TPosition::VECIN: return {P_MTE2, P_V};
    case TPosition::VECOUT: return {P_V, P_MTE3};
    case TPosition::A1: case TPosition::B1: return {P_MTE2, P_MTE1};
    case TPosition::A2: case TPosition::B2: return {P_MTE1, P_M};
    case TPosition::CO1: return {P_M, P_FIX};
    default: return {P_NONE, P_NONE};
  }
}
}  // namespace detail

class TPipe {
 public:
  TPipe(forge_emu::Loc loc = forge_emu::Loc::current()) {
    using namespace forge_emu;
    Core& c = cur();
    if (c.pipe)
      Diag("bad_api").msg("a second TPipe while one is alive: a kernel creates exactly one TPipe (ascend.md §2.3)").at(loc).fail(EXIT_BAD_API);
    c.pipe = this;
    core_ = c.id;
  }
  ~TPipe() {
    forge_emu::Core* c = forge_emu::launch().cores[core_];
    if (c->pipe == this) c->pipe = nullptr;
  }
  TPipe(const TPipe&) = delete;
  TPipe& operator=(const TPipe&) = delete;

  __aicore__ inline void Init() {}
  __aicore__ inline void Destroy() {}
  __aicore__ inline void Reset() { for (auto& u : used_) u = 0; entries_.clear(); que_bufs_total_ = 0; for (auto& n : que_bufs_pos_) n = 0; }

  // Queue buffers: `num` blocks of `len` bytes, len rounded up to 32 B (ascend.md §2.3).
  template <class Q>
  __aicore__ inline bool InitBuffer(Q& que, uint8_t num, uint32_t len, forge_emu::Loc loc = forge_emu::Loc::current()) {
    using namespace forge_emu;
    detail::QueState& q = que.state_;
    if (q.inited()) Diag("bad_api").msg("InitBuffer called twice on one queue").at(loc).fail(EXIT_BAD_API);
    if (num == 0 || len == 0) Diag("bad_api").kv("num", (int)num).kv("len", (long long)len).msg("InitBuffer needs num >= 1 and len >= 1").at(loc).fail(EXIT_BAD_API);
    int m = position_mem(Q::kPosition);
    if (m < 0) Diag("bad_api").kv("position", position_name(Q::kPosition)).msg("no on-chip memory behind this TPosition on A2 (ascend.md §2.2)").at(loc).fail(EXIT_BAD_API);
    que_bufs_pos_[(int)Q::kPosition] += num;
    que_bufs_total_ += num;
    if (que_bufs_pos_[(int)Q::kPosition] > limits().que_bufs_per_position)
      Diag("too_many_buffers").kv("position", position_name(Q::kPosition)).kv("buffers", que_bufs_pos_[(int)Q::kPosition])
          .kv("limit", limits().que_bufs_per_position)
          .msg("TQue buffers per TPosition exceed the hardware event ids (ascend.md §2.3)").at(loc).fail(EXIT_OVER_ALLOCATION);
    if (que_bufs_total_ + tbufs_ > limits().que_bufs_per_kernel)
      Diag("too_many_buffers").kv("buffers", que_bufs_total_ + tbufs_).kv("limit", limits().que_bufs_per_kernel)
          .msg("buffers per kernel exceed the limit (ascend.md §2.3)").at(loc).fail(EXIT_OVER_ALLOCATION);
    uint32_t one = align32(len);
    q.pos = Q::kPosition; q.depth = Q::kDepth; q.mem = m; q.core = core_; q.len = len; q.init_loc = loc;
    for (int i = 0; i < num; ++i) q.offs.push_back(used_[m] + i * one);
    q.state.assign(num, detail::QueState::FREE);
    q.gen.assign(num, 0);
    std::tie(q.producer, q.consumer) = detail::queue_pipes(Q::kPosition, Q::kDst);
    q.enq_token.assign(num, forge_emu::Clock{});
    q.free_token.assign(num, forge_emu::Clock{});
    reserve(m, Q::kPosition, num, one, loc);
    return true;
  }
  // TBuf: one block of `len` bytes (ascend.md §2.3).
  template <class B>
  __aicore__ inline bool InitBuffer(B& buf, uint32_t len, forge_emu::Loc loc = forge_emu::Loc::current()) {
    using namespace forge_emu;
    int m = position_mem(B::kPosition);
    if (m < 0) Diag("bad_api").kv("position", position_name(B::kPosition)).msg("no on-chip memory behind this TPosition on A2 (ascend.md §2.2)").at(loc).fail(EXIT_BAD_API);
    if (buf.len_) Diag("bad_api").msg("InitBuffer called twice on one TBuf").at(loc).fail(EXIT_BAD_API);
    tbufs_ += 1;
    uint32_t one = align32(len);
    buf.core_ = core_; buf.mem_ = m; buf.off_ = used_[m]; buf.len_ = one;
    reserve(m, B::kPosition, 1, one, loc);
    return true;
  }

  // Event ids handed out by the pipe: 0..5 (7 is TPipe auto-sync, 6 reserved; ascend.md §2.8).
  template <HardEvent E>
  __aicore__ inline TEventID AllocEventID(forge_emu::Loc loc = forge_emu::Loc::current()) {
    int id = FetchEventID(E);
    if (id < 0) forge_emu::Diag("bad_sync").kv("event", forge_emu::event_name(E)).msg("AllocEventID: no free event id").at(loc).fail(forge_emu::EXIT_BAD_SYNC);
    event_alloc_[(int)E] |= 1u << id;
    return (TEventID)id;
  }
  template <HardEvent E>
  __aicore__ inline void ReleaseEventID(TEventID id) { event_alloc_[(int)E] &= ~(1u << (int)id); }
  template <HardEvent E>
  __aicore__ inline TEventID FetchEventID() { return (TEventID)FetchEventID(E); }
  __aicore__ inline int FetchEventID(HardEvent e) {
    int n = forge_emu::limits().event_ids < 6 ? forge_emu::limits().event_ids : 6;
    for (int i = 0; i < n; ++i) if (!(event_alloc_[(int)e] & (1u << i))) return i;
    return -1;
  }

 private:
  static uint32_t align32(uint32_t n) { return (n + 31u) / 32u * 32u; }
  void reserve(int m, TPosition pos, int num, uint32_t one, const forge_emu::Loc& loc) {
    using namespace forge_emu;
    used_[m] += num * one;
    entries_.push_back({m, pos, num, one, loc});
    if (used_[m] > mem_capacity(m)) {
      std::string parts;
      for (const Entry& e : entries_) {
        if (e.mem != m) continue;
        if (!parts.empty()) parts += ", ";
        parts += std::string(position_name(e.pos)) + " " + std::to_string(e.num) + "x" + std::to_string(e.one) + " B (" + where(e.loc) + ")";
      }
      Diag("over_allocation").kv("memory", mem_name(m)).kv("used", (long long)used_[m]).kv("capacity", (long long)mem_capacity(m))
          .kv("buffers", parts)
          .msg(std::string(mem_name(m)) + " " + kib(used_[m]) + " > " + kib(mem_capacity(m)) + ": " + parts)
          .at(loc).fail(EXIT_OVER_ALLOCATION);
    }
  }
  struct Entry { int mem; TPosition pos; int num; uint32_t one; forge_emu::Loc loc; };
  int core_ = -1;
  uint32_t used_[forge_emu::MEM_COUNT] = {};
  std::vector<Entry> entries_;
  int que_bufs_pos_[(int)TPosition::MAX + 1] = {};
  int que_bufs_total_ = 0, tbufs_ = 0;
  uint32_t event_alloc_[(int)HardEvent::MAX] = {};
};

inline TPipe* GetTPipePtr() { return static_cast<TPipe*>(forge_emu::cur().pipe); }

// TQueBind<src, dst, depth>: a queue whose buffers live in src's memory.
template <TPosition src, TPosition dst, int32_t depth, auto mask = 0>
class TQueBind {
 public:
  static constexpr TPosition kPosition = src;
  static constexpr TPosition kDst = dst;
  static constexpr int kDepth = depth;
  detail::QueState state_;

  template <typename T>
  __aicore__ inline LocalTensor<T> AllocTensor(forge_emu::Loc loc = forge_emu::Loc::current()) {
    using namespace forge_emu;
    need_init("AllocTensor", loc);
    for (size_t i = 0; i < state_.state.size(); ++i) {
      if (state_.state[i] == detail::QueState::FREE) {
        state_.state[i] = detail::QueState::ALLOCATED;
        forge_emu::learn(forge_emu::hz(), state_.producer, state_.free_token[i]);  // the consumer is done with it
        return make<T>((int)i);
      }
    }
    Diag("queue_overflow").kv("op", "AllocTensor").kv("position", position_name(src)).kv("buffers", (int)state_.offs.size())
        .kv("in_use", (int)state_.offs.size())
        .msg("AllocTensor with every buffer of the queue in use (no FreeTensor since); the hardware would wait forever")
        .at(loc).fail(EXIT_QUEUE_OVERFLOW);
  }
  template <typename T>
  __aicore__ inline bool EnQue(const LocalTensor<T>& t, forge_emu::Loc loc = forge_emu::Loc::current()) {
    using namespace forge_emu;
    need_init("EnQue", loc);
    int s = owned_slot(t, "EnQue", loc);
    if (state_.state[s] != detail::QueState::ALLOCATED)
      Diag("bad_api").kv("op", "EnQue").kv("position", position_name(src)).msg("EnQue of a tensor that is not freshly allocated (already enqueued or dequeued)").at(loc).fail(EXIT_BAD_API);
    if (depth > 0 && (int)state_.fifo.size() >= depth)
      Diag("queue_overflow").kv("op", "EnQue").kv("position", position_name(src)).kv("depth", depth).kv("queued", (int)state_.fifo.size())
          .msg("EnQue beyond the queue depth (consecutive EnQue without DeQue, ascend.md §2.3)").at(loc).fail(EXIT_QUEUE_OVERFLOW);
    state_.state[s] = detail::QueState::ENQUEUED;
    state_.fifo.push_back(s);
    state_.enq_token[s] = forge_emu::snapshot(forge_emu::hz(), state_.producer);
    return true;
  }
  template <typename T>
  __aicore__ inline LocalTensor<T> DeQue(forge_emu::Loc loc = forge_emu::Loc::current()) {
    using namespace forge_emu;
    need_init("DeQue", loc);
    if (state_.fifo.empty())
      Diag("empty_deque").kv("position", position_name(src)).kv("buffers", (int)state_.offs.size())
          .msg("DeQue from an empty queue: nothing was EnQue'd, the hardware would wait forever").at(loc).fail(EXIT_EMPTY_DEQUE);
    int s = state_.fifo.front();
    state_.fifo.pop_front();
    state_.state[s] = detail::QueState::DEQUEUED;
    forge_emu::learn(forge_emu::hz(), state_.consumer, state_.enq_token[s]);
    return make<T>(s);
  }
  template <typename T>
  __aicore__ inline void FreeTensor(LocalTensor<T>& t, forge_emu::Loc loc = forge_emu::Loc::current()) {
    using namespace forge_emu;
    need_init("FreeTensor", loc);
    int s = owned_slot(t, "FreeTensor", loc);
    if (state_.state[s] == detail::QueState::FREE)
      Diag("bad_api").kv("op", "FreeTensor").kv("position", position_name(src)).msg("FreeTensor of a buffer that is already free").at(loc).fail(EXIT_BAD_API);
    if (state_.state[s] == detail::QueState::ENQUEUED)
      Diag("bad_api").kv("op", "FreeTensor").kv("position", position_name(src)).msg("FreeTensor of a buffer that is still in the queue (EnQue without DeQue)").at(loc).fail(EXIT_BAD_API);
    state_.state[s] = detail::QueState::FREE;
    ++state_.gen[s];
    state_.free_token[s] = forge_emu::snapshot(forge_emu::hz(), state_.consumer);
  }
  __aicore__ inline bool VacantInQue() const { return depth <= 0 || (int)state_.fifo.size() < depth; }
  __aicore__ inline bool HasTensorInQue() const { return !state_.fifo.empty(); }
  __aicore__ inline int32_t GetTensorCountInQue() const { return (int32_t)state_.fifo.size(); }
  __aicore__ inline bool HasIdleBuffer() const {
    for (auto s : state_.state) if (s == detail::QueState::FREE) return true;
    return false;
  }
  __aicore__ inline void FreeAllEvent() {}

 private:
  void need_init(const char* op, const forge_emu::Loc& loc) const {
    if (!state_.inited())
      forge_emu::Diag("bad_api").kv("op", op).kv("position", forge_emu::position_name(src)).msg("queue used before pipe.InitBuffer").at(loc).fail(forge_emu::EXIT_BAD_API);
  }
  template <typename T>
  LocalTensor<T> make(int s) {
    LocalTensor<T> t;
    t.ref_.core = state_.core; t.ref_.mem = state_.mem; t.ref_.pos = src;
    t.ref_.buf_start = state_.offs[s]; t.ref_.buf_end = state_.offs[s] + (state_.len + 31u) / 32u * 32u;
    t.ref_.off = state_.offs[s]; t.ref_.owner = this; t.ref_.slot = s;
    t.ref_.slot_state = reinterpret_cast<const uint8_t*>(&state_.state[s]);
    t.ref_.slot_gen = &state_.gen[s]; t.ref_.gen = state_.gen[s];
    t.count_ = state_.len / (uint32_t)sizeof(T);
    return t;
  }
  template <typename T>
  int owned_slot(const LocalTensor<T>& t, const char* op, const forge_emu::Loc& loc) const {
    if (t.ref_.owner != this || t.ref_.slot < 0 || t.ref_.slot >= (int)state_.offs.size())
      forge_emu::Diag("bad_api").kv("op", op).kv("position", forge_emu::position_name(src))
          .msg(std::string(op) + " of a tensor this queue did not hand out").at(loc).fail(forge_emu::EXIT_BAD_API);
    return t.ref_.slot;
  }
};

template <TPosition pos, int32_t depth = 1, auto mask = 0>
class TQue : public TQueBind<pos, pos, depth, mask> {};

template <TPosition pos = TPosition::VECCALC>
class TBuf {
 public:
  static constexpr TPosition kPosition = pos;
  int core_ = -1, mem_ = -1;
  uint32_t off_ = 0, len_ = 0;

  template <typename T>
  __aicore__ inline LocalTensor<T> Get(forge_emu::Loc loc = forge_emu::Loc::current()) { return Get<T>(len_ / (uint32_t)sizeof(T), loc); }
  template <typename T>
  __aicore__ inline LocalTensor<T> Get(uint32_t count, forge_emu::Loc loc = forge_emu::Loc::current()) {
    return GetWithOffset<T>(count, 0, loc);
  }
  template <typename T>
  __aicore__ inline LocalTensor<T> GetWithOffset(uint32_t count, uint32_t byteOffset, forge_emu::Loc loc = forge_emu::Loc::current()) {
    using namespace forge_emu;
    if (!len_) Diag("bad_api").kv("op", "TBuf::Get").msg("TBuf used before pipe.InitBuffer").at(loc).fail(EXIT_BAD_API);
    if ((uint64_t)byteOffset + (uint64_t)count * sizeof(T) > len_)
      Diag("local_out_of_bounds").kv("op", "TBuf::Get").kv("bytes", (long long)((uint64_t)byteOffset + (uint64_t)count * sizeof(T)))
          .kv("buffer_bytes", (long long)len_).msg("TBuf::Get asks for more than the buffer holds").at(loc).fail(EXIT_LOCAL_OUT_OF_BOUNDS);
    LocalTensor<T> t;
    t.ref_.core = core_; t.ref_.mem = mem_; t.ref_.pos = pos;
    t.ref_.buf_start = off_; t.ref_.buf_end = off_ + len_; t.ref_.off = off_ + byteOffset;
    t.count_ = count;
    return t;
  }
};

}  // namespace AscendC
