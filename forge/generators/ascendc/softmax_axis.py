"""Softmax over the middle axis of x[B, K, I] on the AIVs: the reduction runs down columns.

Work units are column blocks (b, `cols` columns of I), split evenly over the AIVs. A unit's K rows
come through UB `rows` at a time, each row of the block one strided DataCopyPad block (ascend.md
§2.4.3: blockLen = the block's bytes, GM stride = the rest of the row), landing in a 32 B aligned
slot. Because the reduced elements of a column sit in the same lane of every row, the reductions
are element-wise vector ops between rows: a halving fold (row i with row i + h, h = r/2, ...)
gives the block's column max and sum in ceil(log2 r) count-form calls, with no cross-lane
reduction and no scalar read-back.

- rows < K (streaming): pass 1 keeps a running column max m and sum s, rescaling s by
  exp(m_old - m_new) per block (online softmax); pass 2 reads the blocks again and writes
  exp(x - m) / s. x is read twice.
- rows >= K (resident): the whole column block fits; exp(x - m) stays in UB and is scaled and
  written with no second read.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from forge.backends.ascend.constraints import Resources
from forge.backends.ascend.pipeline import Buffer, Pipeline, Stage
from forge.backends.ascend.pipemodel import ModelResult, Step, simulate
from forge.generators.ascendc.base import SIM_STEPS, Plan, cdiv, round_up
from forge.generators.ascendc.rows import fp32_scratch
from forge.space import Constraint, Param, choice, pow2

# Rows per high-dimensional (repeat) call of the per-row broadcast: repeatTime <= 255 (ascend.md §2.5).
REPEAT_MAX = 255
FP32_LANES = 64            # fp32 lanes of one 256 B repeat: the mask of a broadcast call covers at most these


class SoftmaxAxisPlan(Plan):
    op = "softmax_axis"
    template = "softmax_axis.cpp.j2"
    kind = "aiv"

    @property
    def B(self) -> int:
        return self.p.shape["B"]

    @property
    def K(self) -> int:
        return self.p.shape["K"]

    @property
    def I(self) -> int:  # noqa: E743 - the dimension's name
        return self.p.shape["I"]

    def params(self) -> list[Param]:
        return [pow2("cols", 16, 1024, doc="columns of I per work unit (the width of a strided row block)"),
                pow2("rows", 1, 2048, doc="rows of K per UB pass; at least K keeps the whole column block resident"),
                choice("buffer_num", (1, 2), ordered=True, doc="VECIN/VECOUT blocks (2 = double buffering)"),
                self.cores_param()]

    def extra_constraints(self) -> list[Constraint]:
        K, I = self.K, self.I
        # a block wider than twice I (or taller than twice K) is the same kernel as a smaller one
        return [Constraint("cols", lambda c: (c["cols"] == 16) | (c["cols"] < 2 * I),
                           lambda c: f"cols {c['cols']} repeats a narrower block: a row has I = {I} elements"),
                Constraint("rows", lambda c: (c["rows"] == 1) | (c["rows"] < 2 * K),
                           lambda c: f"rows {c['rows']} repeats a shorter pass: the axis has K = {K} rows"),
                self.cores_constraint(self.units)]

    # -- sizes ---------------------------------------------------------------------------------
    def slot(self, c: dict[str, Any]) -> Any:
        """Elements of one row's UB slot: the block's width rounded up to 32 B."""
        return round_up(np.minimum(c["cols"], self.I), self.per_block)

    def units(self, c: dict[str, Any]) -> Any:
        return self.B * cdiv(self.I, c["cols"])

    def block_dim(self, c: dict[str, Any]) -> Any:
        return np.minimum(c["cores"], self.units(c))

    def resident(self, c: dict[str, Any]) -> bool:
        return int(c["rows"]) >= self.K

    def buffers(self, c: dict[str, Any]) -> list[Buffer]:
        slot = self.slot(c)
        tile = np.minimum(c["rows"], self.K) * slot
        fold = cdiv(np.minimum(c["rows"], self.K), 2) * slot
        return [Buffer("x", "VECIN", tile * self.e, c["buffer_num"], ctype=self.ctype),
                Buffer("y", "VECOUT", tile * self.e, c["buffer_num"], ctype=self.ctype),
                fp32_scratch("xf", tile * 4),          # the block in fp32
                fp32_scratch("fold", fold * 4),        # halving fold of the block's rows
                fp32_scratch("m", slot * 4),           # running column max
                fp32_scratch("s", slot * 4),           # running column sum, then its reciprocal
                fp32_scratch("tmp", slot * 4)]         # rescale factor / ones

    def resources(self, c: dict[str, Any]) -> Resources:
        return Resources(self.buffers(c), self.block_dim(c), "aiv")

    def stages(self, cfg: dict[str, Any]) -> list[Stage]:
        rescan = () if self.resident(cfg) else ("x",)
        return [Stage("copy_in", "aiv", "MTE2", produces=("x",)),
                Stage("stats", "aiv", "V", consumes=("x",)),
                Stage("normalize", "aiv", "V", consumes=rescan, produces=("y",)),
                Stage("copy_out", "aiv", "MTE3", consumes=("y",))]

    def pipeline(self, cfg: dict[str, Any]) -> Pipeline:
        return Pipeline("forge_softmax_axis", "aiv", self.buffers(cfg), self.stages(cfg), [], [],
                        int(self.block_dim(cfg)))

    # -- the modeled schedule -----------------------------------------------------------------
    def block_bytes(self, r: int, ln: int) -> int:
        """GM bytes of r rows of a ln-wide column block."""
        return self.gm_rows_bytes(r, ln, self.I)

    def vector_calls(self, r: int, slot: int, bcasts: int, others: int) -> int:
        """API calls, each with its barrier: `bcasts` per-row broadcasts (one call per 64 lanes and
        255 rows) and `others` count-form calls."""
        return 2 * (bcasts * cdiv(slot, FP32_LANES) * cdiv(r, REPEAT_MAX) + others)

    def stats_step(self, r: int, slot: int) -> Step:
        """cast, fold max, broadcast subtract, exp, fold sum over the block, plus the six slot-long
        ops of the running max and sum."""
        folds = 2 * max(1, int(np.ceil(np.log2(max(r, 1)))))
        cycles = self.hw.vector_cycles(r * slot * 4, 5) + self.hw.vector_cycles(slot * 4, 6)
        return Step("stats", cycles=cycles, calls=self.vector_calls(r, slot, 1, 2 + folds + 6))

    def normalize_step(self, r: int, slot: int, resident: bool) -> Step:
        """Resident: scale by 1/s and cast out. Streaming: cast in, subtract m, exp, scale, cast out."""
        bcasts, passes = (1, 2) if resident else (2, 5)
        cycles = self.hw.vector_cycles(r * slot * 4, passes)
        return Step("normalize", cycles=cycles, calls=self.vector_calls(r, slot, bcasts, passes - bcasts))

    def unit_width(self, cfg: dict[str, Any], u: int) -> int:
        """Columns of unit u of the modeled core: units take the column blocks in turn, the last
        block of a row of I narrower when `cols` does not divide I."""
        cols = int(cfg["cols"])
        return min(cols, self.I - (u % int(cdiv(self.I, cols))) * cols)

    def unit_steps(self, cfg: dict[str, Any], ln: int) -> list[Step]:
        """One work unit of a ln-wide column block: K rows in passes of `rows`."""
        R = min(int(cfg["rows"]), self.K)
        resident = self.resident(cfg)
        slot = int(round_up(ln, self.per_block))
        blocks = [min(R, self.K - k0) for k0 in range(0, self.K, R)]
        prog: list[Step] = []
        for r in blocks:
            prog += [Step("copy_in", nbytes=self.block_bytes(r, ln)), self.stats_step(r, slot)]
        for r in blocks:
            if not resident:
                prog.append(Step("copy_in", nbytes=self.block_bytes(r, ln)))
            prog += [self.normalize_step(r, slot, resident), Step("copy_out", nbytes=self.block_bytes(r, ln))]
        return prog

    def programs(self, cfg: dict[str, Any], units: int | None = None) -> tuple[dict[str, list[Step]], int]:
        """The most loaded AIV's program: its work units in turn (the first `units` of them)."""
        bd = int(self.block_dim(cfg))
        n_units = int(cdiv(self.units(cfg), bd)) if units is None else units
        return {"aiv0": [s for u in range(n_units) for s in self.unit_steps(cfg, self.unit_width(cfg, u))]}, bd

    def model(self, cfg: dict[str, Any]) -> ModelResult:
        """Every unit is the same K rows in passes of `rows`: a long stream (a narrow block read a
        row at a time down a tall axis is millions of steps) is timed over two prefixes of whole
        units and extrapolated (Plan.model_prefixes). The prefixes may hold only full-width units
        while a third of the stream is a narrow last block, so each unit is weighed by its
        time, one unit of each width simulated on its own."""
        bd = int(self.block_dim(cfg))
        n_units = int(cdiv(self.units(cfg), bd))
        widths = [self.unit_width(cfg, u) for u in range(n_units)]
        steps = len(self.unit_steps(cfg, widths[0]))
        work = None
        if steps * n_units > SIM_STEPS and len(set(widths)) > 1:
            alone = {w: simulate(self.pipeline(cfg), self.hw, {"aiv0": self.unit_steps(cfg, w)}, bd).makespan
                     for w in set(widths)}
            work = [alone[w] for w in widths]
        return self.model_prefixes(cfg, [steps] * n_units, lambda n: self.programs(cfg, n)[0], bd, SIM_STEPS, work)

    # -- source ---------------------------------------------------------------------------------
    def context(self, cfg: dict[str, Any]) -> dict[str, Any]:
        return dict(B=self.B, K=self.K, I=self.I, ELEM=self.e, COLS=cfg["cols"], ROWS=min(cfg["rows"], self.K),
                    PER_BLOCK=self.per_block, resident=self.resident(cfg), REPEAT_MAX=REPEAT_MAX,
                    FP32_LANES=FP32_LANES)

    def emulation_problem(self, cfg: dict[str, Any]) -> Any:
        """Two full column blocks and the same unaligned tail; two full row passes and a tail
        (all of K when resident); up to three slabs."""
        from forge.ops import get_op
        cols, rows = int(cfg["cols"]), int(cfg["rows"])
        i = self.I if self.I <= 2 * cols else 2 * cols + self.I % cols
        k = self.K if self.resident(cfg) else min(self.K, 2 * rows + 3)
        return get_op(self.op).problem({"B": min(self.B, 3), "K": k, "I": i}, self.p.dtype)
