"""Rows too long for the Unified Buffer: rmsnorm (+ residual) and softmax over x[M, N] in chunks.

The row kernels (rows.py) keep a whole row in UB, with its fp32 copies; from about 8K fp16
elements (rmsnorm N = 11008: 236.6 KiB > 191.75 KiB) no row fits, and a vocabulary softmax
(N = 151936) is twenty times over. Here a row streams through UB `chunk` elements at a time, in
two passes over GM (the second read of a row is usually an L2 hit: ascend.md §1.5):

- pass 1 (`stats`): per chunk the row's statistic is folded into one fp32 value in UB: rmsnorm's
  sum of x^2 (ReduceSum, then Add, no scalar read-back); softmax's running max m and sum s,
  online (m' = max(m, chunk max) read back to the scalar unit, s = s·exp(m - m') +
  sum(exp(x - m')) on the vector unit);
- pass 2 (`normalize`): per chunk y = x·rstd·w or exp(x - m)/s, written out chunk by chunk.

Work units are rows, a contiguous range per AIV. The last chunk of a row may be short; DataCopyPad
pads it to 32 B and every vector op counts only its `len` elements.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from forge.backends.ascend.constraints import Resources
from forge.backends.ascend.pipeline import Buffer, Pipeline, Stage
from forge.backends.ascend.pipemodel import ModelResult, Step
from forge.generators.ascendc.base import SIM_STEPS, RowsPlan, cdiv, round_up
from forge.generators.ascendc.rows import fp32_scratch
from forge.space import Constraint, Param, choice, pow2


class LongRowPlan(RowsPlan):
    kind = "aiv"
    # pass 1, per chunk: fp32 vector passes (casts, math), reductions (ReduceSum/Max), ops on the
    # one-value statistic, scalar read-backs; and one read-back per row before pass 2
    stats_passes = 0
    stats_reductions = 0
    stats_small_ops = 0
    stalls_per_chunk = 0
    stalls_per_row = 1

    def params(self) -> list[Param]:
        return [pow2("chunk", 256, 16384, doc="elements of a row per UB pass"),
                choice("buffer_num", (1, 2), ordered=True, doc="VECIN/VECOUT blocks (2 = double buffering)"),
                self.cores_param()]

    def extra_constraints(self) -> list[Constraint]:
        N = self.N
        return [Constraint("chunk", lambda c: np.asarray(c["chunk"]) < N,
                           lambda c: f"chunk {c['chunk']} covers the whole row (N = {N}): rows this long "
                                     "are streamed in shorter chunks"),
                self.cores_constraint(self.units)]

    def inputs_rows(self) -> list[str]:
        return ["x"]

    def units(self, c: dict[str, Any]) -> Any:
        return np.full_like(np.asarray(c["cores"]), self.M)

    def block_dim(self, c: dict[str, Any]) -> Any:
        return np.minimum(c["cores"], self.M)

    def chunk_buffers(self, c: dict[str, Any]) -> list[Buffer]:
        """Op-specific buffers beside the inputs, the output and the fp32 chunk."""
        return []

    def buffers(self, c: dict[str, Any]) -> list[Buffer]:
        chunk = np.asarray(c["chunk"])
        bufs = [Buffer(n, "VECIN", chunk * self.e, c["buffer_num"], ctype=self.ctype) for n in self.inputs_rows()]
        bufs += [Buffer("y", "VECOUT", chunk * self.e, c["buffer_num"], ctype=self.ctype),
                 fp32_scratch("xf", chunk * 4),                 # the chunk in fp32
                 fp32_scratch("work", chunk * 4),               # ReduceSum/Max's work area
                 fp32_scratch("stat", 96)]                      # the statistic, a chunk's reduction, a factor
        return bufs + self.chunk_buffers(c)

    def resources(self, c: dict[str, Any]) -> Resources:
        return Resources(self.buffers(c), self.block_dim(c), "aiv", events=1)

    def stages(self, cfg: dict[str, Any]) -> list[Stage]:
        ins = tuple(self.inputs_rows())
        return [Stage("copy_in", "aiv", "MTE2", produces=ins),
                Stage("stats", "aiv", "V", consumes=ins),
                Stage("normalize", "aiv", "V", consumes=ins, produces=("y",)),
                Stage("copy_out", "aiv", "MTE3", consumes=("y",))]

    def pipeline(self, cfg: dict[str, Any]) -> Pipeline:
        return Pipeline(f"forge_{self.op}", "aiv", self.buffers(cfg), self.stages(cfg), [], [("V_S", 0)],
                        int(self.block_dim(cfg)))

    # -- the modeled schedule -----------------------------------------------------------------
    def chunk_lens(self, cfg: dict[str, Any]) -> list[int]:
        chunk = int(cfg["chunk"])
        return [min(chunk, self.N - c0) for c0 in range(0, self.N, chunk)]

    def reload_stage(self, cfg: dict[str, Any]) -> str:
        """The stage that reads a chunk again in pass 2."""
        return "copy_in"

    def norm_inputs(self, cfg: dict[str, Any]) -> int:
        """Chunks read in pass 2: each of the row's inputs (and rmsnorm's streamed weights)."""
        return len(self.inputs_rows())

    def norm_passes(self, cfg: dict[str, Any]) -> int:
        """fp32 vector passes over a chunk in pass 2."""
        raise NotImplementedError

    def row_steps(self, cfg: dict[str, Any]) -> list[Step]:
        """One row: pass 1 (copy in, fold the statistic) and pass 2 (copy in, normalise, copy out)."""
        hw, n_in = self.hw, len(self.inputs_rows())
        prog: list[Step] = []
        lens = self.chunk_lens(cfg)
        ops = self.stats_passes + self.stats_reductions + self.stats_small_ops
        for i, ln in enumerate(lens):
            cyc = hw.vector_cycles(ln * 4, self.stats_passes + self.stats_reductions * hw.reduce_cost_factor) + \
                hw.vector_cycles(32, self.stats_small_ops)
            stalls = self.stalls_per_chunk + (self.stalls_per_row if i == len(lens) - 1 else 0)
            prog += [Step("copy_in", nbytes=ln * self.e * n_in), Step("stats", cycles=cyc, calls=2 * ops, stalls=stalls)]
        stage, n_reload, passes = self.reload_stage(cfg), self.norm_inputs(cfg), self.norm_passes(cfg)
        for ln in lens:
            prog += [Step(stage, nbytes=ln * self.e * n_reload, stream="l2"),
                     Step("normalize", cycles=hw.vector_cycles(ln * 4, passes), calls=2 * passes),
                     Step("copy_out", nbytes=ln * self.e)]
        return prog

    def prologue(self, cfg: dict[str, Any]) -> list[Step]:
        return []

    def programs(self, cfg: dict[str, Any], rows: int | None = None) -> tuple[dict[str, list[Step]], int]:
        """The most loaded AIV's rows in turn (the first `rows` of them)."""
        bd = int(self.block_dim(cfg))
        n = int(cdiv(self.M, bd)) if rows is None else rows
        return {"aiv0": self.prologue(cfg) + self.row_steps(cfg) * n}, bd

    def model(self, cfg: dict[str, Any]) -> ModelResult:
        """Every row is the same steps: a long stream is timed over two prefixes of whole rows and
        extrapolated (Plan.model_prefixes)."""
        bd = int(self.block_dim(cfg))
        per_row = len(self.row_steps(cfg))
        return self.model_prefixes(cfg, [per_row] * int(cdiv(self.M, bd)), lambda n: self.programs(cfg, n)[0],
                                   bd, SIM_STEPS)

    # -- source ---------------------------------------------------------------------------------
    def context(self, cfg: dict[str, Any]) -> dict[str, Any]:
        return dict(M=self.M, N=self.N, CHUNK=int(cfg["chunk"]), ELEM=self.e, PER_BLOCK=self.per_block,
                    inputs=self.inputs_rows())

    def emulation_problem(self, cfg: dict[str, Any]) -> Any:
        """Up to 7 rows (several per AIV on two or more); two whole chunks and a short last one."""
        from forge.ops import get_op
        chunk = int(cfg["chunk"])
        n = min(self.N, 2 * chunk + (self.N % chunk or chunk // 2 + 3))
        return get_op(self.op).problem({"M": min(self.M, 7), "N": n}, self.p.dtype, dict(self.p.attrs))


class LongRmsNormPlan(LongRowPlan):
    """Every row reads all the weights: `weights=resident` casts them into UB once per AIV (N fp32
    values, where they fit beside the chunks), `weights=stream` reads their chunk beside x in pass
    2 (an L2 read per row as large as the row)."""
    op = "rmsnorm"
    template = "rmsnorm_long.cpp.j2"
    stats_reductions = 1
    stats_small_ops = 1             # add the chunk's sum to the row's

    @property
    def residual(self) -> bool:
        return bool(self.p.attrs.get("residual"))

    def params(self) -> list[Param]:
        return super().params() + [choice("weights", ("resident", "stream"),
                                          doc="fp32 weights kept in UB for every row, or read per chunk with x")]

    def inputs_rows(self) -> list[str]:
        return ["x", "r"] if self.residual else ["x"]

    @property
    def stats_passes(self) -> int:  # type: ignore[override]
        """Casts in (x, r), the residual add, x^2."""
        return 2 + 2 * self.residual

    @staticmethod
    def resident(cfg: dict[str, Any]) -> Any:
        return np.asarray(cfg["weights"]) == "resident"

    def norm_passes(self, cfg: dict[str, Any]) -> int:
        """Casts in (x, r, and w when streamed), the residual add, * rstd, * w, the cast out."""
        return 4 + 2 * self.residual + int(not self.resident(cfg))

    def norm_inputs(self, cfg: dict[str, Any]) -> int:
        return len(self.inputs_rows()) + int(not self.resident(cfg))

    def reload_stage(self, cfg: dict[str, Any]) -> str:
        return "copy_in" if self.resident(cfg) else "copy_in_w"

    def chunk_buffers(self, c: dict[str, Any]) -> list[Buffer]:
        chunk, resident = np.asarray(c["chunk"]), self.resident(c)
        # resident: w passes through one chunk block on its way into the whole row of fp32 weights
        bufs = [Buffer("w", "VECIN", chunk * self.e, np.where(resident, 1, c["buffer_num"]), ctype=self.ctype),
                fp32_scratch("wf", np.where(resident, round_up(self.N, 8) * 4, chunk * 4))]
        if self.residual:
            bufs.append(fp32_scratch("rf", chunk * 4))
        return bufs

    def stages(self, cfg: dict[str, Any]) -> list[Stage]:
        ins = tuple(self.inputs_rows())
        if self.resident(cfg):
            return [Stage("load_w", "aiv", "MTE2", produces=("w",)), Stage("cast_w", "aiv", "V", consumes=("w",))] + \
                super().stages(cfg)
        return [Stage("copy_in", "aiv", "MTE2", produces=ins),
                Stage("stats", "aiv", "V", consumes=ins),
                Stage("copy_in_w", "aiv", "MTE2", produces=ins + ("w",)),
                Stage("normalize", "aiv", "V", consumes=ins + ("w",), produces=("y",)),
                Stage("copy_out", "aiv", "MTE3", consumes=("y",))]

    def prologue(self, cfg: dict[str, Any]) -> list[Step]:
        """Resident weights: each chunk of w loaded and cast into place, once per AIV."""
        if not self.resident(cfg):
            return []
        return [s for ln in self.chunk_lens(cfg)
                for s in (Step("load_w", nbytes=ln * self.e, stream="l2"),
                          Step("cast_w", cycles=self.hw.vector_cycles(ln * 4), calls=2))]

    def context(self, cfg: dict[str, Any]) -> dict[str, Any]:
        return dict(super().context(cfg), residual=self.residual, eps=float(self.p.attrs["eps"]),
                    resident=bool(self.resident(cfg)))


class LongSoftmaxPlan(LongRowPlan):
    op = "softmax"
    template = "softmax_long.cpp.j2"
    stats_passes = 3                # the cast in, - m', exp
    stats_reductions = 2            # ReduceMax, ReduceSum
    stats_small_ops = 5             # m - m', its exp, s * it, + the chunk's sum; the max's read-back
    stalls_per_chunk = 1            # the chunk's max, read back to the scalar unit

    def norm_passes(self, cfg: dict[str, Any]) -> int:
        """The cast in, - m, exp, * 1/s, the cast out."""
        return 5
