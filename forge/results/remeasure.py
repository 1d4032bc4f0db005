"""Whether the machine ran at another speed when the top candidates were re-measured.

The re-measure at the end of a run times the best variants again with more repetitions. If every
one of them comes out slower (or faster) than when it was searched, by more than its spread, the
variants did not change: the host did (a shared or throttled machine). The tuner then re-times the
baselines so the re-measured rows' speedups compare times taken at the same speed, and the report
says that the rows not re-measured were timed at another speed.
"""
from __future__ import annotations

import statistics

from forge.results.record import Record


def remeasure_shift(pairs: list[tuple[tuple[float, float], tuple[float, float]]]) -> float | None:
    """The median factor final/search over (median, spread) pairs of each re-measured variant's
    search and final measurement, when at least two were re-measured and every one moved the same
    way by more than the wider of its two spreads; None otherwise. One variant moving is that
    variant's noise; a move within the spread is a tie (ARCHITECTURE.md, measurement rules)."""
    if len(pairs) < 2:
        return None
    ratios = []
    for (search_median, search_spread), (final_median, final_spread) in pairs:
        if abs(final_median - search_median) <= max(search_spread, final_spread):
            return None
        ratios.append(final_median / search_median)
    if not (all(x > 1 for x in ratios) or all(x < 1 for x in ratios)):
        return None
    return statistics.median(ratios)


def shift_of_records(records: list[Record]) -> float | None:
    """`remeasure_shift` of a run's records: each successful final record against its variant's
    successful search record (the last of each, as the leaderboard reads them)."""
    search = {r.variant_key: r for r in records if r.phase == "search" and r.status == "ok" and r.median}
    final = {r.variant_key: r for r in records if r.phase == "final" and r.status == "ok" and r.median}
    return remeasure_shift([((search[k].median, search[k].spread or 0.0), (f.median, f.spread or 0.0))
                            for k, f in final.items() if k in search])
