"""Benchmark scores exactly as the public benchmarks define them, so forge's numbers compare.

- SOL score (SOL-ExecBench `sol_score.py`, benchmark-formats.md §1.6):
  S = 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)); when T_b - T_SOL <= 0, S = 1 if T_k <= T_SOL else 0.
- HAP (cann-bench `cann_scoring.py`, benchmark-formats.md §3.1):
  HAP = (T_base - T_HW) / ((T_cand - T_HW) + (T_base - T_HW)); None when the anchors are invalid or
  the denominator <= 0; a missing baseline falls back to max(10 * T_HW, 10 us).
- fast_p (FlashInfer-Bench analytics, benchmark-formats.md §2.2 / §5): fraction of cases whose
  speedup ratio is >= p, failures counting as ratio 0.
- cann-bench per-operator score (benchmark-formats.md §3.1):
  [w_c * compiled + sum_i passed_i * (w_f + w_p * HAP_i) / |cases|] * 100.

All times are in one unit (forge uses seconds); the formulas are unit-free except the cann-bench
baseline floor of 10 us, which is converted with `unit_seconds`.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

# cann-bench weights (benchmark-formats.md §3.1, `cann_scoring.py`: w_c=0.2, w_f=0.3, w_p=0.5).
CANN_W_COMPILE = 0.2
CANN_W_CORRECT = 0.3
CANN_W_PERF = 0.5
# cann-bench: a missing baseline is max(10 * T_HW, 10 us) (benchmark-formats.md §3.1, 910b2.json).
CANN_BASELINE_HW_FACTOR = 10.0
CANN_BASELINE_FLOOR_US = 10.0
# fast_p thresholds forge reports (issue 6: p in {0.8, 1.0, 1.2}).
FAST_P = (0.8, 1.0, 1.2)


def _finite(*xs: float | None) -> bool:
    return all(x is not None and isinstance(x, (int, float)) and math.isfinite(x) for x in xs)


def sol_score(t_k: float | None, t_sol: float, t_b: float) -> float | None:
    """SOL-ExecBench score of a candidate time `t_k` against anchors T_SOL and T_b.

    0.5 at T_k = T_b, 1 at T_k = T_SOL, > 1 below T_SOL (not capped). A failed candidate
    (`t_k` None) has no score here; correctness gating is the caller's (it counts as 0).
    """
    if t_k is None or not _finite(t_k, t_sol, t_b):
        return None
    gap = t_b - t_sol
    if gap <= 0:
        return 1.0 if t_k <= t_sol else 0.0
    return 1.0 / (1.0 + (t_k - t_sol) / gap)


def cann_baseline_fallback(t_hw: float, unit_seconds: float = 1.0) -> float:
    """cann-bench's stand-in baseline when none was measured: max(10 * T_HW, 10 us)."""
    return max(CANN_BASELINE_HW_FACTOR * t_hw, CANN_BASELINE_FLOOR_US * 1e-6 / unit_seconds)


def hap(t_cand: float | None, t_hw: float | None, t_base: float | None,
        unit_seconds: float = 1.0) -> float | None:
    """cann-bench Hardware-Anchored Performance; `unit_seconds` is the unit of the times (1 = s).

    None when a time is missing or not positive, T_base <= T_HW (no headroom: the anchors are
    invalid, forge's reading of cann-bench's "invalid anchors"), or the denominator is <= 0.
    """
    if t_base is None and _finite(t_hw):
        t_base = cann_baseline_fallback(float(t_hw), unit_seconds)
    if not _finite(t_cand, t_hw, t_base) or t_cand <= 0 or t_hw < 0 or t_base <= 0:
        return None
    head = t_base - t_hw
    if head <= 0:
        return None
    denom = (t_cand - t_hw) + head
    if denom <= 0:
        return None
    return head / denom


def geomean(values: Iterable[float]) -> float | None:
    vals = [float(v) for v in values if v is not None and math.isfinite(v) and v > 0]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def geomean_speedup(speedups: Sequence[float | None]) -> float | None:
    """Geometric mean over the cases that passed (a diagnostic in all three benchmarks)."""
    return geomean(s for s in speedups if s is not None)


def fast_p(speedups: Sequence[float | None], p: float) -> float | None:
    """Fraction of cases with speedup >= p; a failed case (None) counts as ratio 0 (FIB)."""
    if not speedups:
        return None
    return sum(1 for s in speedups if s is not None and s >= p) / len(speedups)


def cann_operator_score(compiled: bool, cases: Sequence[tuple[bool, float | None]]) -> float:
    """cann-bench EachOperatorScore on its 0..100 scale.

    `cases` holds (passed, HAP) per case of the operator, every case counted (a case forge could
    not run counts as not passed). A passed case whose HAP is None earns the correctness weight only.
    """
    if not cases:
        return CANN_W_COMPILE * 100.0 * bool(compiled)
    perf = sum((CANN_W_CORRECT + CANN_W_PERF * (h or 0.0)) for ok, h in cases if ok)
    return (CANN_W_COMPILE * bool(compiled) + perf / len(cases)) * 100.0


def gated_mean(scores: Sequence[float | None]) -> float | None:
    """Mean score where a failed case (None) counts 0 (SOL-ExecBench paper's aggregation)."""
    if not scores:
        return None
    return sum(s or 0.0 for s in scores) / len(scores)
