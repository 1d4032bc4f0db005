"""Hard constraints of an Ascend kernel, written once from the pipeline's resource accounting.

Each op plan provides `resources(cols) -> Resources`, vectorised over numpy columns; the same
function describes one config for generation. Every rule is a `forge.space.Constraint` whose
explanation carries the numbers, e.g. `UB 201 KiB > 191.8 KiB: q 2×32 KiB, k 2×32 KiB, …`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from forge.backends.ascend.hw import AscendHW
from forge.backends.ascend.pipeline import Buffer, kib, memory_parts, memory_usage, queue_counts
from forge.space import Constraint, limit


@dataclass
class Resources:
    buffers: list[Buffer]
    block_dim: Any                 # blocks launched
    block_unit: str                # "aic" (cube / mix kernels) or "aiv" (vector-only)
    events: Any = 0                # event ids managed by hand
    flags: Any = 0                 # cross-core flag ids used (highest id + 1)
    pending: Any = 0               # most sets of one cross-core flag without a wait between


ResourceFn = Callable[[dict[str, Any]], Resources]

MEMORIES = ("UB", "L1", "L0A", "L0B", "L0C")


def hard_constraints(hw: AscendHW, res: ResourceFn) -> list[Constraint]:
    out: list[Constraint] = []
    for mem in MEMORIES:
        cap = hw.capacity(mem)
        out.append(limit(mem, (lambda m: lambda c: memory_usage(res(c).buffers, m))(mem), cap, "KiB",
                         (lambda m: lambda c: memory_parts(res(c).buffers, m))(mem), scale=1024))

    def misaligned(c: dict[str, Any]) -> Any:
        bad: Any = False
        for b in res(c).buffers:
            a = 32 if b.memory in ("UB", "L1") else hw.align(b.memory)   # ascend.md §1.3
            bad = bad | (np.asarray(b.nbytes) % a != 0)
        return bad

    def explain_align(c: dict[str, Any]) -> str:
        items = []
        for b in res(c).buffers:
            a = 32 if b.memory in ("UB", "L1") else hw.align(b.memory)
            if int(b.nbytes) % a:
                items.append(f"{b.name} {int(b.nbytes)} B in {b.memory} is not a multiple of {a} B")
        return "; ".join(items)

    out.append(Constraint("alignment", lambda c: ~np.asarray(misaligned(c)), explain_align))

    per_pos = int(hw.queue_buffers_per_position)

    def worst_position(c: dict[str, Any]) -> Any:
        counts = list(queue_counts(res(c).buffers).values())
        return np.maximum.reduce([np.asarray(x) for x in counts]) if counts else 0

    def explain_pos(c: dict[str, Any]) -> str:
        counts = queue_counts(res(c).buffers)
        return ", ".join(f"{p} {int(n)}" for p, n in counts.items() if int(n) > per_pos)

    out.append(limit("queue buffers per position", worst_position, per_pos, "", explain_pos))

    def per_kernel(c: dict[str, Any]) -> Any:
        # "the sum of all buffers in a kernel must be <= 64" (ascend.md §2.3): queue blocks and
        # TBufs alike, as the emulator counts them
        bufs = res(c).buffers
        aiv = sum((np.asarray(b.num) for b in bufs if b.memory == "UB"), np.int64(0))
        aic = sum((np.asarray(b.num) for b in bufs if b.memory != "UB"), np.int64(0))
        return np.maximum(aiv, aic)

    out.append(limit("buffers per kernel", per_kernel, int(hw.buffers_per_kernel)))
    out.append(limit("event ids", lambda c: np.asarray(res(c).events) + len(hw.reserved_event_ids),
                     int(hw.event_ids), "", lambda c: f"{int(res(c).events)} by hand + "
                     f"{len(hw.reserved_event_ids)} reserved (ids {hw.reserved_event_ids})"))
    out.append(limit("cross-core flag ids", lambda c: res(c).flags, int(hw.cross_core_flag_ids), "",
                     lambda c: f"ids 0..{int(res(c).flags) - 1} used"))
    out.append(limit("cross-core pending sets", lambda c: res(c).pending, int(hw.cross_core_pending_max), "",
                     lambda c: "one flag set that many times before its wait (ascend.md §2.9)"))

    def cores(c: dict[str, Any]) -> int:
        return int(hw.aic) if res(c).block_unit == "aic" else int(hw.aiv)

    out.append(Constraint("blockDim", lambda c: np.asarray(res(c).block_dim) <= cores(c),
                          lambda c: f"{int(res(c).block_dim)} > {cores(c)} {res(c).block_unit.upper()} cores"))
    return out


def usage_summary(hw: AscendHW, r: Resources) -> dict[str, Any]:
    """One config's resources for `Verdict.resources` and the leaderboard."""
    out: dict[str, Any] = {}
    for mem in MEMORIES:
        used = int(memory_usage(r.buffers, mem))
        if used:
            out[f"{mem}_bytes"] = used
            out[f"{mem}_of_cap"] = round(used / hw.capacity(mem), 3)
    out["queue_buffers"] = {p: int(n) for p, n in queue_counts(r.buffers).items()}
    out.update(block_dim=int(r.block_dim), events=int(r.events), cross_flags=int(r.flags))
    return out


__all__ = ["Resources", "hard_constraints", "usage_summary", "kib"]
