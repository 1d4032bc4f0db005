// forge Ascend C CPU emulator: intra-core flags, barriers, cross-core flags, block ids (ascend.md §2.8, §2.9).
//
// Within one block the emulator runs instructions in program order, so a WaitFlag whose SetFlag was
// not issued before it can never be satisfied: it is reported as a deadlock naming the event and
// id. Cross-core waits block the coroutine; the scheduler reports a deadlock when every live block
// waits on a flag nothing can set any more.
#pragma once
#include "hazard.h"

namespace AscendC {

namespace detail {
// Legal src->dst pairs on 2201 (ascend.md §2.8, tables 2 and 3).
inline bool event_legal(HardEvent e, AscendCoreType t) {
  using H = HardEvent;
  if (t == AscendCoreType::AIV) {
    switch (e) {
      case H::S_V: case H::S_MTE2: case H::S_MTE3: case H::V_S: case H::V_MTE2: case H::V_MTE3: case H::MTE2_S:
      case H::MTE2_V: case H::MTE2_MTE3: case H::MTE3_S: case H::MTE3_V: case H::MTE3_MTE2: return true;
      default: return false;
    }
  }
  switch (e) {
    case H::M_MTE1: case H::M_MTE2: case H::M_FIX: case H::MTE1_M: case H::MTE1_MTE2: case H::MTE1_MTE3:
    case H::MTE1_FIX: case H::MTE2_M: case H::MTE2_MTE1: case H::MTE2_MTE3: case H::MTE3_MTE1: case H::MTE3_MTE2:
    case H::FIX_M: case H::FIX_MTE1: return true;
    default: return false;
  }
}
inline void check_event(HardEvent e, int32_t id, const char* op, const forge_emu::Loc& loc) {
  using namespace forge_emu;
  if (id < 0 || id >= limits().event_ids || id >= MAX_EVENTS)
    Diag("bad_sync").kv("op", op).kv("event", event_name(e)).kv("id", id).kv("event_ids", limits().event_ids)
        .msg("event id out of range (ascend.md §2.8)").at(loc).fail(EXIT_BAD_SYNC);
  if (!event_legal(e, cur().type))
    Diag("bad_sync").kv("op", op).kv("event", event_name(e)).kv("id", id)
        .msg(std::string("HardEvent::") + event_name(e) + " is not a legal pair on " + cur().type_name() + " (ascend.md §2.8)")
        .at(loc).fail(EXIT_BAD_SYNC);
}
}  // namespace detail

template <HardEvent E>
__aicore__ inline void SetFlag(int32_t id, forge_emu::Loc loc = forge_emu::Loc::current()) {
  using namespace forge_emu;
  detail::check_event(E, id, "SetFlag", loc);
  Core& c = cur();
  if (c.event_pending[(int)E][id])
    Diag("bad_sync").kv("op", "SetFlag").kv("event", event_name(E)).kv("id", id).kv("first_set", where(c.event_set_at[(int)E][id]))
        .msg("SetFlag twice on the same event and id without a WaitFlag between (undefined, ascend.md §2.8)").at(loc).fail(EXIT_BAD_SYNC);
  c.event_pending[(int)E][id] = true;
  c.event_set_at[(int)E][id] = loc;
  hz(c).token[(int)E * MAX_EVENTS + id] = snapshot(hz(c), event_pipes(E).first);  // fires once the source pipe is done
}

template <HardEvent E>
__aicore__ inline void WaitFlag(int32_t id, forge_emu::Loc loc = forge_emu::Loc::current()) {
  using namespace forge_emu;
  detail::check_event(E, id, "WaitFlag", loc);
  Core& c = cur();
  if (!c.event_pending[(int)E][id])
    Diag("deadlock").kv("wait", "WaitFlag").kv("event", event_name(E)).kv("flag", id)
        .msg(std::string("WaitFlag<HardEvent::") + event_name(E) + ">(" + std::to_string(id) +
             ") with no matching SetFlag issued before it on this block: the pipe waits forever")
        .at(loc).fail(EXIT_DEADLOCK);
  c.event_pending[(int)E][id] = false;
  learn(hz(c), event_pipes(E).second, hz(c).token[(int)E * MAX_EVENTS + id]);
}

// Orders instructions within one pipe (PIPE_ALL: within and between all of them); hazard.h
// checks what it orders.
template <pipe_t pipe>
__aicore__ inline void PipeBarrier(forge_emu::Loc loc = forge_emu::Loc::current()) {
  if (pipe == PIPE_S)
    forge_emu::Diag("bad_sync").kv("op", "PipeBarrier").msg("PipeBarrier does not support PIPE_S (ascend.md §2.8)").at(loc).fail(forge_emu::EXIT_BAD_SYNC);
  if (pipe == PIPE_ALL) forge_emu::full_barrier();
  else if (forge_emu::pipe_index(pipe) != forge_emu::P_NONE) forge_emu::barrier(forge_emu::hz(), forge_emu::pipe_index(pipe));
}

// ---- block ids (ascend.md §2.1 "Core index") --------------------------------------------------
__aicore__ inline int64_t GetBlockIdx() { return forge_emu::cur().block_idx; }
__aicore__ inline int64_t GetBlockNum() { return forge_emu::launch().block_dim; }
__aicore__ inline int64_t GetSubBlockIdx() { return forge_emu::cur().sub_idx; }
__aicore__ inline int64_t GetSubBlockNum() {
  return forge_emu::cur().type == AscendCoreType::AIV && forge_emu::kernel_is_mix() ? forge_emu::aivs_per_group() : 1;
}
__aicore__ inline int64_t GetTaskRation() { return GetSubBlockNum(); }

// ---- cross-core flags (ascend.md §2.9) ------------------------------------------------------
namespace detail {
// One set of a cross-core counter; `carried` is the clock the set hands to the wait that consumes it.
inline void bump(int& counter, std::deque<forge_emu::Clock>& carried, const forge_emu::Clock& clock, uint16_t flagId,
                 const forge_emu::Loc& loc) {
  using namespace forge_emu;
  counter += 1;
  carried.push_back(clock);
  if (counter > limits().cross_flag_max_pending)
    Diag("flag_overflow").kv("flag", (int)flagId).kv("pending", counter).kv("limit", limits().cross_flag_max_pending)
        .msg("a cross-core flag was set more times than allowed without a wait (ascend.md §2.9); the hardware hangs")
        .at(loc).fail(EXIT_FLAG_OVERFLOW);
}
}  // namespace detail

template <uint8_t modeId, pipe_t pipe>
__aicore__ inline void CrossCoreSetFlag(uint16_t flagId, forge_emu::Loc loc = forge_emu::Loc::current()) {
  using namespace forge_emu;
  Core& c = cur();
  if (pipe == PIPE_S || pipe == PIPE_ALL)
    Diag("bad_sync").kv("op", "CrossCoreSetFlag").kv("flag", (int)flagId).msg("CrossCoreSetFlag takes a pipe other than PIPE_S / PIPE_ALL (ascend.md §2.9)").at(loc).fail(EXIT_BAD_SYNC);
  if ((int)flagId >= limits().cross_flag_ids || flagId >= MAX_CROSS_FLAGS)
    Diag("bad_sync").kv("op", "CrossCoreSetFlag").kv("flag", (int)flagId).kv("flag_ids", limits().cross_flag_ids)
        .msg("cross-core flag id out of range (ascend.md §2.9)").at(loc).fail(EXIT_BAD_SYNC);
  // the set fires once `pipe`'s earlier instructions are done (§2.9): it carries what that pipe knows
  const Clock clock = snapshot(hz(c), pipe_index(pipe));
  if (modeId == 0) {
    // every core of this type counts the set; a wait consumes one set from each of them
    for (Core* o : launch().cores)
      if (o->type == c.type) { o->cross_cnt0[flagId] += 1; hz(*o).cross[0][flagId].push_back(clock); }
  } else if (modeId == 1) {
    if (c.type != AscendCoreType::AIV || aivs_per_group() != 2 || !kernel_is_mix())
      Diag("bad_sync").kv("op", "CrossCoreSetFlag").kv("mode", 1).kv("flag", (int)flagId)
          .msg("mode 1 syncs the two AIVs of one AI core: needs an AIV of a KERNEL_TYPE_MIX_AIC_1_2 kernel").at(loc).fail(EXIT_BAD_SYNC);
    Core* sib = find_core(AscendCoreType::AIV, c.group, 1 - c.sub_idx);
    detail::bump(sib->cross_cnt1[flagId], hz(*sib).cross[1][flagId], clock, flagId, loc);
  } else if (modeId == 2) {
    int t = launch().kernel_type;
    if (t != AscendC::KERNEL_TYPE_MIX_AIC_1_1 && t != AscendC::KERNEL_TYPE_MIX_AIC_1_2)
      Diag("bad_sync").kv("op", "CrossCoreSetFlag").kv("mode", 2).kv("flag", (int)flagId).kv("kernel_type", kernel_type_name(t))
          .msg("mode 2 (AIC <-> AIV) needs a MIX kernel type: with AIC_ONLY/AIV_ONLY the scheduling module is off (ascend.md §2.9)")
          .at(loc).fail(EXIT_BAD_SYNC);
    if (c.type == AscendCoreType::AIC) {
      for (int s = 0; s < aivs_per_group(); ++s) {
        Core* v = find_core(AscendCoreType::AIV, c.group, s);
        detail::bump(v->cross_cnt2[flagId], hz(*v).cross[2][flagId], clock, flagId, loc);
      }
    } else {
      Core* a = find_core(AscendCoreType::AIC, c.group, 0);
      detail::bump(a->cross_from_aiv[c.sub_idx][flagId], hz(*a).cross[3 + c.sub_idx][flagId], clock, flagId, loc);
    }
  } else {
    Diag("bad_sync").kv("op", "CrossCoreSetFlag").kv("mode", (int)modeId).msg("mode must be 0, 1 or 2 on A2/A3 (4 is 950 only; ascend.md §2.9)").at(loc).fail(EXIT_BAD_SYNC);
  }
}

template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
__aicore__ inline void CrossCoreWaitFlag(uint16_t flagId, forge_emu::Loc loc = forge_emu::Loc::current()) {
  using namespace forge_emu;
  Core& c = cur();
  if ((int)flagId >= limits().cross_flag_ids || flagId >= MAX_CROSS_FLAGS)
    Diag("bad_sync").kv("op", "CrossCoreWaitFlag").kv("flag", (int)flagId).kv("flag_ids", limits().cross_flag_ids)
        .msg("cross-core flag id out of range (ascend.md §2.9)").at(loc).fail(EXIT_BAD_SYNC);
  Core* me = &c;
  int n_same = 0;
  for (Core* o : launch().cores) if (o->type == c.type) ++n_same;
  int need_aiv = aivs_per_group();
  // Mode 0 waits for every core of this type; mode 1 for the sibling; mode 2 on an AIV for its AIC,
  // on an AIC for all its AIVs (ascend.md §2.9 "Modes").
  auto ready = [me, flagId, n_same, need_aiv]() {
    if (me->cross_cnt0[flagId] >= n_same) return true;
    if (me->cross_cnt1[flagId] > 0 || me->cross_cnt2[flagId] > 0) return true;
    if (me->type == AscendCoreType::AIC) {
      for (int s = 0; s < need_aiv; ++s) if (me->cross_from_aiv[s][flagId] <= 0) return false;
      return true;
    }
    return false;
  };
  block_until(ready, "CrossCoreWaitFlag", flagId, loc);
  // the wait is on PIPE_S, so every instruction issued after it is after the sets it consumes
  Hazards& h = hz(*me);
  auto consume = [&h, flagId](int counter, int sets) {
    for (int k = 0; k < sets && !h.cross[counter][flagId].empty(); ++k) {
      learn(h, -1, h.cross[counter][flagId].front());
      h.cross[counter][flagId].pop_front();
    }
  };
  if (me->cross_cnt0[flagId] >= n_same) { me->cross_cnt0[flagId] -= n_same; consume(0, n_same); return; }
  if (me->cross_cnt1[flagId] > 0) { me->cross_cnt1[flagId] -= 1; consume(1, 1); return; }
  if (me->cross_cnt2[flagId] > 0) { me->cross_cnt2[flagId] -= 1; consume(2, 1); return; }
  for (int s = 0; s < need_aiv; ++s) { me->cross_from_aiv[s][flagId] -= 1; consume(3 + s, 1); }
}

// All-core barrier over the AIVs (isAIVOnly) or over every core.
template <bool isAIVOnly = true>
__aicore__ inline void SyncAll(forge_emu::Loc loc = forge_emu::Loc::current()) {
  using namespace forge_emu;
  Launch& L = launch();
  Core* me = &cur();
  int ti = isAIVOnly ? (me->type == AscendCoreType::AIV ? 1 : 0) : 0;
  long long n = 0;
  for (Core* o : L.cores) if (!isAIVOnly || o->type == me->type) ++n;
  long long gen = L.syncall_arrived[ti] / n + 1;
  L.syncall_arrived[ti] += 1;
  // every pipe of every core taking part drains before the barrier releases
  Clock mine = snapshot(hz(*me), -1);
  Clock& all = L.syncall_clock[ti][gen];
  if (all.empty()) all.assign(mine.size(), 0);
  for (size_t k = 0; k < mine.size(); ++k) all[k] = std::max(all[k], mine[k]);
  block_until([&L, ti, n, gen]() { return L.syncall_arrived[ti] >= gen * n; }, "SyncAll", -1, loc);
  learn(hz(*me), -1, L.syncall_clock[ti][gen]);
}

// ---- workspace ------------------------------------------------------------------------------
__aicore__ inline void SetSysWorkspace(GM_ADDR ws) { if (ws) forge_emu::launch().sys_workspace = ws; }
__aicore__ inline GM_ADDR GetSysWorkSpacePtr() { return forge_emu::launch().sys_workspace; }
// The emulator's workspace argument has no system part: the user workspace starts at its base.
__aicore__ inline GM_ADDR GetUserWorkspace(GM_ADDR ws) { return ws; }

}  // namespace AscendC

// ---- kernel-type and core-type markers (ascend.md §2.1) -------------------------------------
#define KERNEL_TASK_TYPE_DEFAULT(t) ::forge_emu::declare_kernel_type((int)(t))
#define KERNEL_TASK_TYPE(key, t) ((void)(key), (void)(t))
#define ASCEND_IS_AIC (::forge_emu::cur().type == ::AscendC::AscendCoreType::AIC)
#define ASCEND_IS_AIV (::forge_emu::cur().type == ::AscendC::AscendCoreType::AIV)
#define ASCEND_IS_NOT_AIC (!ASCEND_IS_AIC)
#define ASCEND_IS_NOT_AIV (!ASCEND_IS_AIV)
#define GET_TILING_DATA_WITH_STRUCT(Struct, var, tiling) \
  Struct var; std::memcpy(&var, (const void*)(tiling), sizeof(Struct))
