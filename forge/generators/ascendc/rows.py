"""Row-wise vector kernels on the AIVs: rmsnorm (+ residual) and softmax over x[M, N].

Three stages per tile of `rows` rows (ascend.md §2.3 vector paradigm): copy_in (MTE2) -> compute
(V, fp32) -> copy_out (MTE3), linked by VECIN/VECOUT queues of `buffer_num` blocks. Rows whose
byte length is not a 32 B multiple move with DataCopyPad (ascend.md §2.4.3) into 32 B-padded rows.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from forge.backends.ascend.constraints import Resources
from forge.backends.ascend.pipeline import Buffer, Pipeline, Stage
from forge.backends.ascend.pipemodel import Step
from forge.generators.ascendc.base import RowsPlan, cdiv, round_up
from forge.space import Constraint, Param, choice, pow2


class RowPlan(RowsPlan):
    kind = "aiv"
    n_stalls = 1                     # scalar read-backs per row
    v_passes = 6                     # fp32 vector passes over a row (cast, math, cast back)
    reduce_passes = 1

    @property
    def cols_pad(self) -> int:
        return int(round_up(self.N, 32 // self.e))

    def inputs_rows(self) -> list[str]:
        return ["x"]

    def params(self) -> list[Param]:
        aiv = int(self.hw.aiv)
        return [pow2("rows", 1, 64, doc="rows per UB pass"),
                choice("buffer_num", (1, 2), ordered=True, doc="VECIN/VECOUT blocks (2 = double buffering)"),
                choice("cores", sorted({max(1, aiv // 4), max(1, aiv // 2), aiv}), ordered=True, doc="AIVs used")]

    def block_dim(self, c: dict[str, Any]) -> Any:
        return np.minimum(c["cores"], cdiv(self.M, c["rows"]))

    def buffers(self, c: dict[str, Any]) -> list[Buffer]:
        tile = c["rows"] * self.cols_pad
        bufs = [Buffer(n, "VECIN", tile * self.e, c["buffer_num"], ctype=self.ctype) for n in self.inputs_rows()]
        bufs.append(Buffer("y", "VECOUT", tile * self.e, c["buffer_num"], ctype=self.ctype))
        bufs += self.calc_buffers(c, tile)
        return bufs

    def calc_buffers(self, c: dict[str, Any], tile: Any) -> list[Buffer]:
        return [Buffer("xf", "VECCALC", tile * 4, queue=False, ctype="float"),
                Buffer("work", "VECCALC", self.cols_pad * 4, queue=False, ctype="float"),
                Buffer("red", "VECCALC", 64, queue=False, ctype="float")]

    def resources(self, c: dict[str, Any]) -> Resources:
        return Resources(self.buffers(c), self.block_dim(c), "aiv", events=1)

    def stages(self) -> list[Stage]:
        ins = tuple(self.inputs_rows())
        return [Stage("copy_in", "aiv", "MTE2", produces=ins), Stage("compute", "aiv", "V", consumes=ins, produces=("y",)),
                Stage("copy_out", "aiv", "MTE3", consumes=("y",))]

    def pipeline(self, cfg: dict[str, Any]) -> Pipeline:
        bufs = [b for b in self.buffers(cfg) if int(b.nbytes) > 0]      # a mode's unused buffers have size 0
        return Pipeline(f"forge_{self.op}", "aiv", bufs, self.stages(), [], [("V_S", 0)], int(self.block_dim(cfg)))

    def programs(self, cfg: dict[str, Any]) -> tuple[dict[str, list[Step]], int]:
        bd = int(self.block_dim(cfg))
        rows_core = cdiv(self.M, bd)
        R = cfg["rows"]
        prog: list[Step] = []
        pre = self.prologue(cfg)
        prog += pre
        for t in range(cdiv(rows_core, R)):
            r = min(R, rows_core - t * R)
            row_b = r * self.N * self.e
            prog.append(Step("copy_in", nbytes=row_b * len(self.inputs_rows())))
            prog.append(self.compute_step(cfg, r))
            prog.append(Step("copy_out", nbytes=row_b))
        return {"aiv0": prog}, bd

    def compute_step(self, cfg: dict[str, Any], r: int) -> Step:
        """One tile of r rows, reduced one row at a time (a scalar read-back per row)."""
        vcyc = self.hw.vector_cycles(r * self.cols_pad * 4, self.v_passes) + \
            self.hw.vector_cycles(r * self.cols_pad * 4, self.reduce_passes * self.hw.reduce_cost_factor)
        return Step("compute", cycles=vcyc, stalls=r * self.n_stalls)

    def prologue(self, cfg: dict[str, Any]) -> list[Step]:
        return []

    def context(self, cfg: dict[str, Any]) -> dict[str, Any]:
        return dict(M=self.M, N=self.N, COLS_PAD=self.cols_pad, aligned=(self.N * self.e) % 32 == 0,
                    ELEM=self.e, inputs=self.inputs_rows())

    def emulation_problem(self, cfg: dict[str, Any]) -> Any:
        from forge.ops import get_op
        m = min(self.M, cfg["rows"] * 2 * 3 + 1)          # 3 tiles per core on 2 cores, plus a tail row
        return get_op(self.op).problem({"M": m, "N": self.N}, self.p.dtype, dict(self.p.attrs))


# Rows per high-dimensional vector call in the cross-row reduction: repeatTime <= 255 (ascend.md §1.4,
# §2.5), a multiple of 8 so Brcb's 8 elements per repeat stay within a group.
GROUP = 248
ONE_REPEAT_F32 = 64       # fp32 elements in one 256 B repeat: a row that fits is one repeat


class RmsNormPlan(RowPlan):
    op = "rmsnorm"
    template = "rmsnorm.cpp.j2"

    def params(self) -> list[Param]:
        base = super().params()
        return [pow2("rows", 1, 2048, doc="rows per UB pass (over 64 only with the cross-row reduction)"),
                choice("reduce", ("row", "cross"), doc="row: one row at a time, a scalar read-back each; cross: "
                       "rows of at most 64 fp32 lanes reduced together, one repeat per row")] + base[1:]

    def extra_constraints(self) -> list[Constraint]:
        fits, M = self.cols_pad <= ONE_REPEAT_F32, self.M
        return [Constraint("reduce", lambda c: (c["reduce"] == "row") | fits,
                           lambda c: f"cross-row reduction needs a row of at most {ONE_REPEAT_F32} elements "
                                     f"(one repeat); this one has {self.cols_pad}"),
                Constraint("rows", lambda c: (c["rows"] <= 64) | ((c["reduce"] == "cross") & (c["rows"] < 2 * M)),
                           lambda c: f"{c['rows']} rows per pass need the cross-row reduction and at most "
                                     f"about M = {M} rows")]

    @property
    def v_passes(self) -> int:  # type: ignore[override]
        """fp32 vector passes over a row; in place there is no cast in and no cast out."""
        return 4 if self.in_place else 6

    def inputs_rows(self) -> list[str]:
        return ["x", "r"] if self.p.attrs.get("residual") else ["x"]

    @property
    def in_place(self) -> bool:
        """fp32 rows need no fp32 copies: the row is normalised in its input block and x^2 is
        staged in its output block. Without this a float32 row of N = 8192 (cann-bench rms_norm
        case 5) needs 7 row-sized buffers, 224 KiB, over the 910B's 191.75 KiB of UB."""
        return self.p.dtype == "float32"

    def calc_buffers(self, c: dict[str, Any], tile: Any) -> list[Buffer]:
        def calc(name: str, nbytes: Any) -> Buffer:
            return Buffer(name, "VECCALC", nbytes, queue=False, ctype="float")

        cross = np.asarray(c["reduce"]) == "cross"
        g = np.minimum(c["rows"], GROUP)
        gpad = round_up(g, 8)
        # row mode: x^2 of one row, ReduceSum's scratch, its result; cross mode: x^2 of a group of rows,
        # the per-row sums (then rstd), ones to divide, and rstd broadcast to one 32 B block per row.
        # In place (fp32) x^2 is staged in the output block instead of `sq`.
        bufs = [calc("wf", self.cols_pad * 4),
                calc("work", np.where(cross, 0, self.cols_pad * 4)), calc("red", np.where(cross, 0, 64)),
                calc("sums", np.where(cross, gpad * 4, 0)), calc("ones", np.where(cross, gpad * 4, 0)),
                calc("bcast", np.where(cross, gpad * 32, 0))]
        if not self.in_place:
            bufs += [calc("sq", np.where(cross, g * self.cols_pad * 4, self.cols_pad * 4)), calc("xf", tile * 4)]
            if self.p.attrs.get("residual"):
                bufs.append(calc("rf", tile * 4))
        return bufs + [Buffer("w", "VECIN", self.cols_pad * self.e, 1, ctype=self.ctype)]

    def compute_step(self, cfg: dict[str, Any], r: int) -> Step:
        if cfg["reduce"] == "row":
            return super().compute_step(cfg, r)
        # cross-row: count-form passes over the tile (x^2; casts in and out unless in place), and per
        # row one repeat each of WholeReduceSum and the two broadcast multiplies, no scalar read-back
        count_passes = 1 if self.in_place else 3
        groups = cdiv(r, GROUP)
        vcyc = self.hw.vector_cycles(r * self.cols_pad * 4, count_passes) + \
            self.hw.vector_cycles(r * 256, self.hw.reduce_cost_factor + 2) + \
            groups * self.hw.vector_cycles(GROUP * 32, 5)          # rstd of a group, then Brcb
        return Step("compute", cycles=vcyc, calls=2 + groups * 10)

    def stages(self) -> list[Stage]:
        return [Stage("load_w", "aiv", "MTE2", produces=("w",)), Stage("cast_w", "aiv", "V", consumes=("w",))] + \
            super().stages()

    def prologue(self, cfg: dict[str, Any]) -> list[Step]:
        return [Step("load_w", nbytes=self.N * self.e, stream="l2"),
                Step("cast_w", cycles=self.hw.vector_cycles(self.cols_pad * 4))]

    def context(self, cfg: dict[str, Any]) -> dict[str, Any]:
        return dict(super().context(cfg), residual=bool(self.p.attrs.get("residual")), eps=float(self.p.attrs["eps"]),
                    in_place=self.in_place, cross=cfg["reduce"] == "cross", GROUP=GROUP,
                    GROUP_PAD=int(round_up(min(cfg["rows"], GROUP), 8)))


class SoftmaxPlan(RowPlan):
    op = "softmax"
    template = "softmax.cpp.j2"
    n_stalls = 2
    v_passes = 5
    reduce_passes = 2
