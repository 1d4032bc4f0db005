"""FlashAttention-style forward as a MIX 1:2 kernel (ascend.md §2.9, §3.1, §3.5).

Work is split into *units*: one s1-row block of the packed GQA rows of one (b, kv-head) — the G
query heads sharing a K/V head are stacked along the rows (row r = g·Sq + i), as IFA/CATLASS do
(§3.4, §3.5), so a K/V tile is read once for the whole group and decode (Sq = 1) still fills
the cube's M dimension with G rows. Each AI core takes a contiguous range of units whose tile
counts are balanced on the host side (causal units differ in length; §3.2 "causal load balance:
2×"); the range table is emitted into the source.

Per core the tiles of all its units form one stream, software-pipelined without a drain at unit
boundaries (§3.1 "C1(i) ‖ V1(i−1) ‖ C2(i−1) ‖ V2(i−2)"): with preload L the AIC runs
C1(g) [Q·Kᵀ -> S slot] then C2(g−L) [P·V -> O_tmp slot]; the AIVs run V1(g) [online softmax ->
P slot] then V2(g−L) [O = O·alpha + O_tmp], finishing a unit after V2 of its last tile. A ring
of L+1 GM workspace slots with the flags QK (AIC FIX -> AIVs), P (AIVs MTE3 -> AIC) and PV
(AIC FIX -> AIVs) orders everything (no reverse flags are needed: each slot is rewritten only
after a wait that implies its previous reader finished).

Cube side: Q stays in L1 for the whole unit, K/V/P tiles are double-buffered in L1, and the
matmuls run in L0 blocks (s1 × base_k) · (base_k × ≤128) accumulated in L0C over K chunks, with
L0A/L0B/L0C double buffering so MTE1, Cube and FixPipe overlap (§2.6 "dbL0 2", §3.1 basic blocks).
Vector side: the row max / sum are vectorised — a Max/Add tree over 64-column strips (repeat over
rows) and one WholeReduceMax/Sum per row, the new maxima broadcast with Brcb into one 32 B block
per row and subtracted strip by strip with a zero block stride (§2.5.1, §2.5.2); alpha, m and l
stay in UB (no scalar read-back, no V->S stall). The causal mask (bottom-right) is applied only
on tiles that cross a row's diagonal, by CompareScalar against a column index ramp + Select.
When s2 does not divide Skv, a row block's last tile is shifted back to end at the last key, so
every tile is whole (no read past K/V, nothing to pad), and the columns it shares with the tile
before are masked the same way.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from forge.backends.ascend.constraints import Resources
from forge.backends.ascend.pipeline import Buffer, Flag, Pipeline, Stage
from forge.backends.ascend.pipemodel import ModelResult, Step
from forge.generators.ascendc.base import Plan, cdiv, stratified_order
from forge.space import Constraint, Param, choice

BN = 128          # L0 block N (ascend.md §3.1 BMM basic blocks; §3.5 GemmShape<128,128,128>)
STRIP = 64        # fp32 elements per 256 B vector repeat (ascend.md §1.4)
MASK_FILL = -3.0e38
SIM_TILES = 24    # tiles simulated before extrapolating the steady state (model speed)


class AttentionPlan(Plan):
    op = "attention"
    template = "attention.cpp.j2"
    kind = "mix"

    def __init__(self, problem, hw):
        super().__init__(problem, hw)
        s = problem.shape
        self.B, self.Hq, self.Hkv, self.Sq, self.Skv, self.D = (s[k] for k in ("B", "Hq", "Hkv", "Sq", "Skv", "D"))
        self.G = self.Hq // self.Hkv
        self.rows = self.G * self.Sq               # packed rows per (b, kv head)
        self.causal = bool(problem.attrs.get("causal"))

    # -- space -------------------------------------------------------------------------------
    def params(self) -> list[Param]:
        # ascend.md §3.7: s1Base, s2Base (multiples of 16 up to 1024), preload {1,2}, K/V buffers,
        # cube base blocks (baseK 64|128), dbL0 {1,2}, UB BUFFER_NUM {1,2}
        return [choice("s1", (16, 32, 64, 128), ordered=True, doc="packed query rows per cube tile (each AIV takes half)"),
                choice("s2", (64, 128, 256, 512), ordered=True, doc="keys per tile"),
                choice("preload", (1, 2), ordered=True, doc="software-pipeline depth L (ring of L+1 slots)"),
                choice("l1_bufs", (1, 2), ordered=True, doc="L1 blocks for K, V and P tiles"),
                choice("l0_db", (1, 2), ordered=True, doc="L0A/L0B/L0C blocks"),
                choice("base_k", (64, 128), ordered=True, doc="K chunk of one L0 matmul block"),
                choice("ub_bufs", (1, 2), ordered=True, doc="S-in / P-out blocks on each AIV")]

    def extra_constraints(self) -> list[Constraint]:
        skv = self.Skv
        return [Constraint("s2 within Skv", lambda c: np.asarray(c["s2"]) <= skv,
                           lambda c: f"s2 {c['s2']} > Skv {skv}: a K/V tile longer than the keys"),
                Constraint("s1 within rows", lambda c: (np.asarray(c["s1"]) <= 16) | (np.asarray(c["s1"]) < 2 * self.rows),
                           lambda c: f"s1 {c['s1']} >= 2 × packed rows {self.rows} (G·Sq): half the tile would be empty")]

    def nblk(self, s1: Any) -> Any:
        return cdiv(self.rows, s1)

    def units(self, s1: Any) -> Any:
        return self.B * self.Hkv * self.nblk(s1)

    def block_dim(self, c: dict[str, Any]) -> Any:
        return np.minimum(self.units(c["s1"]), int(self.hw.aic))

    @staticmethod
    def chunk_max(n: Any, cap: Any) -> Any:
        return np.minimum(n, cap)

    def resources(self, c: dict[str, Any]) -> Resources:
        s1, s2, D, e, R = c["s1"], c["s2"], self.D, self.e, np.asarray(c["preload"]) + 1
        h = s1 // 2
        kk = np.minimum(c["base_k"], np.maximum(D, s2))          # largest K chunk (C1: k=D, C2: k=s2)
        nn = np.minimum(BN, np.maximum(D, s2))                   # largest N chunk (C1: n=s2, C2: n=D)
        bufs = [Buffer("qL1", "A1", s1 * D * e, 1, ctype=self.ctype),                  # Q of the unit (L1, resident)
                Buffer("pL1", "A1", s1 * s2 * e, c["l1_bufs"], ctype=self.ctype),      # P tile
                Buffer("kL1", "B1", s2 * D * e, c["l1_bufs"], ctype=self.ctype),       # K tile
                Buffer("vL1", "B1", s2 * D * e, c["l1_bufs"], ctype=self.ctype),       # V tile
                Buffer("aL0", "A2", s1 * kk * e, c["l0_db"], ctype=self.ctype),        # L0A block
                Buffer("bL0", "B2", kk * nn * e, c["l0_db"], ctype=self.ctype),        # L0B block
                Buffer("cL0", "CO1", s1 * nn * 4, c["l0_db"], ctype="float"),          # L0C block (S or O_tmp)
                Buffer("sIn", "VECIN", h * s2 * 4, c["ub_bufs"], ctype="float"),      # S rows (fp32)
                Buffer("pOut", "VECOUT", h * s2 * e, c["ub_bufs"], ctype=self.ctype), # P rows (max-tree scratch first)
                Buffer("oIn", "VECIN", h * D * 4, 1, ctype="float"),                  # O_tmp rows
                Buffer("oOut", "VECOUT", h * D * e, 1, ctype=self.ctype),             # final O rows
                Buffer("oAcc", "VECCALC", h * D * 4, queue=False, ctype="float"),     # O accumulator
                Buffer("stat", "VECCALC", h * 4 * (4 + 2 * R), queue=False, ctype="float"),  # m, mNew, l, rowsum, alpha/l ring
                Buffer("bc", "VECCALC", h * 32, queue=False, ctype="float"),          # Brcb: one 32 B block per row
                Buffer("col", "VECCALC", s2 * 4, queue=False, ctype="float"),         # column index ramp (causal mask)
                Buffer("bits", "VECCALC", np.maximum(s2 // 8, 32), queue=False, ctype="uint8_t")]   # compare mask
        return Resources(bufs, self.block_dim(c), "aic", events=0, flags=3, pending=R)

    # -- description -------------------------------------------------------------------------
    def pipeline(self, cfg: dict[str, Any]) -> Pipeline:
        flags = [Flag("QK", 0, "aic", "FIX"), Flag("P", 1, "aiv", "MTE3"), Flag("PV", 2, "aic", "FIX")]
        st = [Stage("q_in", "aic", "MTE2", produces=("qL1",)),
              Stage("k_in", "aic", "MTE2", produces=("kL1",)),
              Stage("c1_ld", "aic", "MTE1", consumes=("qL1", "kL1"), produces=("aL0", "bL0"),
                    hold=(("qL1", "qAcq", "qRel"), ("kL1", "tAcq", "tRel"))),
              Stage("c1_mm", "aic", "M", consumes=("aL0", "bL0"), produces=("cL0",), hold=(("cL0", "cAcq", "cRel"),)),
              Stage("c1_fix", "aic", "FIX", consumes=("cL0",), signals=("QK",), signal_if="sig"),
              Stage("v_in", "aic", "MTE2", produces=("vL1",)),
              Stage("p_in", "aic", "MTE2", produces=("pL1",), waits=("P",)),
              Stage("c2_ld", "aic", "MTE1", consumes=("pL1", "vL1"), produces=("aL0", "bL0"),
                    hold=(("pL1", "tAcq", "tRel"), ("vL1", "tAcq", "tRel"))),
              Stage("c2_mm", "aic", "M", consumes=("aL0", "bL0"), produces=("cL0",), hold=(("cL0", "cAcq", "cRel"),)),
              Stage("c2_fix", "aic", "FIX", consumes=("cL0",), signals=("PV",), signal_if="sig"),
              Stage("v1_in", "aiv", "MTE2", produces=("sIn",), waits=("QK",)),
              Stage("v1", "aiv", "V", consumes=("sIn",), produces=("pOut",)),
              Stage("v1_out", "aiv", "MTE3", consumes=("pOut",), signals=("P",)),
              Stage("v2_in", "aiv", "MTE2", produces=("oIn",), waits=("PV",)),
              Stage("v2", "aiv", "V", consumes=("oIn",)),
              Stage("o_fin", "aiv", "V", produces=("oOut",)),
              Stage("o_out", "aiv", "MTE3", consumes=("oOut",))]
        return Pipeline("forge_attention", "mix", self.resources(cfg).buffers, st, flags, [],
                        int(self.block_dim(cfg)))

    # -- work split (shared by the source and the model) ----------------------------------------
    def tiles_of(self, blk: int, s1: int, s2: int) -> int:
        """s2 tiles the packed row block `blk` needs (causal: up to its furthest row's diagonal)."""
        if not self.causal:
            return cdiv(self.Skv, s2)
        first, last = blk * s1, min(self.rows, (blk + 1) * s1) - 1
        maxpos = self.Sq - 1 if first // self.Sq != last // self.Sq else last % self.Sq
        keys = min(self.Skv, max(0, maxpos + self.Skv - self.Sq + 1))
        return cdiv(keys, s2)

    def masked_tiles(self, blk: int, s1: int, s2: int) -> int:
        """Tiles of the block that cross some row's diagonal (the mask is applied on those only)."""
        if not self.causal:
            return 0
        first, last = blk * s1, min(self.rows, (blk + 1) * s1) - 1
        minpos = 0 if first // self.Sq != last // self.Sq else first % self.Sq
        vis = minpos + self.Skv - self.Sq + 1           # keys the first row sees
        n = self.tiles_of(blk, s1, s2)
        return n - min(n, max(0, vis) // s2)

    def shifted(self, j: int, s2: int) -> bool:
        """Tile j runs past the last key, so it is shifted back and its leading columns masked."""
        return (j + 1) * s2 > self.Skv

    def unit_costs(self, cfg: dict[str, Any]) -> list[int]:
        s1, s2 = cfg["s1"], cfg["s2"]
        per = [self.tiles_of(b, s1, s2) for b in range(self.nblk(s1))]
        return per * (self.B * self.Hkv)

    def core_starts(self, cfg: dict[str, Any]) -> list[int]:
        """Contiguous unit ranges per AI core with balanced work (tiles + a unit's fixed cost)."""
        costs = self.unit_costs(cfg)
        bd = int(self.block_dim(cfg))
        w = np.asarray(costs, dtype=float) + 0.25          # a unit also loads Q and writes O
        cum = np.concatenate([[0.0], np.cumsum(w)])
        total = cum[-1]
        starts = [0]
        for c in range(1, bd):
            starts.append(int(np.searchsorted(cum, total * c / bd, side="left")))
        starts.append(len(costs))
        for i in range(1, len(starts)):                    # monotone, no core beyond the units
            starts[i] = max(starts[i], starts[i - 1])
        return starts

    def heaviest(self, cfg: dict[str, Any]) -> tuple[list[int], int]:
        """Block indices of the units of the most loaded AI core, and blockDim."""
        starts = self.core_starts(cfg)
        costs = self.unit_costs(cfg)
        nb = self.nblk(cfg["s1"])
        best, load = [], -1.0
        for c in range(len(starts) - 1):
            mine = list(range(starts[c], starts[c + 1]))
            w = sum(costs[u] for u in mine) + 0.25 * len(mine)
            if w > load:
                best, load = [u % nb for u in mine], w
        return best, len(starts) - 1

    # -- model --------------------------------------------------------------------------------
    def kv_hbm_fraction(self, cfg: dict[str, Any]) -> float:
        """Share of K/V tile loads that are first touches (HBM); the rest are re-reads by other
        row blocks of the same group, served by the 192 MiB L2 (ascend.md §1.5)."""
        s2 = cfg["s2"]
        loaded = sum(self.unit_costs(cfg)) * s2
        needed = self.B * self.Hkv * self.Skv
        return min(1.0, needed / loaded) if loaded else 1.0

    def _vec(self, nbytes: float, factor: float = 1.0) -> float:
        return self.hw.vector_cycles(nbytes, factor)

    def v1_cost(self, cfg: dict[str, Any], masked: bool, lead: bool = False) -> tuple[float, int]:
        """Vector cycles and API calls of V1, op by op as in the template."""
        h, s2 = cfg["s1"] // 2, cfg["s2"]
        strips = s2 // STRIP
        tile = self._vec(h * s2 * 4)                    # one fp32 pass over the h x s2 tile
        row = self._vec(h * STRIP * 4)                  # one 64-column strip over h rows
        small = self._vec(h * 4)                        # an op on h per-row values
        red = self.hw.reduce_cost_factor
        cyc = tile                                      # Muls scale
        calls = 1
        if masked:                                      # CompareScalar + Select per row
            cyc += 2 * tile
            calls += 3 * h
        if lead:                                        # one CompareScalar, Select per row
            cyc += self._vec(s2 * 4) + tile
            calls += 2 + 2 * h
        cyc += (strips - 1) * row + h * red             # Max tree + WholeReduceMax
        calls += strips + 1
        cyc += 4 * small + self._vec(h * 32)            # max(m), alpha = exp(m - mNew), m = mNew; Brcb
        calls += 5
        cyc += tile + tile + tile                       # Sub (strips, zero block stride), Exp, Cast -> P
        calls += strips + 2
        cyc += (strips - 1) * row + h * red             # Add tree + WholeReduceSum
        calls += strips
        cyc += 3 * small                                # l = l·alpha + rowsum, ring copy
        calls += 3
        return cyc, calls + 12                          # + PipeBarriers between dependent ops

    def v2_cost(self, cfg: dict[str, Any], first: bool) -> tuple[float, int]:
        h, D = cfg["s1"] // 2, self.D
        ds = cdiv(D, STRIP)
        if first:
            return self._vec(h * D * 4), 1              # acc = O_tmp
        return self._vec(h * 32) + 2 * self._vec(h * D * 4), ds + 4   # Brcb alpha, Mul strips, Add

    def fin_cost(self, cfg: dict[str, Any]) -> tuple[float, int]:
        h, D = cfg["s1"] // 2, self.D
        return self._vec(h * 32) + 2 * self._vec(h * D * 4), cdiv(D, STRIP) + 4   # Brcb l, Div strips, Cast

    def _mm_steps(self, stage: str, m: int, n: int, k: int, first_in_unit: bool, last_in_unit: bool,
                  cfg: dict[str, Any], nbytes_out: float) -> list[Step]:
        """L0 blocks of one matmul: per N chunk, K chunks (MTE1 + Mmad), then one Fixpipe."""
        hw, e, dt = self.hw, self.e, self.p.dtype
        bk = cfg["base_k"]
        out: list[Step] = []
        held = ("qL1", "kL1") if stage == "c1" else ("pL1", "vL1")
        nch, kch = cdiv(n, BN), cdiv(k, bk)
        for nc in range(nch):
            nn = min(BN, n - nc * BN)
            for kc in range(kch):
                kk = min(bk, k - kc * bk)
                first, last = nc == 0 and kc == 0, nc == nch - 1 and kc == kch - 1
                acq = tuple(b for b in held if first and (b != "qL1" or first_in_unit))
                rel = tuple(b for b in held if last and (b != "qL1" or last_in_unit))
                mte1 = m * kk * e / hw.mte1_l0a_bytes_per_cycle + kk * nn * e / hw.mte1_l0b_bytes_per_cycle
                out.append(Step(f"{stage}_ld", cycles=mte1, calls=m // 16 + kk // 16, acq=acq, rel=rel))
                out.append(Step(f"{stage}_mm", cycles=hw.cube_cycles(m, nn, kk, dt), calls=2,
                                acq=("cL0",) if kc == 0 else (), rel=("cL0",) if kc == kch - 1 else ()))
            out.append(Step(f"{stage}_fix", nbytes=m * nn * 4, stream="l2", calls=2, sig=nc == nch - 1))
        return out

    def programs(self, cfg: dict[str, Any], blocks: list[int] | None = None) -> tuple[dict[str, list[Step]], int]:
        """Stage sequences of the most loaded AI core (its AIC and both AIVs) over its tile stream."""
        heavy, bd = self.heaviest(cfg)
        blocks = heavy if blocks is None else blocks
        s1, s2, L, D, e = cfg["s1"], cfg["s2"], cfg["preload"], self.D, self.e
        h = s1 // 2
        fkv = self.kv_hbm_fraction(cfg)
        stream = [(u, j, self.tiles_of(b, s1, s2), self.masked_tiles(b, s1, s2), b)
                  for u, b in enumerate(blocks) for j in range(self.tiles_of(b, s1, s2))]
        T = len(stream)
        aic: list[Step] = []
        aiv: list[Step] = []
        def load_qk(g: int) -> list[Step]:
            u, j, nj, nm, b = stream[g]
            q = [Step("q_in", nbytes=min(s1, self.rows - b * s1) * D * e, stream="hbm")] if j == 0 else []
            return q + [Step("k_in", nbytes=s2 * D * e, hbm_frac=fkv)]

        if T:
            aic += load_qk(0)
        for g in range(T + L):
            if g < T:
                u, j, nj, nm, b = stream[g]
                aic += self._mm_steps("c1", s1, s2, D, j == 0, j == nj - 1, cfg, s1 * s2 * 4)
                if g + 1 < T:                           # K(g+1) prefetched before C2 waits for P
                    aic += load_qk(g + 1)
                cyc, calls = self.v1_cost(cfg, masked=j >= nj - nm, lead=self.shifted(j, s2))
                aiv += [Step("v1_in", nbytes=h * s2 * 4, stream="l2"),
                        Step("v1", cycles=cyc, calls=calls),
                        Step("v1_out", nbytes=h * s2 * e, stream="l2")]
            if g >= L:
                u, j, nj, nm, b = stream[g - L]
                rows = min(s1, self.rows - b * s1)
                aic += [Step("v_in", nbytes=s2 * D * e, hbm_frac=fkv),
                        Step("p_in", nbytes=s1 * s2 * e, stream="l2")]
                aic += self._mm_steps("c2", s1, D, s2, True, True, cfg, s1 * D * 4)
                cyc, calls = self.v2_cost(cfg, j == 0)
                aiv += [Step("v2_in", nbytes=h * D * 4, stream="l2"), Step("v2", cycles=cyc, calls=calls)]
                if j == nj - 1:
                    cyc, calls = self.fin_cost(cfg)
                    aiv += [Step("o_fin", cycles=cyc, calls=calls),
                            Step("o_out", nbytes=max(0, min(h, rows)) * D * e, stream="hbm")]
        return {"aic": aic, "aiv0": aiv, "aiv1": list(aiv)}, bd

    def model(self, cfg: dict[str, Any]) -> ModelResult:
        """Simulates the heaviest core's tile stream; a long stream is simulated over two prefixes
        of whole units and extrapolated at the steady-state rate per tile between them. A causal
        stream mixes units of very different lengths (each with its own Q load, diagonal tiles and
        finish), so its first units' rate per tile is not the stream's (up to 16 % off): the
        prefixes take the units in a stratified order instead, a sample of the whole stream
        (36 random configs of causal and decode shapes: within -1.1 % to +2.5 % of simulating
        every step)."""
        blocks, bd = self.heaviest(cfg)
        tiles = [self.tiles_of(b, cfg["s1"], cfg["s2"]) for b in blocks]
        if sum(tiles) > SIM_TILES:                   # extrapolated: the prefixes sample the whole stream
            blocks = [blocks[i] for i in stratified_order(len(blocks))]
            tiles = [self.tiles_of(b, cfg["s1"], cfg["s2"]) for b in blocks]
        return self.model_prefixes(cfg, tiles, lambda n: self.programs(cfg, blocks[:n])[0], bd, SIM_TILES)

    # -- rendering ------------------------------------------------------------------------------
    def workspace_bytes(self, cfg: dict[str, Any]) -> int:
        s1, s2, R = cfg["s1"], cfg["s2"], cfg["preload"] + 1
        return int(self.block_dim(cfg)) * R * (s1 * s2 * 4 + s1 * s2 * self.e + s1 * self.D * 4)

    def context(self, cfg: dict[str, Any]) -> dict[str, Any]:
        scale = self.p.attrs.get("scale")
        scale = float(scale) if scale is not None else 1.0 / math.sqrt(self.D)
        starts, costs = self.core_starts(cfg), self.unit_costs(cfg)
        return dict(B=self.B, Hq=self.Hq, Hkv=self.Hkv, Sq=self.Sq, Skv=self.Skv, D=self.D, ELEM=self.e,
                    causal=self.causal, scale=repr(float(np.float32(scale))), S1=cfg["s1"], S2=cfg["s2"],
                    L=cfg["preload"], R=cfg["preload"] + 1, BK=cfg["base_k"], BN=BN, STRIP=STRIP,
                    MASK_FILL=MASK_FILL, core_starts=starts,
                    core_tiles=[sum(costs[starts[c]:starts[c + 1]]) for c in range(len(starts) - 1)])

    def emulation_problem(self, cfg: dict[str, Any]) -> Any:
        """Two K/V groups (so at least two cores), row blocks that span a head boundary and a tail,
        and up to three s2 tiles (the last one shifted when s2 does not divide Skv). Each group has
        as many heads as one row block of s1 rows can touch (a block spans s1 / Sq heads, plus one
        where it straddles), up to the problem's own group size: a block that spans three heads, or
        the whole group and into the next, runs in the check as it does on the device. As many query
        rows as keys stays so (the causal mask on the diagonal), fewer stays so (the diagonal shifted
        right), and more too (rows the causal mask leaves without a key), each by whole tiles."""
        from forge.ops import get_op
        s1, s2 = cfg["s1"], cfg["s2"]
        sq = min(self.Sq, s1 + s1 // 2 + 8)
        skv = min(self.Skv, 2 * s2 + self.Skv % s2) if self.Skv % s2 else min(self.Skv, 3 * s2)
        if self.Sq == self.Skv:      # keys grown by whole tiles, so Skv keeps its tail (TAIL) or has none
            skv = min(self.Skv, skv + -(-max(0, sq - skv) // s2) * s2)
            sq = skv
        while self.Sq < self.Skv and sq >= skv:
            skv = min(self.Skv, skv + s2)
        while self.Sq > self.Skv and sq <= skv:
            sq = min(self.Sq, sq + s1)
        g = min(self.G, max(2, -(-s1 // sq) + 1))
        shape = {"B": 1, "Hq": 2 * g, "Hkv": 2, "Sq": sq, "Skv": skv, "D": self.D}
        return get_op("attention").problem(shape, self.p.dtype, dict(self.p.attrs))
