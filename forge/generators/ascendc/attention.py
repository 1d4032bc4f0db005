"""FlashAttention-style forward as a MIX 1:2 kernel (ascend.md §2.9, §3.1, §3.5).

Per unit (b, hq, s1-block) the AIC computes S = Q·Kᵀ tile by tile into a GM ring (C1), the two
AIVs run the online softmax on their halves of the rows (V1) and write P back, the AIC computes
P·V (C2) and the AIVs rescale and accumulate O (V2). With `preload` = L the loop runs
C1(i) ‖ V1(i−1) ‖ C2(i−L) ‖ V2(i−L) over a ring of L+1 workspace slots; the cross-core flags
QK (AIC Fixpipe -> AIVs), P (AIVs MTE3 -> AIC) and PV (AIC Fixpipe -> AIVs) are the only edges,
and with L+1 slots they also protect every slot from being overwritten early (no reverse flags).
GQA reads K/V head hq // (Hq/Hkv); the causal mask is bottom-right aligned; fp16/bf16 in, fp32
softmax. Tiles whose keys are all masked are skipped by both sides with the same loop bound.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from forge.backends.ascend.constraints import Resources
from forge.backends.ascend.pipeline import Buffer, Flag, Pipeline, Stage
from forge.backends.ascend.pipemodel import ModelResult, Step, simulate
from forge.generators.ascendc.base import Plan, cdiv
from forge.space import Constraint, Param, choice


class AttentionPlan(Plan):
    op = "attention"
    template = "attention.cpp.j2"
    kind = "mix"

    def __init__(self, problem, hw):
        super().__init__(problem, hw)
        s = problem.shape
        self.B, self.Hq, self.Hkv, self.Sq, self.Skv, self.D = (s[k] for k in ("B", "Hq", "Hkv", "Sq", "Skv", "D"))
        self.causal = bool(problem.attrs.get("causal"))

    # -- space -------------------------------------------------------------------------------
    def params(self) -> list[Param]:
        # ascend.md §3.7: s1Base {64,128,...}, s2Base multiples of 16 up to 1024, preload {1,2}, K/V bufs {2,3}
        return [choice("s1", (32, 64, 128), ordered=True, doc="query rows per cube tile (each AIV takes half)"),
                choice("s2", (64, 128, 256, 512), ordered=True, doc="keys per tile"),
                choice("preload", (1, 2, 3), ordered=True, doc="software-pipeline depth L (ring of L+1 slots)"),
                choice("l1_bufs", (1, 2, 3), ordered=True, doc="L1 blocks for Q/P and K/V"),
                choice("l0_db", (1, 2), ordered=True, doc="L0A/L0B/L0C blocks"),
                choice("ub_bufs", (1, 2), ordered=True, doc="VECIN/VECOUT blocks on each AIV")]

    def extra_constraints(self) -> list[Constraint]:
        skv = self.Skv
        return [Constraint("s2 divides Skv", lambda c: skv % np.asarray(c["s2"]) == 0,
                           lambda c: f"Skv {skv} % s2 {c['s2']} = {skv % c['s2']} (tails of K/V tiles are not generated)")]

    def units(self, s1: Any) -> Any:
        return self.B * self.Hq * cdiv(self.Sq, s1)

    def block_dim(self, c: dict[str, Any]) -> Any:
        return np.minimum(self.units(c["s1"]), int(self.hw.aic))

    def resources(self, c: dict[str, Any]) -> Resources:
        s1, s2, D, e = c["s1"], c["s2"], self.D, self.e
        h = s1 // 2
        kmax = np.maximum(D, s2)
        bufs = [Buffer("a1", "A1", s1 * kmax * e, c["l1_bufs"], ctype=self.ctype),     # Q or P tile (L1)
                Buffer("b1", "B1", s2 * D * e, c["l1_bufs"], ctype=self.ctype),        # K or V tile (L1)
                Buffer("a0", "A2", s1 * kmax * e, c["l0_db"], ctype=self.ctype),       # L0A
                Buffer("b0", "B2", s2 * D * e, c["l0_db"], ctype=self.ctype),          # L0B
                Buffer("c0", "CO1", s1 * kmax * 4, c["l0_db"], ctype="float"),          # L0C (S or O_tmp)
                Buffer("sIn", "VECIN", h * s2 * 4, c["ub_bufs"], ctype="float"),       # S rows (fp32)
                Buffer("pOut", "VECOUT", h * s2 * e, c["ub_bufs"], ctype=self.ctype),  # P rows
                Buffer("oIn", "VECIN", h * D * 4, c["ub_bufs"], ctype="float"),        # O_tmp rows
                Buffer("oOut", "VECOUT", h * D * e, 1, ctype=self.ctype),              # final O rows
                Buffer("oAcc", "VECCALC", h * D * 4, queue=False, ctype="float"),
                Buffer("work", "VECCALC", s2 * 4, queue=False, ctype="float"),
                Buffer("red", "VECCALC", 64, queue=False, ctype="float")]
        return Resources(bufs, self.block_dim(c), "aic", events=1, flags=3, pending=c["preload"] + 1)

    # -- description -------------------------------------------------------------------------
    def pipeline(self, cfg: dict[str, Any]) -> Pipeline:
        flags = [Flag("QK", 0, "aic", "FIX"), Flag("P", 1, "aiv", "MTE3"), Flag("PV", 2, "aic", "FIX")]
        st = [Stage("c1_in", "aic", "MTE2", produces=("a1", "b1")),
              Stage("c1_l0", "aic", "MTE1", consumes=("a1", "b1"), produces=("a0", "b0")),
              Stage("c1_mm", "aic", "M", consumes=("a0", "b0"), produces=("c0",)),
              Stage("c1_fix", "aic", "FIX", consumes=("c0",), signals=("QK",)),
              Stage("c2_in", "aic", "MTE2", produces=("a1", "b1"), waits=("P",)),
              Stage("c2_l0", "aic", "MTE1", consumes=("a1", "b1"), produces=("a0", "b0")),
              Stage("c2_mm", "aic", "M", consumes=("a0", "b0"), produces=("c0",)),
              Stage("c2_fix", "aic", "FIX", consumes=("c0",), signals=("PV",)),
              Stage("v1_in", "aiv", "MTE2", produces=("sIn",), waits=("QK",)),
              Stage("v1", "aiv", "V", consumes=("sIn",), produces=("pOut",)),
              Stage("v1_out", "aiv", "MTE3", consumes=("pOut",), signals=("P",)),
              Stage("v2_in", "aiv", "MTE2", produces=("oIn",), waits=("PV",)),
              Stage("v2", "aiv", "V", consumes=("oIn",)),
              Stage("o_fin", "aiv", "V", produces=("oOut",)),
              Stage("o_out", "aiv", "MTE3", consumes=("oOut",))]
        return Pipeline("forge_attention", "mix", self.resources(cfg).buffers, st, flags, [("V_S", 0)],
                        int(self.block_dim(cfg)))

    def n_tiles(self, i: int, s1: int, s2: int) -> int:
        """s2 tiles the s1-block i needs (causal: only up to the last row's diagonal)."""
        if not self.causal:
            return cdiv(self.Skv, s2)
        last = min(self.Sq, (i + 1) * s1) - 1
        keys = min(self.Skv, max(0, last + self.Skv - self.Sq + 1))
        return cdiv(keys, s2)

    def heaviest(self, cfg: dict[str, Any]) -> tuple[list[int], int]:
        """Tile counts of the units of the most loaded AI core (round-robin split), and blockDim."""
        s1, s2 = cfg["s1"], cfg["s2"]
        bd = int(self.block_dim(cfg))
        nblk = cdiv(self.Sq, s1)
        units = self.units(s1)
        tiles = [self.n_tiles(i, s1, s2) for i in range(nblk)]
        best: list[int] = []
        for c in range(min(bd, units)):
            mine = [tiles[u % nblk] for u in range(c, units, bd)]
            if sum(mine) > sum(best):
                best = mine
        return best, bd

    def model(self, cfg: dict[str, Any]) -> ModelResult:
        """Units drain the ring at their end, so a core's makespan is the sum over its units:
        each distinct unit length is simulated once (same schedule as `programs`)."""
        tiles, bd = self.heaviest(cfg)
        pl = self.pipeline(cfg)
        total, busy_t, steps = 0.0, {}, 0
        for nj in sorted(set(tiles)):
            n = tiles.count(nj)
            r = simulate(pl, self.hw, self._unit_programs(cfg, [nj]), bd)
            total += n * r.makespan
            steps += n * r.steps
            for k, v in r.busy.items():
                busy_t[k] = busy_t.get(k, 0.0) + v * r.makespan * n
        busy = {k: round(v / total, 4) for k, v in busy_t.items()} if total else {}
        head = float(self.hw.launch_head_s)
        return ModelResult(head + total, total, head, busy, steps)

    def programs(self, cfg: dict[str, Any]) -> tuple[dict[str, list[Step]], int]:
        tiles, bd = self.heaviest(cfg)
        return self._unit_programs(cfg, tiles), bd

    def _unit_programs(self, cfg: dict[str, Any], tiles_list: list[int]) -> dict[str, list[Step]]:
        s1, s2, L = cfg["s1"], cfg["s2"], cfg["preload"]
        D, e, hw = self.D, self.e, self.hw
        h = s1 // 2
        dt = self.p.dtype
        mte1 = lambda m, n, k: (m * k * e) / hw.mte1_l0a_bytes_per_cycle + (k * n * e) / hw.mte1_l0b_bytes_per_cycle
        aic: list[Step] = []
        aiv: list[Step] = []
        for nj in tiles_list:
            for s in range(nj + L):
                if s < nj:
                    aic += [Step("c1_in", nbytes=(s1 + s2) * D * e, stream="l2"),
                            Step("c1_l0", cycles=mte1(s1, s2, D)),
                            Step("c1_mm", cycles=hw.cube_cycles(s1, s2, D, dt)),
                            Step("c1_fix", nbytes=s1 * s2 * 4, stream="l2")]
                    aiv += [Step("v1_in", nbytes=h * s2 * 4, stream="l2"),
                            # scale, max, sub, exp, sum, cast (+ mask fill): ~6 fp32 passes, 2 reductions
                            Step("v1", cycles=hw.vector_cycles(h * s2 * 4, 6 + 2 * hw.reduce_cost_factor), stalls=2 * h),
                            Step("v1_out", nbytes=h * s2 * e, stream="l2")]
                if s >= L:
                    aic += [Step("c2_in", nbytes=(s1 * s2 + s2 * D) * e, stream="l2"),
                            Step("c2_l0", cycles=mte1(s1, D, s2)),
                            Step("c2_mm", cycles=hw.cube_cycles(s1, D, s2, dt)),
                            Step("c2_fix", nbytes=s1 * D * 4, stream="l2")]
                    aiv += [Step("v2_in", nbytes=h * D * 4, stream="l2"),
                            Step("v2", cycles=hw.vector_cycles(h * D * 4, 2))]
            aiv += [Step("o_fin", cycles=hw.vector_cycles(h * D * 4, 2)), Step("o_out", nbytes=h * D * e)]
        # compulsory HBM traffic is Q, K, V once and O once; charge it on the first touch of each
        # unit's Q and on the output (the K/V re-reads across units are L2 hits, 192 MiB L2)
        return {"aic": aic, "aiv0": aiv, "aiv1": list(aiv)}

    def workspace_bytes(self, cfg: dict[str, Any]) -> int:
        s1, s2, R = cfg["s1"], cfg["s2"], cfg["preload"] + 1
        return int(self.block_dim(cfg)) * R * (s1 * s2 * 4 + s1 * s2 * self.e + s1 * self.D * 4)

    def context(self, cfg: dict[str, Any]) -> dict[str, Any]:
        scale = self.p.attrs.get("scale")
        scale = float(scale) if scale is not None else 1.0 / math.sqrt(self.D)
        return dict(B=self.B, Hq=self.Hq, Hkv=self.Hkv, Sq=self.Sq, Skv=self.Skv, D=self.D, ELEM=self.e,
                    causal=self.causal, scale=scale, S1=cfg["s1"], S2=cfg["s2"], L=cfg["preload"],
                    R=cfg["preload"] + 1)

    def emulation_problem(self, cfg: dict[str, Any]) -> Any:
        from forge.ops import get_op
        g = self.Hq // self.Hkv
        sq = min(self.Sq, 2 * cfg["s1"] + cfg["s1"] // 2)       # two full s1 blocks and a tail
        skv = min(self.Skv, 3 * cfg["s2"])                        # three s2 tiles
        skv = max(cfg["s2"], skv - skv % cfg["s2"])
        if self.Sq == self.Skv:
            sq = min(sq, skv)
        shape = {"B": 1, "Hq": min(g, 2) * 1, "Hkv": 1, "Sq": sq, "Skv": skv, "D": self.D}
        return get_op("attention").problem(shape, self.p.dtype, dict(self.p.attrs))
