"""Event-driven model of the AI-core pipes (ascend.md §5): MTE2, MTE1, Cube, FixPipe, Vector,
MTE3, Scalar, and the chip around them (core split, HBM bandwidth shared by every core).

Input: the variant's `Pipeline` (stages, queues with their depth, cross-core flags) and, per
simulated core ("aic", "aiv0", "aiv1"), the sequence of stage executions the kernel performs on
the most loaded AI core. The same queues and flags that generate the source give the edges:

- a DeQue waits for the matching EnQue (FIFO per queue);
- the k-th AllocTensor of a queue with `num` blocks waits for the (k-num)-th FreeTensor;
- a CrossCoreWaitFlag (issued on the scalar pipe, so it stalls issue) waits for the matching set;
  in mode 2 the AIC waits for both AIVs (ascend.md §2.9);
- each pipe executes in order; different pipes overlap (ascend.md §5.1);
- GM transfers: `lat + bytes / rate`, with the chip's HBM (or L2) bandwidth shared among all
  active cores and split between reads and writes by volume (ascend.md §5.2).

Time = launch head + makespan of the most loaded core. Always labelled modeled.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from forge.backends.ascend.hw import AscendHW
from forge.backends.ascend.pipeline import PIPE_LABEL, Pipeline

# A V->S->V round trip drains the vector pipe before the scalar reads (ascend.md §2.10 notes the
# stall; its length is unpublished): assumed 16 scalar issue slots.
STALL_ISSUES = 16


@dataclass
class Step:
    stage: str
    cycles: float = 0.0        # compute cycles (V, M, MTE1, S)
    nbytes: float = 0.0        # bytes moved (MTE2, MTE3, FIX)
    stream: str = "hbm"        # "hbm": first touch from HBM; "l2": re-read likely served by L2
    stalls: int = 0            # scalar read-backs of vector results inside this step
    calls: int = 1             # API calls the scalar issues for this step (each issue_s)
    hbm_frac: float | None = None   # split transfer: this fraction from HBM, the rest from L2
    acq: tuple[str, ...] | None = None   # held buffers acquired in this execution (None: all)
    rel: tuple[str, ...] | None = None   # held buffers released in this execution (None: all)
    sig: bool = True           # the stage's cross-core sets fire in this execution

    def parts(self) -> list[tuple[str, float]]:
        """(stream, bytes) of a transfer."""
        if self.hbm_frac is None:
            return [(self.stream, self.nbytes)]
        return [("hbm", self.nbytes * self.hbm_frac), ("l2", self.nbytes * (1.0 - self.hbm_frac))]


@dataclass
class ModelResult:
    seconds: float
    makespan: float
    head: float
    busy: dict[str, float] = field(default_factory=dict)
    steps: int = 0


class ModelDeadlock(RuntimeError):
    """The description waits for something that is never produced (a bug in a plan)."""


def _core_type(core: str) -> str:
    return "aic" if core.startswith("aic") else "aiv"


def simulate(pl: Pipeline, hw: AscendHW, programs: dict[str, list[Step]], active_groups: int) -> ModelResult:
    f = hw.clock
    stages = {s.name: s for s in pl.stages}
    flags = {fl.name: fl for fl in pl.flags}
    nums = {b.name: int(b.num) for b in pl.buffers}

    # bandwidth split by volume: (core, direction, stream) -> share of the group's traffic
    vol: dict[tuple[str, str, str], float] = defaultdict(float)
    for core, prog in programs.items():
        for st in prog:
            pipe = stages[st.stage].pipe
            if pipe in ("MTE2", "MTE3", "FIX") and st.nbytes:
                for stream, nb in st.parts():
                    vol[(core, "r" if pipe == "MTE2" else "w", stream)] += nb
    tot = {s: sum(v for (c, d, ss), v in vol.items() if ss == s) or 1.0 for s in ("hbm", "l2")}
    chip_bw = {"hbm": hw.gm_bandwidth, "l2": float(hw.l2_bandwidth)}
    ports = {"MTE2": hw.mte2_bytes_per_cycle * f, "MTE3": hw.mte3_bytes_per_cycle * f,
             "FIX": hw.fixpipe_bytes_per_cycle * f}

    def transfer(core: str, pipe: str, st: Step) -> float:
        d = "r" if pipe == "MTE2" else "w"
        t = float(hw.mte_latency_s)
        for stream, nb in st.parts():
            if nb <= 0:
                continue
            share = chip_bw[stream] / max(active_groups, 1) * vol[(core, d, stream)] / tot[stream]
            rate = min(ports[pipe], share) if share > 0 else ports[pipe]
            t += nb / rate
        return t

    issue_s = hw.scalar_issue_cycles / f
    pos = {c: 0 for c in programs}
    issue = {c: 0.0 for c in programs}
    pipe_free: dict[tuple[str, str], float] = defaultdict(float)
    busy: dict[tuple[str, str], float] = defaultdict(float)
    enq: dict[tuple[str, str], list[float]] = defaultdict(list)     # EnQue times
    deq_n: dict[tuple[str, str], int] = defaultdict(int)
    freed: dict[tuple[str, str], list[float]] = defaultdict(list)   # FreeTensor times
    alloc_n: dict[tuple[str, str], int] = defaultdict(int)
    sets: dict[tuple[str, str], list[float]] = defaultdict(list)    # (flag, setting core) -> times
    waits_n: dict[tuple[str, str], int] = defaultdict(int)          # (flag, waiting core)
    cores_of = {t: [c for c in programs if _core_type(c) == t] for t in ("aic", "aiv")}
    makespan = 0.0
    remaining = sum(len(p) for p in programs.values())

    def acquires(s, st: Step, n: str) -> bool:
        return s.held(n) is None or st.acq is None or n in st.acq

    def releases(s, st: Step, n: str) -> bool:
        return s.held(n) is None or st.rel is None or n in st.rel

    def ready_time(core: str, st: Step) -> float | None:
        s = stages[st.stage]
        t = 0.0
        for n in s.consumes:
            if not acquires(s, st, n):
                continue
            k = deq_n[(core, n)]
            if len(enq[(core, n)]) <= k:
                return None
            t = max(t, enq[(core, n)][k])
        for n in s.produces:
            if not acquires(s, st, n):
                continue
            k = alloc_n[(core, n)] - nums[n]
            if k >= 0:
                if len(freed[(core, n)]) <= k:
                    return None
                t = max(t, freed[(core, n)][k])
        for w in s.waits:
            fl = flags[w]
            k = waits_n[(w, core)]
            setters = cores_of[fl.setter]
            if _core_type(core) == "aiv":   # mode 2: the AIC's set releases each AIV
                setters = setters[:1]
            for sc in setters:
                if len(sets[(w, sc)]) <= k:
                    return None
                t = max(t, sets[(w, sc)][k])
        return t

    while remaining:
        progressed = False
        for core, prog in programs.items():
            while pos[core] < len(prog):
                st = prog[pos[core]]
                dep = ready_time(core, st)
                if dep is None:
                    break
                s = stages[st.stage]
                if s.waits:                     # CrossCoreWaitFlag blocks scalar issue
                    issue[core] = max(issue[core], dep)
                start = max(issue[core], pipe_free[(core, s.pipe)], dep)
                if s.pipe in ("MTE2", "MTE3", "FIX") and st.nbytes:
                    dur = transfer(core, s.pipe, st)
                else:
                    dur = st.cycles / f
                dur += st.stalls * STALL_ISSUES * issue_s
                # the pipe cannot finish before the scalar has issued all of the step's calls
                dur = max(dur, st.calls * issue_s)
                end = start + dur
                pipe_free[(core, s.pipe)] = end
                busy[(core, s.pipe)] += dur
                issue[core] += st.calls * issue_s
                busy[(core, "S")] += st.calls * issue_s + st.stalls * STALL_ISSUES * issue_s
                if st.stalls:
                    issue[core] = max(issue[core], end)
                for n in s.consumes:
                    if acquires(s, st, n):
                        deq_n[(core, n)] += 1
                    if releases(s, st, n):
                        freed[(core, n)].append(end)
                for n in s.produces:
                    if acquires(s, st, n):
                        alloc_n[(core, n)] += 1
                    if releases(s, st, n):
                        enq[(core, n)].append(end)
                for w in s.waits:
                    waits_n[(w, core)] += 1
                if st.sig:
                    for n in s.signals:
                        sets[(n, core)].append(end)
                makespan = max(makespan, end, issue[core])
                pos[core] += 1
                remaining -= 1
                progressed = True
        if not progressed:
            stuck = {c: prog[pos[c]].stage for c, prog in programs.items() if pos[c] < len(prog)}
            raise ModelDeadlock(f"no core can progress; waiting at {stuck}")

    out: dict[str, float] = {}
    for (core, pipe), t in busy.items():
        label = PIPE_LABEL[pipe]
        out[label] = max(out.get(label, 0.0), min(1.0, t / makespan) if makespan else 0.0)
    head = float(hw.launch_head_s)
    return ModelResult(head + makespan, makespan, head, {k: round(v, 4) for k, v in out.items()},
                       sum(len(p) for p in programs.values()))
