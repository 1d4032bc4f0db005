"""Leaderboard renderers: rich terminal table, Markdown, JSON and CSV."""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from forge.backends.base import BASELINE_NAMES, NOT_CHECKED
from forge.ops import get_op
from forge.problem import Problem
from forge.targets import all_targets, get_target
from forge.report.leaderboard import Leaderboard, to_json
from forge.report.progress import clip, fmt_seconds, plural
from forge.report.tables import print_fitted, make_table, print_indented, width_left
from forge.results.lock import folder_holder, holder_text
from forge.results.remeasure import describe
from forge.variant import config_text


REMEASURED_NOTE = "* re-measured at the end with more repetitions"
# A config column narrower than this takes more lines per row than the config listed below the table.
CONFIG_MIN_WIDTH = 32


# A re-measured row whose interquartile range exceeds this share of its median was disturbed.
DISTURBED_SPREAD = 0.5


def _x(v: float | None) -> str:
    return f"{v:.2f}×" if v else "—"


def _pct(v: float | None) -> str:
    return f"{100 * v:.1f}%" if v else "—"


def _spread(r) -> str:
    return fmt_seconds(r.spread) if r.time_kind == "measured" else "—"


def _rank(r) -> str:
    return f"{r.rank}" + (f" (tie #{r.tie_with})" if r.tie_with else "")


def modeled_line(note: str) -> str:
    """The one line that says times are modeled, with the backend's reason."""
    why = note or "measure=model was asked for"
    if why.lower().startswith("times are modeled"):
        why = why.split(":", 1)[-1].strip()
    return f"times are MODELED, not measured: {why}"


def evaluated_text(lb: Leaderboard) -> str:
    """How far the search got: "8 of 40 variants"."""
    done = sum(lb.status_counts.values())
    trials = (lb.info.get("settings") or {}).get("trials")
    return f"{done} of {trials} variants" if trials else f"{done} variants"


def run_state(lb: Leaderboard) -> list[str]:
    """Nothing for a finished run; otherwise whether it is still going or was interrupted, so a
    table of what is recorded so far is never read as the run's result."""
    if lb.info.get("status", "complete") == "complete":
        return []
    so_far = f"{evaluated_text(lb)} evaluated"
    holder = folder_holder(Path(lb.run_dir))
    if holder is not None:
        return [f"RUN IN PROGRESS ({holder_text(holder)}): {so_far} so far; this is what is recorded until now"]
    return [f"RUN NOT FINISHED (interrupted or killed): {so_far}; continue with: forge tune --resume {lb.run_dir}"]


def missing_baselines(lb: Leaderboard) -> list[str]:
    """Why a speedup column is empty: no such baseline was timed here, or it was timed but is of
    another kind than the variants' times (a modeled unfused sequence beside measured kernels)."""
    if not lb.baselines and lb.info.get("status") != "complete":
        # the run stopped (or is) before its baselines: the reasons below would say why none exist
        return ["baselines: none timed yet, so the speedup columns are empty (the run has not reached them, or "
                "stopped before; forge tune --resume times them)"]
    reasons = lb.info.get("no_baseline_reason") or {}
    kinds = {r.time_kind for r in lb.rows}
    lines = []
    for name in BASELINE_NAMES:
        mine = [b for b in lb.baselines if b["name"] == name]
        ok_kinds = {b["time_kind"] for b in mine if b["status"] == "ok"}
        if not mine and reasons.get(name):
            lines.append(f"baseline {name}: none, so '× {name}' is empty — {reasons[name]}")
        elif ok_kinds and kinds and not ok_kinds & kinds:
            lines.append(f"'× {name}' is empty: the {name} baseline is {'/'.join(sorted(ok_kinds))} and the variants' "
                         f"times are {'/'.join(sorted(kinds))}; forge does not set one kind against the other")
    return lines


def measured_where(hosts: list[str]) -> str:
    """Where the times were taken, by host name: a run is often read on another machine than the
    GPU node or Ray cluster that measured it."""
    if not hosts:
        return ""
    return f" on {hosts[0]}" if len(hosts) == 1 else f" on {len(hosts)} hosts ({', '.join(hosts)})"


def headline(lb: Leaderboard) -> list[str]:
    lines = [f"{Problem(**lb.info['problem']).short()} on {lb.info.get('target', {}).get('name')}"]
    lines += run_state(lb)
    dtype = lb.info["problem"].get("dtype", "float32")
    if lb.info.get("target", {}).get("kind") == "cpu" and dtype != "float32":
        # the C kernels have no half-precision arithmetic: the problem's values are, its kernel's math not
        lines.append(f"{dtype} on the CPU: the inputs hold {dtype} values, and the kernel reads, computes and "
                     "writes them in float32 (its time is a float32 kernel's)")
    if lb.info.get("bank_hit"):
        lines.append("served by the tuning bank: only its config was evaluated, the search skipped (--no-bank searches)")
    if lb.measured:
        lines.append(f"times are MEASURED{measured_where(lb.hosts)} (median of repetitions; spread = interquartile range)")
        if lb.remeasure:
            lines.append(describe(lb.remeasure, others=not all(r.remeasured for r in lb.rows)))
        # Runs of the demo's finalists kept their slowest repetition within 1.5x their fastest in 94 %
        # of runs (benchmarks/host_timing_noise.py, README), so an interquartile range of half the
        # median is far outside what a kernel does by itself: it is a busy machine's
        disturbed = [f"#{r.rank}" for r in lb.rows if r.remeasured and r.spread > DISTURBED_SPREAD * r.median]
        if disturbed:
            lines.append(f"re-measure disturbed: the repetitions of {', '.join(disturbed)} spread wider than "
                         "half their median (the machine was busy while they ran), so their times and their "
                         "order among the * rows are not to be relied on")
    else:
        lines.append(modeled_line(lb.info.get("measure_note", "")))
        name = lb.info.get("target", {}).get("name")
        if name and name in all_targets() and get_target(name).partial:
            lines.append(f"{name} is a partial target: some of its numbers are estimates or placeholders, and "
                         f"these modeled times rest on them (`forge targets {name}` gives each number's source)")
        checks = [str(r.extra.get("correctness", "")) for r in lb.rows if "correctness" in r.extra]
        host = [c for c in checks if not c.startswith(NOT_CHECKED)]
        if host:
            first = host[0].partition(" at ")[2].partition(" (same config)")[0]
            # a small problem is checked whole; a larger one at a shape cut down to what the CPU emulates
            at = ("at the problem's own shape" if first == Problem(**lb.info["problem"]).short() else
                  f"at a reduced shape with the same config (the best at {first})")
            lines.append(f"correctness: {len(host)} of the {len(checks)} ranked variants checked on the CPU by host "
                         f"emulation {at}"
                         + ("" if len(host) == len(checks) else f"; {len(checks) - len(host)} not checked"))
        elif checks:
            lines.append(f"correctness: not checked ({checks[0].partition('(')[2].rstrip(')')})")
    sp = lb.info.get("space", {})
    counts = ", ".join(f"{k} {v}" for k, v in sorted(lb.status_counts.items()))
    failed_final = sum(1 for f in lb.failures if f.get("phase") == "final")
    lines.append(f"space: {sp.get('cartesian')} points, {sp.get('valid')} valid; evaluated "
                 f"{sum(lb.status_counts.values())}" + (f": {counts}" if counts else "")
                 + (f"; {failed_final} of them failed the final re-measure and are not ranked" if failed_final else ""))
    if lb.rejections:
        lines.append("rejected by reason: " + ", ".join(f"{k} {v}" for k, v in sorted(lb.rejections.items(), key=lambda x: -x[1])))
    for b in lb.baselines:
        t = (f"{fmt_seconds(b['median'])} [{b['time_kind']}]" if b["status"] == "ok"   # a failure has no time to label
             else f"{b['status']}: {b['reason'][:80]}")
        lines.append(f"baseline {b['name']}: {t} — {b['label']}")
    lines += missing_baselines(lb)
    if lb.info.get("roofline_seconds"):
        roof = lb.info["roofline_seconds"]
        # the models charge each kernel its launch (Ascend's head, ascend.md §1.5; CUDA's overhead,
        # cuda.md §5.2), which no roofline holds
        heads = {r.extra["launch_head_s"] for r in lb.rows if r.extra.get("launch_head_s")}
        best_head = lb.rows[0].extra.get("launch_head_s") if lb.rows else None
        head = best_head or (max(heads) if heads else None)
        held = (f"a {fmt_seconds(head)} kernel launch" if len(heads) == 1    # one launch per kernel (Ascend)
                else f"its kernel launches (the best variant's: {fmt_seconds(head)})" if best_head
                else f"its kernel launches (up to {fmt_seconds(head)})")     # CUDA: split-k launches more
        lines.append(f"roofline bound: {fmt_seconds(roof)}" + (
            f" (math and data movement only; each modeled time also holds {held}"
            + (", which dominates at this size)" if head > roof else ")") if head else ""))
        if any(r.roofline_fraction and r.roofline_fraction > 1 for r in lb.rows):
            lines.append("roofline above 100 %: the bound understates this device here (on the CPU target "
                         "its compute roof is the base-clock peak or the highest BLAS rate probed on this "
                         "machine, and its bandwidth the highest copy rate probed, which a host busy at every "
                         "probe reads low, and DRAM's while a small working set stays in cache); compare rows "
                         "with each other")
    return lines


def table_rows(lb: Leaderboard, top: int | None = None) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The leaderboard's columns and rows as text, the same in every format (the emulation column
    where variants were checked by emulation on the CPU)."""
    emulated = any("emulation" in r.extra for r in lb.rows)
    columns = ("rank", "config", "median", "spread", "kind", "× unfused", "× vendor", "roofline") + (
        ("emulation",) if emulated else ())
    rows = [(_rank(r), config_text(r.config), fmt_seconds(r.median) + (" *" if r.remeasured else ""),
             _spread(r), r.time_kind, _x(r.speedup_unfused), _x(r.speedup_vendor), _pct(r.roofline_fraction),
             *((str(r.extra.get("emulation", "—")),) if emulated else ())) for r in lb.rows[:top]]
    return columns, rows


def notes(lb: Leaderboard, top: int | None = None) -> list[str]:
    """The lines under the leaderboard table, the same in every format."""
    shown = lb.rows[:top]
    lines = []
    if len(lb.rows) > len(shown):
        more = len(lb.rows) - len(shown)
        lines.append(f"{more} more ranked variant{'s' if more > 1 else ''} not shown "
                     f"(forge report {lb.run_dir} --top {len(lb.rows)} shows all)")
    if any(r.remeasured for r in shown):
        lines.append(REMEASURED_NOTE)
    best = lb.best
    if best and best.extra.get("pipe_busy"):
        busy = ", ".join(f"{k} {100 * v:.0f}%" for k, v in best.extra["pipe_busy"].items())
        lines.append(f"best variant per-pipe utilisation (modeled: the share of the kernel time each pipe is busy): {busy}")
    if any("emulation" in r.extra for r in lb.rows):
        failed = sum(1 for f in lb.failures if f["status"] in ("incorrect", "runtime_error", "timeout"))
        passed = sum(1 for r in lb.rows if r.extra.get("emulation") == "ok")
        lines.append(f"emulation on the CPU: {plural(passed, 'ranked variant')} passed, {failed} failed"
                     + (" (listed below)" if failed else "")
                     # each config is emulated at a shape of its own tiling: the best's is named
                     + (f"; each at a reduced shape with its config (the best at "
                        f"{_dims(best.extra['emulated_shape'], lb.info['problem']['op'])})"
                        if best and best.extra.get("emulated_shape") else ""))
    if not lb.rows:
        finished = lb.info.get("status", "complete") == "complete"
        lines.append("no correct variant" + ("" if finished else " yet")
                     + (": every evaluated variant failed (reasons in the failures)" if lb.failures else ""))
    return lines


def print_leaderboard(lb: Leaderboard, console: Console, top: int = 10) -> None:
    for line in headline(lb):
        # a line that quotes a command stays one line, so the command can be copied whole
        console.print(line, highlight=False, markup=False, soft_wrap="forge tune --resume" in line)
    if lb.rows:
        columns, cells = table_rows(lb, top)

        def table(with_config: bool) -> Table:
            keep = [i for i, c in enumerate(columns) if with_config or c != "config"]
            t = make_table([columns[i] for i in keep], wrap={"config"}, title="leaderboard")
            for row in cells:
                t.add_row(*(Text(row[i]) for i in keep))
            return t

        # A terminal too narrow for the configs beside the numbers gets them listed below the table;
        # one too narrow for the numbers alone gets one record per row, so no number is cut.
        left = width_left(console, table(False))
        if left < -3:
            print_fitted(console, columns, cells, keys=(columns[0],), wrap={"config"}, title="leaderboard")
        else:
            narrow = left < CONFIG_MIN_WIDTH
            console.print(table(not narrow))
            if narrow:
                for r in lb.rows[:top]:
                    print_indented(console, config_text(r.config), 6, first=f"  #{r.rank}: ")
    lines = notes(lb, top)
    for line in lines[:-1] if not lb.rows else lines:
        console.print(line, highlight=False, markup=False)
    _print_failures(lb, console)
    if not lb.rows:
        console.print(Text(lines[-1], style="red"))


def _dims(shape: Any, op: str) -> str:
    """{"N": 256, "M": 64} as the flags write it, in the op's order: M=64,N=256."""
    if not isinstance(shape, dict):
        return str(shape)
    order = {d: i for i, d in enumerate(get_op(op).dims)}
    return ",".join(f"{k}={shape[k]}" for k in sorted(shape, key=lambda d: order.get(d, len(order))))


def _print_failures(lb: Leaderboard, console: Console) -> None:
    if lb.failures:
        console.print(f"{len(lb.failures)} failed variants, e.g.:")
        for f in lb.failures[:5]:
            console.print(f"  {f['status']}: {config_text(f['config'])}: {f['reason'][:160]}", highlight=False, markup=False)


# Failed variants listed in a report file (all of them are in the run's forge.sqlite).
FILE_FAILURES = 100


def to_markdown(lb: Leaderboard) -> str:
    out = [f"# forge leaderboard — {lb.run_dir}", ""]
    out += [f"- {line}" for line in headline(lb)]
    if lb.rows:
        columns, rows = table_rows(lb)
        out += ["", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for row in rows:
            cells = [f"`{c}`" if col == "config" else c for col, c in zip(columns, row)]
            out.append("| " + " | ".join(cells) + " |")
    out += [""] + [line.replace("*", "\\*", 1) if line == REMEASURED_NOTE else line for line in notes(lb)]
    if lb.failures:
        out += ["", "## Failed variants", "", "| status | config | reason |", "|---|---|---|"]
        for f in lb.failures[:FILE_FAILURES]:
            out.append(f"| {f['status']} | `{config_text(f['config'])}` | {clip(f['reason'], 200).replace('|', '/')} |")
        if len(lb.failures) > FILE_FAILURES:
            out += ["", f"{len(lb.failures) - FILE_FAILURES} more failed variants (all are in forge.sqlite)."]
    return "\n".join(out) + "\n"


def to_csv(lb: Leaderboard) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["rank", "tie_with", "config", "median_s", "spread_s", "time_kind", "speedup_unfused",
                "speedup_vendor", "remeasured", "roofline_fraction"])
    for r in lb.rows:
        spread = r.spread if r.time_kind == "measured" else ""      # a model gives one number, no spread
        w.writerow([r.rank, r.tie_with or "", config_text(r.config), r.median, spread, r.time_kind,
                    r.speedup_unfused or "", r.speedup_vendor or "", r.remeasured, r.roofline_fraction or ""])
    return buf.getvalue()


FORMATS = {"md": to_markdown, "json": to_json, "csv": to_csv}
