"""SwiGLU on the AIVs: y[M, N] = silu(x[:, :N]) * x[:, N:], streamed in column chunks.

Work units are (row block, chunk) pairs split evenly over the AIVs; each unit is copy_in (MTE2: the
gate and the up halves) -> compute (V, fp32) -> copy_out (MTE3). A unit is one row's chunk, or,
for rows no longer than a chunk, `rows` whole rows moved by one strided DataCopyPad (a block per
row, each 32 B aligned in UB: ascend.md §2.4.3), so short rows do not cost a pass each. Chunks
not a 32 B multiple long move with DataCopyPad too. Rows of at most PACK_MAX_N elements can
instead move as the pass's contiguous values (`layout=packed`): two Gathers pick the gate and up
halves out of them, and the result goes out contiguous, so a row of one element does not fill a
32 B slot.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from forge.backends.ascend.constraints import Resources
from forge.backends.ascend.pipeline import Buffer, Pipeline, Stage
from forge.backends.ascend.pipemodel import ModelResult, Step
from forge.generators.ascendc.base import SIM_STEPS, RowsPlan, cdiv, round_up
from forge.generators.ascendc.rows import PACK_MAX_N, PACK_MIN_ROWS, doublings, gather_tables_step
from forge.space import Constraint, Param, choice, pow2


class SwigluPlan(RowsPlan):
    op = "swiglu"
    template = "swiglu.cpp.j2"
    kind = "aiv"
    compute_passes = 9               # fp32 vector passes over a pass's values: casts, silu, product

    def params(self) -> list[Param]:
        return [pow2("chunk", 256, 16384, doc="elements of N per UB pass"),
                pow2("rows", 1, 2048, doc="rows per UB pass, when a whole row fits in a chunk (DataCopyPad blocks)"),
                choice("layout", ("slots", "packed"), doc="slots: each row in its own 32 B aligned UB slot; "
                       f"packed: rows of at most {PACK_MAX_N} elements end to end, halves gathered"),
                choice("buffer_num", (1, 2), ordered=True),
                self.cores_param((2, 1))]

    def extra_constraints(self) -> list[Constraint]:
        N, M, short = self.N, self.M, self.N <= PACK_MAX_N
        return [Constraint("layout", lambda c: (c["layout"] == "slots") | (short & (c["rows"] >= PACK_MIN_ROWS)
                                                                          & (c["chunk"] == 256)),
                           lambda c: f"packed rows need rows of at most {PACK_MAX_N} elements (this one has "
                                     f"{N}) and at least {PACK_MIN_ROWS} rows per pass (chunk 256: unused)"),
                Constraint("rows", lambda c: (c["rows"] == 1) | ((N <= c["chunk"]) & (c["rows"] <= M)),
                           lambda c: f"{c['rows']} rows per pass need the whole row (N = {N}) in a chunk "
                                     f"({c['chunk']}) and at most M = {M} rows"),
                # a chunk over twice the row is the same kernel as the shortest chunk holding the row
                Constraint("chunk", lambda c: (c["chunk"] == 256) | (c["chunk"] < 2 * N),
                           lambda c: f"chunk {c['chunk']} repeats a shorter chunk: a row has N = {N} elements"),
                self.cores_constraint(self.units)]

    def tile(self, c: dict[str, Any]) -> Any:
        """Elements of one UB pass: `rows` row slots of min(chunk, N) elements, 32 B aligned, or
        (packed) the rows' N outputs end to end."""
        packed = np.asarray(c["layout"]) == "packed"
        return np.where(packed, round_up(c["rows"] * self.N, self.per_block),
                        c["rows"] * round_up(np.minimum(c["chunk"], self.N), self.per_block))

    def units(self, c: dict[str, Any]) -> Any:
        return cdiv(self.M, c["rows"]) * cdiv(self.N, c["chunk"])

    def block_dim(self, c: dict[str, Any]) -> Any:
        return np.minimum(c["cores"], self.units(c))

    def resources(self, c: dict[str, Any]) -> Resources:
        t = self.tile(c)
        packed = np.asarray(c["layout"]) == "packed"
        table = np.where(packed, round_up(c["rows"] * self.N, 8) * 4, 0)
        # packed: `a` holds the pass's 2N values per row end to end, `b` the gathered up halves
        a_elems = np.where(packed, round_up(2 * c["rows"] * self.N, self.per_block), t)
        bufs = [Buffer("a", "VECIN", a_elems * self.e, c["buffer_num"], ctype=self.ctype),
                Buffer("b", "VECIN", t * self.e, c["buffer_num"], ctype=self.ctype),
                Buffer("y", "VECOUT", t * self.e, c["buffer_num"], ctype=self.ctype),
                Buffer("af", "VECCALC", t * 4, queue=False, ctype="float"),
                Buffer("bf", "VECCALC", t * 4, queue=False, ctype="float"),
                Buffer("tf", "VECCALC", t * 4, queue=False, ctype="float"),
                Buffer("offA", "VECCALC", table, queue=False, ctype="int32_t"),
                Buffer("offB", "VECCALC", table, queue=False, ctype="int32_t")]
        return Resources(bufs, self.block_dim(c), "aiv", events=np.asarray(packed, dtype=int))

    def pipeline(self, cfg: dict[str, Any]) -> Pipeline:
        st = [Stage("offsets", "aiv", "V"), Stage("copy_in", "aiv", "MTE2", produces=("a", "b")),
              Stage("compute", "aiv", "V", consumes=("a", "b"), produces=("y",)),
              Stage("copy_out", "aiv", "MTE3", consumes=("y",))]
        bufs = [b for b in self.resources(cfg).buffers if int(b.nbytes) > 0]
        events = [("S_V", 0)] if cfg["layout"] == "packed" else []
        return Pipeline("forge_swiglu", "aiv", bufs, st, [], events, int(self.block_dim(cfg)))

    def unit(self, cfg: dict[str, Any], u: int) -> tuple[int, int]:
        """(elements per row, rows) of work unit u: a chunk of a row block; a row's last chunk and
        the last row block are short."""
        t, R = cfg["chunk"], cfg["rows"]
        per_row = cdiv(self.N, t)
        return int(min(t, self.N - (u % per_row) * t)), int(min(R, self.M - (u // per_row) * R) if R > 1 else 1)

    def unit_steps(self, cfg: dict[str, Any], ln: int, r: int) -> list[Step]:
        if cfg["layout"] == "packed":          # contiguous moves; two Gathers of r * N elements each
            return [Step("copy_in", nbytes=2 * r * self.N * self.e),
                    Step("compute", cycles=self.hw.vector_cycles(r * self.N * 4, self.compute_passes) +
                         self.hw.vector_cycles(r * self.N * 4, 2 * self.hw.gather_cost_factor)),
                    Step("copy_out", nbytes=r * self.N * self.e)]
        slot = round_up(ln, self.per_block)          # UB work: whole 32 B blocks (ascend.md §1.3)
        # GM: the gate and up blocks are always strided (half a row each), the output's are
        # contiguous when a block is the whole row
        return [Step("copy_in", nbytes=2 * self.gm_rows_bytes(r, ln, 2 * self.N)),
                Step("compute", cycles=self.hw.vector_cycles(r * slot * 4, self.compute_passes)),
                Step("copy_out", nbytes=self.gm_rows_bytes(r, ln, self.N))]

    def programs(self, cfg: dict[str, Any], units: int | None = None) -> tuple[dict[str, list[Step]], int]:
        """The most loaded AIV's program (its first `units` work units)."""
        bd = int(self.block_dim(cfg))
        n_units = int(cdiv(self.units(cfg), bd)) if units is None else units
        prog: list[Step] = [self.offsets_step(cfg["rows"])] if cfg["layout"] == "packed" else []
        for u in range(n_units):
            prog += self.unit_steps(cfg, *self.unit(cfg, u))
        return {"aiv0": prog}, bd

    def model(self, cfg: dict[str, Any]) -> ModelResult:
        """A long stream of units (a million one-element rows, cann-bench swi_glu case 12) is timed
        over two prefixes and extrapolated (Plan.model_prefixes). A row's short last chunk recurs
        every row, so the prefixes hold their share of them."""
        bd = int(self.block_dim(cfg))
        n_units = int(cdiv(self.units(cfg), bd))
        return self.model_prefixes(cfg, [3] * n_units, lambda n: self.programs(cfg, n)[0], bd, SIM_STEPS)

    def offsets_step(self, R: int) -> Step:
        """Building the two gather tables once per core: lcm(N, 8) scalar stores, doubling Adds."""
        seed = math.lcm(self.N, 8)
        return gather_tables_step(self.hw, 2 * R * self.N, seed, doublings(R * self.N, seed) + 1)

    def context(self, cfg: dict[str, Any]) -> dict[str, Any]:
        return dict(M=self.M, N=self.N, ELEM=self.e, CHUNK=cfg["chunk"], ROWS=cfg["rows"], PER_BLOCK=self.per_block,
                    packed=cfg["layout"] == "packed", SEED=math.lcm(self.N, 8))

    def emulation_problem(self, cfg: dict[str, Any]) -> Any:
        from forge.ops import get_op
        n = min(self.N, cfg["chunk"] * 2 + 24)            # two full chunks and an unaligned tail
        # on EMULATED_CORES AIVs, as many full row blocks each as its queues have slots and two
        # more (every slot reused), and a tail row
        m = min(self.M, cfg["rows"] * self.EMULATED_CORES * (cfg["buffer_num"] + 2) + 1)
        return get_op("swiglu").problem({"M": m, "N": n}, self.p.dtype)
