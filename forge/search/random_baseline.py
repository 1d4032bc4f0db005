"""Exact expectation of uniform random search on a brute-forced space, and the methodology score.

Random search at budget B draws B distinct points uniformly from the N valid points (every point
of the space that can be built: successful AND failed ones — failures cost a compile and a launch
on hardware and count against the budget exactly as they do for every other strategy here and in
Kernel Tuner's simulation runner). Its result is the best successful time among the draws. With
the S successful times sorted t_1 <= ... <= t_S:

    P(best is t_i or worse) = P(none of t_1..t_{i-1} drawn) = C(N-i+1, B) / C(N, B)

so E[best] = sum_i t_i * (P(>= i) - P(>= i+1)). If all B draws fail (probability C(F, B)/C(N, B),
F = N - S) the search has found nothing; that outcome is valued at the worst successful time t_S,
the same rule `forge.search.replay_run` applies to a strategy that found nothing.
Methodology: AutoTuningAssociation/autotuning_methodology, autotuners.md §7 "The methodology".
"""
from __future__ import annotations

from math import lgamma

import numpy as np


def _log_comb(n: np.ndarray, k: int) -> np.ndarray:
    n = np.asarray(n, dtype=float)
    out = np.full(n.shape, -np.inf)
    ok = n >= k
    out[ok] = [lgamma(x + 1) - lgamma(k + 1) - lgamma(x - k + 1) for x in n[ok]]
    return out


def expected_best_random(times: np.ndarray, n_failed: int, budget: int) -> float:
    """E[best successful value] of B uniform draws without replacement; NaN entries in `times`
    are treated as failures in addition to `n_failed`."""
    t = np.asarray(times, dtype=float)
    ok = np.sort(t[np.isfinite(t)])
    s = len(ok)
    n = s + int(n_failed) + int(np.count_nonzero(~np.isfinite(t)))
    if s == 0:
        raise ValueError("no successful point: random search has no expectation")
    b = int(min(max(budget, 1), n))
    i = np.arange(1, s + 2)                      # P(best rank >= i), i = 1..S+1
    p_ge = np.exp(_log_comb(n - i + 1, b) - _log_comb(np.array([n]), b)[0])
    p_eq = p_ge[:-1] - p_ge[1:]
    return float(np.dot(p_eq, ok) + p_ge[-1] * ok[-1])


def score(strategy_best: float, random_expected: float, optimum: float) -> float | None:
    """(random - strategy) / (random - optimum): 0 = random search, 1 = the optimum. None where
    random search's expected best is already the optimum (the budget covers the space, or tied
    optima): the score is 0/0 there. The expectation is a sum of many terms, so "already the
    optimum" allows it a relative rounding error of 1e-9."""
    denom = random_expected - optimum
    if denom <= optimum * 1e-9:
        return None
    return float((random_expected - strategy_best) / denom)
