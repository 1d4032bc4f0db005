"""Matmul on the AIC through the Matmul high-level API (ascend.md §2.6), CFG_MDL.

Tunables are the TCubeTiling fields: baseM/baseN/baseK, stepKa/stepKb (K blocks per L1 load),
L1 double buffering (depthA1 = stepM·stepKa·db, depthB1 = stepN·stepKb·db with stepM = stepN = 1
as MDL requires when K is not resident), dbL0C, and the per-core block singleCoreM/N. The Matmul
API synchronises internally, so the kernel holds no sync; the L1/L0 accounting and the modeled
MTE2 -> MTE1 -> Cube -> FixPipe schedule come from the same buffer description.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from forge.backends.ascend.constraints import Resources
from forge.backends.ascend.pipeline import Buffer, Pipeline, Stage
from forge.backends.ascend.pipemodel import Step
from forge.generators.ascendc.base import Plan, cdiv
from forge.space import Constraint, Param, choice


class MatmulPlan(Plan):
    op = "matmul"
    template = "matmul.cpp.j2"
    kind = "aic"
    batch = 1                       # model-only: independent matmuls run back to back (unfused baselines)
    b_share = 1                     # model-only: batches sharing one B operand (GQA heads sharing K/V)

    def __init__(self, problem, hw):
        super().__init__(problem, hw)
        self.M, self.N, self.K = (problem.shape[k] for k in ("M", "N", "K"))

    def params(self) -> list[Param]:
        # ascend.md §2.6 recommended (128, 256, 64), dbL0A = dbL0B = 2; §3.7 cube tiles
        return [choice("baseM", (64, 128, 256), ordered=True), choice("baseN", (64, 128, 256), ordered=True),
                choice("baseK", (32, 64, 128), ordered=True), choice("stepK", (1, 2, 4), ordered=True),
                choice("dbL1", (1, 2), ordered=True), choice("dbL0C", (1, 2), ordered=True),
                choice("coreM", (1, 2, 4, 8, 16), ordered=True, doc="singleCoreM = coreM·baseM"),
                choice("coreN", (1, 2, 4, 8, 16), ordered=True, doc="singleCoreN = coreN·baseN")]

    def extra_constraints(self) -> list[Constraint]:
        c0 = 32 // self.e
        return [Constraint("baseK multiple of C0", lambda c: np.asarray(c["baseK"]) % c0 == 0,
                           lambda c: f"baseK {c['baseK']} % C0 {c0} != 0 (ascend.md §2.6)"),
                Constraint("tile within problem", lambda c: ((np.asarray(c["coreM"]) == 1) | (np.asarray(c["coreM"]) * c["baseM"] < 2 * self.M)) &
                           ((np.asarray(c["coreN"]) == 1) | (np.asarray(c["coreN"]) * c["baseN"] < 2 * self.N)),
                           lambda c: f"singleCore {c['coreM'] * c['baseM']}x{c['coreN'] * c['baseN']} "
                                     f"far exceeds M={self.M}, N={self.N}")]

    def block_dim(self, c: dict[str, Any]) -> Any:
        return cdiv(self.M, c["coreM"] * c["baseM"]) * cdiv(self.N, c["coreN"] * c["baseN"])

    def resources(self, c: dict[str, Any]) -> Resources:
        e = self.e
        bufs = [Buffer("a1", "A1", c["baseM"] * c["baseK"] * c["stepK"] * e, c["dbL1"], queue=False),
                Buffer("b1", "B1", c["baseK"] * c["baseN"] * c["stepK"] * e, c["dbL1"], queue=False),
                Buffer("a0", "A2", c["baseM"] * c["baseK"] * e, 2, queue=False),
                Buffer("b0", "B2", c["baseK"] * c["baseN"] * e, 2, queue=False),
                Buffer("c0", "CO1", c["baseM"] * c["baseN"] * 4, c["dbL0C"], queue=False)]
        return Resources(bufs, self.block_dim(c), "aic")

    def pipeline(self, cfg: dict[str, Any]) -> Pipeline:
        st = [Stage("load", "aic", "MTE2", produces=("a1",)),
              Stage("mte1", "aic", "MTE1", produces=("a0",)),
              Stage("mte1_last", "aic", "MTE1", consumes=("a1",), produces=("a0",)),
              Stage("mmad", "aic", "M", consumes=("a0",)),
              Stage("mmad_last", "aic", "M", consumes=("a0",), produces=("c0",)),
              Stage("fix", "aic", "FIX", consumes=("c0",))]
        return Pipeline("forge_matmul", "aic", self.resources(cfg).buffers, st, [], [], int(self.block_dim(cfg)))

    def programs(self, cfg: dict[str, Any]) -> tuple[dict[str, list[Step]], int]:
        bm, bn, bk, sk = cfg["baseM"], cfg["baseN"], cfg["baseK"], cfg["stepK"]
        hw, e, dt = self.hw, self.e, self.p.dtype
        blocks = int(self.block_dim(cfg)) * self.batch
        cores = min(int(hw.aic), blocks)
        per_core_blocks = cdiv(blocks, cores)
        prog: list[Step] = []
        ksteps = cdiv(self.K, bk)
        # compulsory traffic (A and B read once from HBM, B shared by `b_share` batches) over what the
        # blocks load: that share of every load is a first touch from HBM, the rest L2 re-reads (§1.5)
        loaded = blocks * cfg["coreM"] * cfg["coreN"] * (bm + bn) * bk * ksteps * e
        needed = self.batch * (self.M * self.K + self.K * self.N / self.b_share) * e
        fhbm = min(1.0, needed / loaded) if loaded else 1.0
        for _ in range(per_core_blocks):
            for _ in range(cfg["coreM"] * cfg["coreN"]):
                for k0 in range(0, ksteps, sk):
                    n = min(sk, ksteps - k0)
                    prog.append(Step("load", nbytes=(bm + bn) * bk * n * e, hbm_frac=fhbm))
                    for i in range(n):
                        mte1 = (bm * bk * e) / hw.mte1_l0a_bytes_per_cycle + (bk * bn * e) / hw.mte1_l0b_bytes_per_cycle
                        prog.append(Step("mte1_last" if i == n - 1 else "mte1", cycles=mte1))
                        last = k0 + i == ksteps - 1
                        prog.append(Step("mmad_last" if last else "mmad", cycles=hw.cube_cycles(bm, bn, bk, dt)))
                prog.append(Step("fix", nbytes=bm * bn * e))
        return {"aic": prog}, cores

    def context(self, cfg: dict[str, Any]) -> dict[str, Any]:
        return dict(M=self.M, N=self.N, K=self.K, TRANS_B=bool(self.p.attrs.get("transpose_b")),
                    SCM=cfg["coreM"] * cfg["baseM"], SCN=cfg["coreN"] * cfg["baseN"])

    def emulation_problem(self, cfg: dict[str, Any]) -> Any:
        from forge.ops import get_op
        m = min(self.M, cfg["coreM"] * cfg["baseM"] + 16)
        n = min(self.N, cfg["coreN"] * cfg["baseN"] + 16)
        k = min(self.K, 2 * cfg["baseK"] * cfg["stepK"])
        return get_op("matmul").problem({"M": m, "N": n, "K": k}, self.p.dtype, dict(self.p.attrs))
