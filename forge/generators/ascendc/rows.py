"""Row-wise vector kernels on the AIVs: rmsnorm (+ residual) and softmax over x[M, N].

Three stages per tile of `rows` rows (ascend.md §2.3 vector paradigm): copy_in (MTE2) -> compute
(V, fp32) -> copy_out (MTE3), linked by VECIN/VECOUT queues of `buffer_num` blocks. Rows whose
byte length is not a 32 B multiple move with DataCopyPad (ascend.md §2.4.3) into 32 B-padded rows,
except in the packed mode for short rows: there a tile is its rows' contiguous values, and two
Gathers move it to column slabs and back, so a row of two elements does not fill a 32 B block.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from forge.backends.ascend.constraints import Resources, hard_constraints
from forge.backends.ascend.hw import AscendHW
from forge.backends.ascend.pipeline import Buffer, Pipeline, Stage
from forge.backends.ascend.pipemodel import ModelResult, Step
from forge.generators.ascendc.base import SIM_STEPS, RowsPlan, cdiv, round_up
from forge.space import Constraint, Param, choice, pow2

# Rows per high-dimensional vector call in the cross-row reduction: repeatTime <= 255 (ascend.md §1.4,
# §2.5), a multiple of 8 so Brcb's 8 elements per repeat stay within a group.
GROUP = 248
ONE_REPEAT_F32 = 64       # fp32 elements in one 256 B repeat
# Longest padded row of the cross-row reduction: a row's stride in a high-dimensional call is its
# 32 B blocks, a uint8 repeat stride (ascend.md §2.5): 255 blocks, 2040 fp32 elements.
CROSS_MAX_F32 = 255 * 8
# Longest row of the packed mode: a padded row wastes 32 B - N*e of every block, the packed mode
# costs two Gathers and about 5N vector calls of `rows` elements per pass; from 16 elements (a
# whole fp16 block) the padded layout wastes at most half and needs no Gather.
PACK_MAX_N = 16
# Fewest rows of a packed pass: column slabs start ROWS * 4 B apart, a 32 B multiple (ascend.md §1.3).
PACK_MIN_ROWS = 8


def doublings(entries: int, seed: int) -> int:
    """Vector Adds that double a table from its first `seed` entries to `entries`."""
    return int(math.ceil(math.log2(max(entries / seed, 1))))


def gather_tables_step(hw: AscendHW, entries: int, stores: int, adds: int) -> Step:
    """Building packed mode's gather tables once per core (int32 entries): `stores` written by the
    scalar unit, then `adds` vector Adds (each with its barrier), one S->V wait."""
    return Step("offsets", cycles=hw.vector_cycles(entries * 4) + stores * hw.scalar_issue_cycles,
                calls=2 * adds, stalls=1)


def fp32_scratch(name: str, nbytes: Any) -> Buffer:
    """A VECCALC buffer of fp32 working values (0 B: not used by this config's mode)."""
    return Buffer(name, "VECCALC", nbytes, queue=False, ctype="float")


class RowPlan(RowsPlan):
    kind = "aiv"
    n_stalls = 1                     # scalar read-backs per row
    v_passes = 6                     # fp32 vector passes over a row (cast, math, cast back)
    reduce_passes = 1
    # reduce=cross (a group of rows reduced together, no scalar read-back): vector passes
    # over the tile in count form, per-row repeats (a reduction counts reduce_cost_factor), and
    # count-form ops on a group's per-row values
    cross_count_passes = 3
    cross_repeat_ops = 2
    cross_reductions = 1
    cross_group_ops = 5
    # a row of several repeats is folded lane-wise into one repeat before each reduction: in place
    # (rmsnorm's x^2 is not needed after), or into a scratch repeat per row (softmax's values are)
    fold_scratch = False

    @property
    def cols_pad(self) -> int:
        return int(round_up(self.N, self.per_block))

    @property
    def reps(self) -> int:
        """256 B fp32 repeats of a padded row."""
        return int(cdiv(self.cols_pad, ONE_REPEAT_F32))

    def inputs_rows(self) -> list[str]:
        return ["x"]

    def params(self) -> list[Param]:
        return [pow2("rows", 1, 2048, doc="rows per UB pass (over 64 only with the cross-row reduction)"),
                choice("reduce", ("row", "cross", "packed"), doc="row: one row at a time, a scalar read-back each; "
                       "cross: a group of rows reduced together, each row's repeats folded into one; packed: rows "
                       f"of at most {PACK_MAX_N} elements kept contiguous, gathered into column slabs"),
                choice("buffer_num", (1, 2), ordered=True, doc="VECIN/VECOUT blocks (2 = double buffering)"),
                self.cores_param()]

    def extra_constraints(self) -> list[Constraint]:
        fits, M, short = self.cols_pad <= CROSS_MAX_F32, self.M, self.N <= PACK_MAX_N
        return [Constraint("reduce", lambda c: (c["reduce"] != "cross") | fits,
                           lambda c: f"cross-row reduction needs a row of at most {CROSS_MAX_F32} elements "
                                     f"(255 blocks); this one has {self.cols_pad}"),
                Constraint("reduce", lambda c: (c["reduce"] != "packed") | (short & (c["rows"] >= PACK_MIN_ROWS)),
                           lambda c: f"packed rows need rows of at most {PACK_MAX_N} elements (this one has "
                                     f"{self.N}) and at least {PACK_MIN_ROWS} rows per pass"),
                Constraint("rows", lambda c: (c["rows"] <= 64) | ((c["reduce"] != "row") & (c["rows"] < 2 * M)),
                           lambda c: f"{c['rows']} rows per pass need the cross-row or packed reduction and "
                                     f"at most about M = {M} rows"),
                self.cores_constraint(self.units)]

    def reduce_buffers(self, c: dict[str, Any]) -> list[Buffer]:
        """Scratch of the reduction, 0 B where the mode does not use it. Row mode: ReduceSum/Max's
        work area and result. Cross mode: one value per row of a group (max, sum, rstd...), ones to
        divide by, those values broadcast to one 32 B block per row (Brcb), and for rows of several
        repeats folded out of place, one repeat per row of a group."""
        mode = np.asarray(c["reduce"])
        cross, packed, row = mode == "cross", mode == "packed", mode == "row"
        gpad = round_up(np.minimum(c["rows"], GROUP), 8)
        part = cross & (self.reps > 1) & self.fold_scratch
        per_row = np.where(cross, gpad * 4, np.where(packed, round_up(c["rows"], 8) * 4, 0))
        table = np.where(packed, round_up(c["rows"] * self.N, 8) * 4, 0)
        return [fp32_scratch("work", np.where(row, self.cols_pad * 4, 0)),
                fp32_scratch("red", np.where(row, 64, 0)),
                fp32_scratch("stat", per_row), fp32_scratch("ones", per_row),
                fp32_scratch("bcast", np.where(cross, gpad * 32, 0)),
                fp32_scratch("part", np.where(part, np.minimum(c["rows"], GROUP) * ONE_REPEAT_F32 * 4, 0)),
                # packed: the column slabs and the two gather tables (byte offsets)
                fp32_scratch("xt", table), Buffer("offT", "VECCALC", table, queue=False, ctype="int32_t"),
                Buffer("offI", "VECCALC", table, queue=False, ctype="int32_t")]

    def whole_rows_fit(self) -> bool:
        """Whether one row, with its fp32 copies, fits the UB in the smallest config; longer rows
        are streamed in chunks (long_rows.py)."""
        cfg = {"rows": 1, "reduce": "row", "buffer_num": 1, "cores": min(self.cores_param().values)}
        return all(bool(np.all(k.ok(cfg))) for k in hard_constraints(self.hw, self.resources))

    def units(self, c: dict[str, Any]) -> Any:
        return cdiv(self.M, c["rows"])

    def block_dim(self, c: dict[str, Any]) -> Any:
        return np.minimum(c["cores"], self.units(c))

    def tile_elems(self, c: dict[str, Any]) -> Any:
        """Elements of one input block: padded rows, or (packed) the rows' values end to end."""
        packed = np.asarray(c["reduce"]) == "packed"
        return np.where(packed, round_up(c["rows"] * self.N, self.per_block), c["rows"] * self.cols_pad)

    def buffers(self, c: dict[str, Any]) -> list[Buffer]:
        tile = self.tile_elems(c)
        bufs = [Buffer(n, "VECIN", tile * self.e, c["buffer_num"], ctype=self.ctype) for n in self.inputs_rows()]
        bufs.append(Buffer("y", "VECOUT", tile * self.e, c["buffer_num"], ctype=self.ctype))
        bufs += self.calc_buffers(c, tile)
        return bufs

    def calc_buffers(self, c: dict[str, Any], tile: Any) -> list[Buffer]:
        return [fp32_scratch("xf", tile * 4)] + self.reduce_buffers(c)

    def resources(self, c: dict[str, Any]) -> Resources:
        # V_S for the scalar read-backs; packed also S_V after storing its gather tables' first entries
        events = np.where(np.asarray(c["reduce"]) == "packed", 2, 1)
        return Resources(self.buffers(c), self.block_dim(c), "aiv", events=events)

    def stages(self) -> list[Stage]:
        ins = tuple(self.inputs_rows())
        return [Stage("offsets", "aiv", "V"),
                Stage("copy_in", "aiv", "MTE2", produces=ins), Stage("compute", "aiv", "V", consumes=ins, produces=("y",)),
                Stage("copy_out", "aiv", "MTE3", consumes=("y",))]

    def pipeline(self, cfg: dict[str, Any]) -> Pipeline:
        bufs = [b for b in self.buffers(cfg) if int(b.nbytes) > 0]      # a mode's unused buffers have size 0
        events = [("V_S", 0)] + ([("S_V", 1)] if cfg["reduce"] == "packed" else [])
        return Pipeline(f"forge_{self.op}", "aiv", bufs, self.stages(), [], events, int(self.block_dim(cfg)))

    def tile_rows(self, cfg: dict[str, Any]) -> list[int]:
        """Rows of each tile of the most loaded AIV: `rows` each, the last one short."""
        rows_core, R = int(cdiv(self.M, int(self.block_dim(cfg)))), int(cfg["rows"])
        return [min(R, rows_core - t * R) for t in range(int(cdiv(rows_core, R)))]

    def programs(self, cfg: dict[str, Any], tiles: int | None = None) -> tuple[dict[str, list[Step]], int]:
        """The most loaded AIV's program (its first `tiles` tiles)."""
        bd = int(self.block_dim(cfg))
        prog: list[Step] = self.prologue(cfg)
        if cfg["reduce"] == "packed":
            prog.append(self.offsets_step(cfg))
        for r in self.tile_rows(cfg)[:tiles]:
            row_b = r * self.N * self.e
            prog.append(Step("copy_in", nbytes=row_b * len(self.inputs_rows())))
            prog.append(self.compute_step(cfg, r))
            prog.append(Step("copy_out", nbytes=row_b))
        return {"aiv0": prog}, bd

    def model(self, cfg: dict[str, Any]) -> ModelResult:
        """Every tile is the same three steps: a stream of a million short rows (cann-bench's
        rms_norm case 15) is timed over two prefixes of whole tiles and extrapolated per row
        (Plan.model_prefixes), so the short last tile weighs what its rows do."""
        rows = self.tile_rows(cfg)
        return self.model_prefixes(cfg, [3] * len(rows), lambda n: self.programs(cfg, n)[0],
                                   int(self.block_dim(cfg)), SIM_STEPS, rows)

    # packed mode: vector calls of `rows` elements per column slab (a reduction's N - 1 calls
    # between slabs counted as N), and calls on the per-row values, per pass (set by each op)
    packed_col_ops = 0
    packed_row_ops = 0

    def offsets_step(self, cfg: dict[str, Any]) -> Step:
        """Building the two gather tables once per core: lcm(N, 8) + 8 scalar stores, then doubling
        Adds (log2 steps) and one Adds per further column slab."""
        R, N = cfg["rows"], self.N
        adds = int(math.log2(max(R // 8, 1))) + (N - 1) + doublings(R * N, math.lcm(N, 8))
        return gather_tables_step(self.hw, 2 * R * N, math.lcm(N, 8) + 8, adds)

    def packed_step(self, cfg: dict[str, Any], r: int) -> Step:
        """One packed tile: casts over the contiguous values, a Gather of the whole table into column
        slabs and one of the r rows back (each element its own UB access: `gather_cost_factor`),
        and the per-column and per-row vector calls on r elements."""
        R, N = cfg["rows"], self.N
        flat = r * N * 4
        vcyc = self.hw.vector_cycles(flat, self.packed_flat_passes) + \
            self.hw.vector_cycles(R * N * 4 + flat, self.hw.gather_cost_factor) + \
            self.hw.vector_cycles(r * 4, self.packed_col_ops * N + self.packed_row_ops)
        ops = self.packed_flat_passes + 2 + self.packed_col_ops * N + self.packed_row_ops
        return Step("compute", cycles=vcyc, calls=2 * ops)                   # each op and its barrier

    @property
    def packed_flat_passes(self) -> int:
        """Vector passes over the contiguous values: the casts in and out."""
        return 2

    def compute_step(self, cfg: dict[str, Any], r: int) -> Step:
        """One tile of r rows: reduced one row at a time (a scalar read-back per row), across rows
        (each row's repeats folded into one for each reduction, no read-back), or packed."""
        if cfg["reduce"] == "packed":
            return self.packed_step(cfg, r)
        if cfg["reduce"] == "row":
            vcyc = self.hw.vector_cycles(r * self.cols_pad * 4, self.v_passes) + \
                self.hw.vector_cycles(r * self.cols_pad * 4, self.reduce_passes * self.hw.reduce_cost_factor)
            return Step("compute", cycles=vcyc, stalls=r * self.n_stalls)
        groups = cdiv(r, GROUP)
        reps = self.reps
        # lane-wise folds of a row's repeats into one, per reduction (plus the copy out of place)
        folds = (reps - 1 + int(self.fold_scratch)) if reps > 1 else 0
        per_row = self.cross_repeat_ops * reps + self.cross_reductions * (self.hw.reduce_cost_factor + folds)
        vcyc = self.hw.vector_cycles(r * self.cols_pad * 4, self.cross_count_passes) + \
            self.hw.vector_cycles(r * 256, per_row) + groups * self.hw.vector_cycles(GROUP * 32, self.cross_group_ops)
        ops = self.cross_repeat_ops * reps + self.cross_reductions * (1 + folds) + self.cross_group_ops
        return Step("compute", cycles=vcyc, calls=2 + groups * 2 * ops)        # each op and its barrier

    def prologue(self, cfg: dict[str, Any]) -> list[Step]:
        return []

    def context(self, cfg: dict[str, Any]) -> dict[str, Any]:
        packed = cfg["reduce"] == "packed"
        return dict(M=self.M, N=self.N, COLS_PAD=self.cols_pad, aligned=(self.N * self.e) % 32 == 0,
                    ELEM=self.e, inputs=self.inputs_rows(), cross=cfg["reduce"] == "cross", GROUP=GROUP,
                    packed=packed, SEED=math.lcm(self.N, 8), COUNT="rows * N" if packed else "rows * COLS_PAD",
                    GROUP_PAD=int(round_up(min(cfg["rows"], GROUP), 8)), REPS=self.reps, LANES=ONE_REPEAT_F32)

    def emulation_problem(self, cfg: dict[str, Any]) -> Any:
        from forge.ops import get_op
        # on EMULATED_CORES AIVs, as many full tiles each as its queues have slots and two more (every
        # slot reused), plus a tail row
        m = min(self.M, cfg["rows"] * self.EMULATED_CORES * (cfg["buffer_num"] + 2) + 1)
        return get_op(self.op).problem({"M": m, "N": self.N}, self.p.dtype, dict(self.p.attrs))


class RmsNormPlan(RowPlan):
    op = "rmsnorm"
    template = "rmsnorm.cpp.j2"

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

    @property
    def cross_count_passes(self) -> int:  # type: ignore[override]
        """x^2, and the casts in and out unless in place."""
        return 1 if self.in_place else 3

    packed_col_ops = 4                # x^2 and its sum, * rstd, * w
    packed_row_ops = 5                # / N, + eps, sqrt, ones, 1 / x

    @property
    def packed_flat_passes(self) -> int:  # type: ignore[override]
        """The casts in and out unless in place, and the residual's cast and add."""
        residual = (1 if self.in_place else 2) if self.p.attrs.get("residual") else 0
        return (0 if self.in_place else 2) + residual

    def calc_buffers(self, c: dict[str, Any], tile: Any) -> list[Buffer]:
        # the fp32 weights; in row mode x^2 of one row, in cross mode of a group of rows (in place:
        # staged in the output block); the fp32 copies of x (and r) unless in place
        mode = np.asarray(c["reduce"])
        cross, packed = mode == "cross", mode == "packed"
        bufs = [fp32_scratch("wf", self.cols_pad * 4)] + self.reduce_buffers(c)
        bufs.append(fp32_scratch("sqt", np.where(packed, round_up(c["rows"], 8) * 4, 0)))   # packed: one column's x^2
        if not self.in_place:
            g = np.minimum(c["rows"], GROUP)
            bufs += [fp32_scratch("sq", np.where(cross, g * self.cols_pad * 4, np.where(packed, 0, self.cols_pad * 4))),
                     fp32_scratch("xf", tile * 4)]
            if self.p.attrs.get("residual"):
                bufs.append(fp32_scratch("rf", tile * 4))
        return bufs + [Buffer("w", "VECIN", self.cols_pad * self.e, 1, ctype=self.ctype)]

    def stages(self) -> list[Stage]:
        return [Stage("load_w", "aiv", "MTE2", produces=("w",)), Stage("cast_w", "aiv", "V", consumes=("w",))] + \
            super().stages()

    def prologue(self, cfg: dict[str, Any]) -> list[Step]:
        return [Step("load_w", nbytes=self.N * self.e, stream="l2"),
                Step("cast_w", cycles=self.hw.vector_cycles(self.cols_pad * 4))]

    def context(self, cfg: dict[str, Any]) -> dict[str, Any]:
        return dict(super().context(cfg), residual=bool(self.p.attrs.get("residual")), eps=float(self.p.attrs["eps"]),
                    in_place=self.in_place)


class SoftmaxPlan(RowPlan):
    op = "softmax"
    template = "softmax.cpp.j2"
    n_stalls = 2
    v_passes = 5
    reduce_passes = 2
    cross_count_passes = 3            # cast in, Exp, cast out
    cross_reductions = 2              # WholeReduceMax, WholeReduceSum
    cross_repeat_ops = 2              # subtract the row max, multiply by 1/sum (broadcast)
    cross_group_ops = 3               # 1/sum, two Brcb
    fold_scratch = True
    packed_col_ops = 5                # max, - max, exp, sum, * 1/sum
    packed_row_ops = 2                # ones, 1 / sum
