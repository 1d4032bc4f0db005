"""Whether the re-measure at the end of a run found the best variants at other times than the search did.

The re-measure times the best variants again with more repetitions. When every one of them comes
out slower (or faster) than when it was searched, by more than its spread, either the host ran at
another speed (a shared or throttled machine) or the search times were low draws: a time from one
run of a few repetitions varies from run to run by more than the spread within the run, and the
best of many such times is the luckiest of them. The baselines, which nothing selected, tell the
two apart: the tuner times them again after such a re-measure, and if they moved the same way by at
least half as much the host changed; if they did not, the search times were lucky. Either way the
rows not re-measured carry search-time medians that do not compare with the re-measured ones.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from forge.results.record import Record

Pair = tuple[tuple[float, float], tuple[float, float]]   # ((median, spread) before, (median, spread) after)


@dataclass(frozen=True)
class Shift:
    factor: float                 # median final/search time of the re-measured variants
    count: int                    # how many were re-measured
    baselines: float | None       # the baselines' median factor latest/first, when timed again after the search

    @property
    def host_changed(self) -> bool:
        """The baselines, which nothing selected, moved the same way by at least half as much (in
        log terms): the host's speed explains the shift. Lucky search times move only the variants."""
        return (self.baselines is not None and (self.baselines > 1) == (self.factor > 1)
                and abs(math.log(self.baselines)) >= 0.5 * abs(math.log(self.factor)))


def remeasure_shift(pairs: list[Pair]) -> float | None:
    """The median factor after/before over `pairs`, when there are at least two of them and every
    one moved the same way by more than the wider of its two spreads (a smaller difference is a tie,
    ARCHITECTURE.md, measurement rules); None otherwise. One variant moving is its own noise."""
    if len(pairs) < 2:
        return None
    ratios = []
    for (before, before_spread), (after, after_spread) in pairs:
        if abs(after - before) <= max(before_spread, after_spread):
            return None
        ratios.append(after / before)
    if not (all(x > 1 for x in ratios) or all(x < 1 for x in ratios)):
        return None
    return statistics.median(ratios)


def _ok(r: Record) -> bool:
    return r.status == "ok" and bool(r.median)


def shift_of_records(records: list[Record]) -> Shift | None:
    """The shift of a run's re-measure (each successful final record against its variant's search
    record), with what its baselines did: each baseline's latest successful timing against its
    first, counted only when the latest was taken after the last search measurement. The
    baselines' factor needs no spread test: it is read against the variants' factor."""
    search = {r.variant_key: r for r in records if r.phase == "search" and _ok(r)}
    final = {r.variant_key: r for r in records if r.phase == "final" and _ok(r)}
    pairs = [((search[k].median, search[k].spread or 0.0), (f.median, f.spread or 0.0))
             for k, f in final.items() if k in search]
    factor = remeasure_shift(pairs)
    if factor is None:
        return None
    searched = max(r.timestamp for r in records if r.phase == "search")
    timed: dict[str, list[Record]] = {}
    for r in records:
        if r.phase == "baseline" and _ok(r):
            timed.setdefault(r.variant_key, []).append(r)
    again = [t[-1].median / t[0].median for t in timed.values() if len(t) > 1 and t[-1].timestamp > searched]
    return Shift(factor, len(pairs), statistics.median(again) if again else None)


def describe(shift: Shift, others: bool = True) -> str:
    """One line for the report's headline: what the re-measure found and, from the baselines, why;
    the rows not re-measured (`others`: the run has some) are read differently in each case."""
    how = f"{shift.factor:.2f}x slower" if shift.factor > 1 else f"{1 / shift.factor:.2f}x faster"
    head = (f"the {shift.count} re-measured variants (*) ran {how} at the end than in the search, each by more "
            "than its spread")
    lucky = ("a time from one run of a few repetitions varies from run to run by more than its spread, and "
             "the best of many such times is the luckiest")
    rest = ("Rows without * carry search-time medians, which do not compare with the * rows' times; each was "
            "slower than every * row in the search") if others else ""
    if shift.host_changed:
        return (f"{head}; the baselines, timed again, moved likewise ({shift.baselines:.2f}x): this machine ran "
                f"at another speed at the end. {rest}".rstrip())
    if shift.baselines is not None:
        return (f"{head}; the baselines, timed again, did not ({shift.baselines:.2f}x): the search times of the "
                f"best were low draws ({lucky}). The * times are the better estimate. {rest}".rstrip())
    return (f"{head}: either this machine ran at another speed at the end, or the search times of the best "
            f"were low draws ({lucky}). {rest}".rstrip())
