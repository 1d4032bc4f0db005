"""The pipeline description of one variant: buffers, stages, cross-core flags, event ids.

Everything error-prone is derived from it (ARCHITECTURE.md, "The one idea"):
- the synchronisation in the source: templates mark stage boundaries with `pl.begin(stage)` /
  `pl.end(stage)` and scalar read-backs with `pl.v_to_s()`; this module emits every AllocTensor /
  EnQue / DeQue / FreeTensor, SetFlag / WaitFlag, CrossCoreSetFlag / CrossCoreWaitFlag and
  PipeBarrier (no template writes one by hand);
- the resource accounting behind the hard constraints (`Buffer` lists are built by the same
  functions for one config and for a numpy column of configs);
- the modeled schedule (pipemodel.py follows the same stages, queues and flags).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from forge.backends.ascend.hw import MEMORY_OF

PIPE_ENUM = {"MTE1": "PIPE_MTE1", "MTE2": "PIPE_MTE2", "MTE3": "PIPE_MTE3", "M": "PIPE_M",
             "V": "PIPE_V", "FIX": "PIPE_FIX", "S": "PIPE_S"}
# names of the pipes in reports (ascend.md §4.4 trace rows, §5.1)
PIPE_LABEL = {"MTE2": "MTE2", "MTE1": "MTE1", "M": "Cube", "FIX": "FixPipe", "V": "Vector",
              "MTE3": "MTE3", "S": "Scalar"}


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


@dataclass(frozen=True)
class Buffer:
    """One TQue (queue=True, `num` blocks) or TBuf (one block) of `nbytes` each.

    `nbytes` and `num` may be numpy arrays: the same Buffer list then accounts a whole column of
    configs at once (space enumeration) or one config (check, generation).
    """

    name: str                 # the LocalTensor variable in the kernel, e.g. "xLocal" -> "x"
    position: str             # TPosition: VECIN VECOUT VECCALC A1 B1 A2 B2 CO1
    nbytes: Any
    num: Any = 1
    queue: bool = True
    ctype: str = "half"

    @property
    def memory(self) -> str:
        return MEMORY_OF[self.position]

    @property
    def member(self) -> str:
        return ("que" if self.queue else "buf") + _cap(self.name)


@dataclass(frozen=True)
class Flag:
    """A cross-core flag (ascend.md §2.9): set by `setter` after `pipe`, waited by the other side."""

    name: str
    id: int
    setter: str               # "aic" | "aiv"
    pipe: str                 # pipe the set waits for (FIX after Fixpipe, MTE3 after a GM write)
    mode: int = 2             # AIC <-> both AIVs of the same core


@dataclass(frozen=True)
class Stage:
    """A unit of work on one pipe of one core type, with the queues it consumes and produces.

    `hold` lists (buffer, acquire_if, release_if): a consumed buffer held across executions (an
    L1 tile read by several L0 loads, a resident Q) is DeQue'd only when the C++ condition
    `acquire_if` holds and freed only when `release_if` holds; a produced one (an L0C block
    accumulated over K chunks) is allocated on `acquire_if` and enqueued on `release_if`. Held
    tensors are class members. `signal_if` guards the stage's cross-core sets the same way.
    The model follows the same conditions per execution (pipemodel.Step.acq / rel / sig).
    """

    name: str
    core: str                 # "aic" | "aiv"
    pipe: str                 # MTE2 MTE1 M FIX V MTE3 S
    consumes: tuple[str, ...] = ()
    produces: tuple[str, ...] = ()
    waits: tuple[str, ...] = ()
    signals: tuple[str, ...] = ()
    hold: tuple[tuple[str, str, str], ...] = ()
    signal_if: str = ""

    def held(self, name: str) -> tuple[str, str] | None:
        for n, a, r in self.hold:
            if n == name:
                return a, r
        return None


@dataclass
class Pipeline:
    kernel: str                                   # entry name
    kind: str                                     # "aiv" | "aic" | "mix"
    buffers: list[Buffer]
    stages: list[Stage] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    events: list[tuple[str, int]] = field(default_factory=list)   # manual (HardEvent, id)
    block_dim: int = 1

    # -- lookups -----------------------------------------------------------------------------
    def buffer(self, name: str) -> Buffer:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(name)

    def flag(self, name: str) -> Flag:
        for f in self.flags:
            if f.name == name:
                return f
        raise KeyError(name)

    # -- source emission ---------------------------------------------------------------------
    def declare(self, core: str) -> str:
        """Member declarations: one TPipe, the TQues (depth 1, ascend.md §2.3) and TBufs, and the
        tensors held across stage executions."""
        lines = ["TPipe pipe;"]
        for b in self._of(core):
            if b.queue:
                lines.append(f"TQue<TPosition::{b.position}, 1> {b.member};   // {b.memory} {int(b.num)} x {int(b.nbytes)} B")
            else:
                lines.append(f"TBuf<TPosition::{b.position}> {b.member};      // {b.memory} {int(b.nbytes)} B")
        held = sorted({h[0] for s in self.stages for h in s.hold})
        for n in held:
            b = self.buffer(n)
            if b in self._of(core):
                lines.append(f"LocalTensor<{b.ctype}> {n};   // held across stage executions")
        return "\n".join(lines)

    def init(self, core: str) -> str:
        lines = []
        for b in self._of(core):
            if b.queue:
                lines.append(f"pipe.InitBuffer({b.member}, {int(b.num)}, {int(b.nbytes)});")
            else:
                lines.append(f"pipe.InitBuffer({b.member}, {int(b.nbytes)});")
        return "\n".join(lines)

    def constants(self) -> str:
        """Event ids and cross-core flag ids as named constants, allocated by this description."""
        lines = [f"constexpr event_t EVT_{ev} = static_cast<event_t>({i});" for ev, i in self.events]
        lines += [f"constexpr uint16_t FLAG_{f.name} = {f.id};   // set by {f.setter.upper()} after PIPE_{f.pipe}, mode {f.mode}"
                  for f in self.flags]
        return "\n".join(lines)

    def begin(self, stage: str) -> str:
        s = self.stage(stage)
        out = [f"// -- stage {s.name} ({s.pipe}) : sync generated from the pipeline description"]
        out += [f"CrossCoreWaitFlag(FLAG_{w});" for w in s.waits]
        for n, call in [(n, "DeQue") for n in s.consumes] + [(n, "AllocTensor") for n in s.produces]:
            b = self.buffer(n)
            h = s.held(n)
            if h:
                out.append(f"if ({h[0]}) {n} = {b.member}.{call}<{b.ctype}>();")
            else:
                out.append(f"LocalTensor<{b.ctype}> {n} = {b.member}.{call}<{b.ctype}>();")
        return "\n".join(out)

    def end(self, stage: str) -> str:
        s = self.stage(stage)
        out = []
        for n, call in [(n, "EnQue") for n in s.produces] + [(n, "FreeTensor") for n in s.consumes]:
            h = s.held(n)
            line = f"{self.buffer(n).member}.{call}({n});"
            out.append(f"if ({h[1]}) {line}" if h else line)
        for n in s.signals:
            f = self.flag(n)
            line = f"CrossCoreSetFlag<{f.mode}, {PIPE_ENUM[f.pipe]}>(FLAG_{f.name});"
            out.append(f"if ({s.signal_if}) {line}" if s.signal_if else line)
        return "\n".join(out)

    def get(self, name: str) -> str:
        b = self.buffer(name)
        return f"{b.member}.Get<{b.ctype}>()"

    def v_to_s(self) -> str:
        """A scalar read of a vector result (ascend.md §2.8 'Automatic synchronisation')."""
        return "SetFlag<HardEvent::V_S>(EVT_V_S); WaitFlag<HardEvent::V_S>(EVT_V_S);"

    def s_to_v(self) -> str:
        """Vector use of values the scalar unit stored in UB (ascend.md §2.8)."""
        return "SetFlag<HardEvent::S_V>(EVT_S_V); WaitFlag<HardEvent::S_V>(EVT_S_V);"

    def vbar(self) -> str:
        """Order two dependent vector instructions (ascend.md §2.8 PipeBarrier)."""
        return "PipeBarrier<PIPE_V>();"

    def _of(self, core: str) -> list[Buffer]:
        aic = {"L1", "L0A", "L0B", "L0C"}
        return [b for b in self.buffers if (b.memory in aic) == (core == "aic")]


# -- accounting (vectorised) --------------------------------------------------------------------
def _round(x: Any, a: int) -> Any:
    return (np.asarray(x, dtype=np.int64) + a - 1) // a * a


def memory_usage(buffers: Iterable[Buffer], memory: str) -> Any:
    """Bytes of `memory` used: Σ num · len rounded up to 32 B (InitBuffer rounds, ascend.md §2.3)."""
    total: Any = 0
    for b in buffers:
        if b.memory == memory:
            total = total + np.asarray(b.num, dtype=np.int64) * _round(b.nbytes, 32)
    return total


def kib(x: float) -> str:
    v = float(x) / 1024
    return f"{v:g} KiB" if v == int(v) else f"{v:.1f} KiB"


def memory_parts(buffers: Iterable[Buffer], memory: str) -> str:
    """'q 2×32 KiB, k 2×32 KiB, …' for one config."""
    parts = [f"{b.name} {int(b.num)}×{kib(int(_round(b.nbytes, 32)))}" for b in buffers if b.memory == memory]
    return ", ".join(parts)


def queue_counts(buffers: Iterable[Buffer]) -> dict[str, Any]:
    """TQue blocks per TPosition (each holds a hardware event id, ascend.md §2.3)."""
    out: dict[str, Any] = {}
    for b in buffers:
        if b.queue:
            out[b.position] = out.get(b.position, 0) + np.asarray(b.num, dtype=np.int64)
    return out
