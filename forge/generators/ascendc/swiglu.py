"""SwiGLU on the AIVs: y[M, N] = silu(x[:, :N]) * x[:, N:], streamed in column chunks.

Work units are (row, chunk) pairs split evenly over the AIVs; each unit is copy_in (MTE2: the
gate and the up halves) -> compute (V, fp32) -> copy_out (MTE3). Chunks not a 32 B multiple long
move with DataCopyPad (ascend.md §2.4.3).
"""
from __future__ import annotations

from typing import Any

import numpy as np

import forge.generators.ascendc.swiglu_op  # noqa: F401  (registers the op)
from forge.backends.ascend.constraints import Resources
from forge.backends.ascend.pipeline import Buffer, Pipeline, Stage
from forge.backends.ascend.pipemodel import Step
from forge.generators.ascendc.base import RowsPlan, cdiv, round_up
from forge.space import Param, choice, pow2


class SwigluPlan(RowsPlan):
    op = "swiglu"
    template = "swiglu.cpp.j2"
    kind = "aiv"

    def params(self) -> list[Param]:
        aiv = int(self.hw.aiv)
        return [pow2("chunk", 256, 16384, doc="elements of N per UB pass"),
                choice("buffer_num", (1, 2), ordered=True),
                choice("cores", sorted({max(1, aiv // 2), aiv}), ordered=True)]

    def units(self, c: dict[str, Any]) -> Any:
        return self.M * cdiv(self.N, c["chunk"])

    def block_dim(self, c: dict[str, Any]) -> Any:
        return np.minimum(c["cores"], self.units(c))

    def resources(self, c: dict[str, Any]) -> Resources:
        t = c["chunk"]
        bufs = [Buffer("a", "VECIN", t * self.e, c["buffer_num"], ctype=self.ctype),
                Buffer("b", "VECIN", t * self.e, c["buffer_num"], ctype=self.ctype),
                Buffer("y", "VECOUT", t * self.e, c["buffer_num"], ctype=self.ctype),
                Buffer("af", "VECCALC", t * 4, queue=False, ctype="float"),
                Buffer("bf", "VECCALC", t * 4, queue=False, ctype="float"),
                Buffer("tf", "VECCALC", t * 4, queue=False, ctype="float")]
        return Resources(bufs, self.block_dim(c), "aiv")

    def pipeline(self, cfg: dict[str, Any]) -> Pipeline:
        st = [Stage("copy_in", "aiv", "MTE2", produces=("a", "b")),
              Stage("compute", "aiv", "V", consumes=("a", "b"), produces=("y",)),
              Stage("copy_out", "aiv", "MTE3", consumes=("y",))]
        return Pipeline("forge_swiglu", "aiv", self.resources(cfg).buffers, st, [], [], int(self.block_dim(cfg)))

    def programs(self, cfg: dict[str, Any]) -> tuple[dict[str, list[Step]], int]:
        bd = int(self.block_dim(cfg))
        t = cfg["chunk"]
        per_row = cdiv(self.N, t)
        n_units = cdiv(self.units(cfg), bd)
        prog: list[Step] = []
        for u in range(int(n_units)):
            ln = min(t, self.N - (u % per_row) * t)
            prog += [Step("copy_in", nbytes=2 * ln * self.e),
                     Step("compute", cycles=self.hw.vector_cycles(round_up(ln, 8) * 4, 9)),
                     Step("copy_out", nbytes=ln * self.e)]
        return {"aiv0": prog}, bd

    def context(self, cfg: dict[str, Any]) -> dict[str, Any]:
        return dict(M=self.M, N=self.N, ELEM=self.e, CHUNK=cfg["chunk"])

    def emulation_problem(self, cfg: dict[str, Any]) -> Any:
        from forge.ops import get_op
        n = min(self.N, cfg["chunk"] * 2 + 24)            # two full chunks and an unaligned tail
        return get_op("swiglu").problem({"M": min(self.M, 5), "N": n}, self.p.dtype)
