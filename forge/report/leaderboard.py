"""The leaderboard of one run: ranked correct variants, baselines, failures and rejections.

The variants re-measured at the end are ranked first, by that measurement; a row whose median
differs from the head of its tie group by less than the wider of the two spreads (interquartile
ranges) is reported as a tie with it. Variants that failed in any
way are never ranked, only counted. When every re-measured variant moved the same way between the
search and the re-measure by more than its spread, the leaderboard carries that shift and what the
baselines did (`remeasure`, forge/results/remeasure.py), so the report can say why.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from forge.results import Record, Store
from forge.results.record import convergence, failed_finalists
from forge.results.remeasure import Shift, shift_of_records
from forge.tuner import check_records, read_run_file


@dataclass
class Row:
    rank: int
    config: dict[str, Any]
    median: float
    spread: float
    time_kind: str
    speedup_unfused: float | None
    speedup_vendor: float | None
    remeasured: bool
    tie_with: int | None
    roofline_fraction: float | None
    variant_key: str
    trial: int | None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Leaderboard:
    run_dir: str
    info: dict[str, Any]
    rows: list[Row]
    baselines: list[dict[str, Any]]
    status_counts: dict[str, int]
    rejections: dict[str, int]
    failures: list[dict[str, Any]]
    convergence: list[tuple[int, float]]
    remeasure: Shift | None = None
    hosts: list[str] = field(default_factory=list)     # where the measured times were taken

    @property
    def measured(self) -> bool:
        return bool(self.info.get("measured"))

    @property
    def best(self) -> Row | None:
        return self.rows[0] if self.rows else None

    def to_dict(self) -> dict[str, Any]:
        return {"run_dir": self.run_dir, "problem": self.info.get("problem"), "target": self.info.get("target"),
                "measured": self.measured, "measured_on": self.hosts, "measure_note": self.info.get("measure_note", ""),
                "roofline_seconds": self.info.get("roofline_seconds"),
                "space": self.info.get("space"), "baselines": self.baselines,
                "rows": [asdict(r) for r in self.rows], "status_counts": self.status_counts,
                "rejections": self.rejections, "failures": self.failures,
                "convergence": self.convergence, "remeasure": asdict(self.remeasure) if self.remeasure else None}


def reason_kind(reason: str) -> str:
    """The rule name at the head of a reason ("UB: 201 KiB > 192 KiB" -> "UB")."""
    head = reason.split(";")[0]
    return head.split(":")[0].strip() or "unspecified"


def _speedup(base: Record | None, r: Record) -> float | None:
    """Against the latest baseline of the same time kind (measured with measured, modeled with modeled)."""
    if base is None or base.status != "ok" or not base.median or base.time_kind != r.time_kind:
        return None
    return base.median / r.median


def build_leaderboard(run_dir: str | Path) -> Leaderboard:
    run_dir = Path(run_dir)
    info = read_run_file(run_dir)
    store = Store.for_run(run_dir)
    try:
        records = store.records()
        check_records(run_dir, info, len(records))
        info = {**info, "bank_hit": store.get_meta("bank_hit")}
    finally:
        store.close()
    search = [r for r in records if r.phase == "search"]
    final = {r.variant_key: r for r in records if r.phase == "final" and r.status == "ok"}
    latest: dict[str, Record] = {}
    for r in records:
        if r.phase == "baseline":
            latest[r.config.get("baseline")] = r   # records come in insertion order: the last wins
    baselines = [{"name": name, "label": r.extra.get("label", ""), "status": r.status, "reason": r.reason,
                  "median": r.median, "spread": r.spread, "time_kind": r.time_kind}
                 for name, r in latest.items()]
    roofline = info.get("roofline_seconds")

    failed_final = failed_finalists(records)
    ranked: list[Record] = []
    for r in search:
        if r.status == "ok" and r.median is not None and r.variant_key not in failed_final:
            ranked.append(final.get(r.variant_key, r))
    # The re-measured top candidates lead: their longer final measurement is the ranking's last word,
    # and a variant left out of the re-measure was slower than they were when it was searched.
    ranked.sort(key=lambda r: (r.phase != "final", r.median))
    ties = group_tie_ranks([r.median for r in ranked], [r.spread or 0.0 for r in ranked],
                           sum(1 for r in ranked if r.phase == "final"))
    rows: list[Row] = []
    for i, (r, tie) in enumerate(zip(ranked, ties)):
        rows.append(Row(i + 1, r.config, r.median, r.spread or 0.0, r.time_kind,
                        _speedup(latest.get("unfused"), r) or r.speedup_unfused,
                        _speedup(latest.get("vendor"), r) or r.speedup_vendor, r.phase == "final", tie,
                        roofline / r.median if roofline and r.median else None, r.variant_key, r.trial, r.extra))

    status_counts = dict(Counter(r.status for r in search))
    rejections = dict(info.get("space", {}).get("rejections", {}))
    for r in search:
        if r.status == "invalid":
            k = reason_kind(r.reason)
            rejections[k] = rejections.get(k, 0) + 1
    failures = [{"status": r.status, "config": r.config, "reason": f"final re-measure: {r.reason}", "phase": "final"}
                for r in failed_final.values()]
    failures += [{"status": r.status, "config": r.config, "reason": r.reason, "phase": "search"} for r in search
                 if r.status not in ("ok", "invalid")]
    hosts = sorted({r.host for r in records if r.time_kind == "measured" and r.host})
    return Leaderboard(str(run_dir), info, rows, baselines, status_counts, rejections, failures,
                       convergence(records), shift_of_records(records), hosts)


def tie_ranks(medians: list[float], spreads: list[float]) -> list[int | None]:
    """Per row of a leaderboard sorted fastest first, the rank (1-based) of the row it ties with,
    or None. A difference smaller than the spread is a tie (ARCHITECTURE.md, measurement rules),
    and it is judged against the head of the tie group, the row the label names: comparing each
    row with the one above it would chain a row that is measurably slower than the head onto it
    through one noisy row in between."""
    ties: list[int | None] = []
    head = 0
    for i, (median, spread) in enumerate(zip(medians, spreads)):
        gap = abs(median - medians[head])
        if i > 0 and (gap < max(spread, spreads[head]) or gap <= 1e-12 * medians[head]):
            ties.append(head + 1)
        else:
            ties.append(None)
            head = i
    return ties


def group_tie_ranks(medians: list[float], spreads: list[float], n_final: int) -> list[int | None]:
    """`tie_ranks` of a leaderboard whose first `n_final` rows are the re-measured ones: ties are
    judged among those and among the rest, never across. The two hold times of different
    measurements, which is why the re-measured rows lead whatever their times."""
    rest = tie_ranks(medians[n_final:], spreads[n_final:])
    return tie_ranks(medians[:n_final], spreads[:n_final]) + [None if t is None else t + n_final for t in rest]


def to_json(lb: Leaderboard) -> str:
    return json.dumps(lb.to_dict(), indent=2, default=str)
