"""`forge runs [FOLDER]`: the runs and benches in a results folder, what each tuned, how far it got
and its best, so a folder of timestamped runs can be read without opening each one."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape

from forge.config import RESULTS_DIR
from forge.errors import ForgeInputError, writing
from forge.problem import Problem
from forge.report.progress import fmt_seconds, make_console, plural
from forge.report.tables import print_fitted
from forge.results.lock import activity


def run_row(path: Path) -> dict[str, Any]:
    from forge.report.leaderboard import build_leaderboard
    from forge.report.render import evaluated_text

    lb = build_leaderboard(path)
    info = lb.info
    best = lb.rows[0] if lb.rows else None
    return {"kind": "run", "path": str(path), "started": info.get("started"),
            "what": Problem(**info["problem"]).short(), "target": (info.get("target") or {}).get("name"),
            "status": activity(path, info.get("status") == "complete"),
            "progress": "bank hit" if info.get("bank_hit") else evaluated_text(lb),
            "best": best.median if best else None, "best_kind": best.time_kind if best else None,
            "speedup_unfused": best.speedup_unfused if best else None,
            "speedup_vendor": best.speedup_vendor if best else None}


def bench_row(path: Path) -> dict[str, Any]:
    from forge.bench.board import build_board

    board = build_board(path)
    state, total = board["state"], board["total"]
    # a case stopped part way has passed with its best so far: counted, and said
    partway = sum(1 for r in board["cases"] if r["status"] == "PASSED" and not r.get("finished", True))
    return {"kind": "bench", "path": str(path), "started": None,
            "what": f"bench {board['suite']} ({plural(total['cases'], 'case')})", "target": board["target"],
            "status": activity(path, state["finished"] == state["cases"]),
            "progress": f"{state['finished']}/{state['cases']} cases finished, {total['passed']} passed"
                        + (f" ({partway} of them stopped part way, best so far)" if partway else "")
                        + (f", {total['unchecked']} never ran (correctness not checked)" if total["unchecked"] else "")
                        + (f"; {total['cases'] - total['supported']} unsupported"
                           if total["cases"] > total["supported"] else ""),
            "best": None, "best_kind": None, "speedup_unfused": None, "speedup_vendor": None,
            # over each case's own baseline (the suite's reference kernel, or forge's unfused sequence)
            "geomean_speedup": total["geomean_speedup"],
            "geomean_kind": "modeled" if total["modeled"] and not total["measured"]
                            else "measured" if total["measured"] and not total["modeled"]
                            else "measured and modeled" if total["measured"] else None}


def print_rows(rows: list[dict[str, Any]], title: str, con: Console) -> None:
    """One row per folder. A run's best time says whether it was measured or modeled, and its
    speedups over the unfused sequence and over the vendor kernel stay in their own columns: a
    column mixing the two would set unlike ratios side by side. A bench's geomean (over each case's
    own baseline) is said in its progress."""
    cells, styles = [], []
    for r in rows:
        best = f"{fmt_seconds(r['best'])} {r['best_kind']}" if r["best"] else "–"
        progress = r["progress"] + (f", geomean {r['geomean_speedup']:.2f}× over the cases' baselines"
                                    + (f" ({r['geomean_kind']})" if r.get("geomean_kind") else "")
                                    if r.get("geomean_speedup") else "")
        path = Path(r["path"])       # a config's shape<i> run is named with its config's folder
        name = f"{path.parent.name}/{path.name}" if re.fullmatch(r"shape\d+", path.name) else path.name
        cells.append((name, r["what"], str(r["target"]), r["status"], progress, best,
                      _times(r.get("speedup_unfused")), _times(r.get("speedup_vendor"))))
        styles.append("yellow" if r["status"].startswith("in progress") else "red" if r["status"] != "complete" else "")
    print_fitted(con, ("folder", "what", "target", "state", "progress", "best", "× unfused", "× vendor"), cells,
                 keys=("folder", "what"), wrap=("what", "state", "progress"), title=title, styles=styles)


def _times(x: float | None) -> str:
    return f"{x:.2f}×" if x else "–"


def collect(folder: Path) -> list[dict[str, Any]]:
    """Every run folder (run.json) and bench folder (bench.json) directly under `folder`, and the
    shape<i> runs of a config of several shapes one level down; `folder` alone when it is one."""
    from forge.bench.runner import BENCH_FILE, RUN_FILE

    def kind_of(path: Path) -> str | None:
        return "bench" if (path / BENCH_FILE).is_file() else "run" if (path / RUN_FILE).is_file() else None

    found = []
    if kind_of(folder):          # a run or bench folder itself: its own row, not "no run here"
        found.append(folder)
    for path in sorted(p for p in folder.iterdir() if p.is_dir() and not kind_of(folder)):
        if kind_of(path):
            found.append(path)
        else:
            try:
                found += sorted((c for c in path.iterdir() if c.is_dir() and re.fullmatch(r"shape\d+", c.name)
                                 and kind_of(c) == "run"), key=lambda c: int(c.name[5:]))
            except OSError:          # a folder this user cannot read holds no run of theirs to list
                continue
    rows = []
    for path in found:
        kind = kind_of(path)
        try:
            rows.append(bench_row(path) if kind == "bench" else run_row(path))
        except Exception as exc:  # noqa: BLE001 - one damaged folder must not hide the others
            what, target = _identity(path, kind)
            rows.append({"kind": kind, "path": str(path), "started": None, "what": what, "target": target,
                         "status": f"unreadable: {_damage(exc).replace(f'{path}/', '')}", "progress": "–",
                         "best": None, "best_kind": None, "speedup_unfused": None, "speedup_vendor": None})
    return rows


def runs(
    folder: Optional[Path] = typer.Argument(None, help="folder holding run and bench folders [default: results]"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="also write the list as JSON here"),
) -> None:
    """List the runs and benches in a folder: problem, target, state, progress, best."""
    con = make_console()
    if folder is None and not RESULTS_DIR.is_dir():
        con.print(f"no runs yet: {RESULTS_DIR}/ does not exist (forge tune and forge bench write there)")
        return
    folder = folder or RESULTS_DIR
    if not folder.is_dir():
        raise ForgeInputError("folder", f"{folder} is not a folder")
    rows = collect(folder)
    if not rows:
        con.print(f"no forge run or bench folder in {escape(str(folder))}")
    else:
        print_rows(rows, str(folder), con)
    if json_out:
        with writing("--json", json_out):
            json_out.write_text(json.dumps(rows, indent=1, default=str))
        con.print(f"wrote {json_out}")


def register(app: typer.Typer) -> None:
    app.command("runs")(runs)


def _identity(path: Path, kind: str) -> tuple[str, str]:
    """What a damaged folder tuned and on which target, as far as its own file still says: a run
    whose store is broken still names its problem in run.json, and the user needs that to know
    which run to redo. "?" where the file does not say."""
    from forge.bench.runner import BENCH_FILE, RUN_FILE

    try:
        info = json.loads((path / (BENCH_FILE if kind == "bench" else RUN_FILE)).read_text())
        target = info.get("target")
        target = str((target.get("name") if isinstance(target, dict) else target) or "?")
        if kind == "bench":
            return (f"bench {info['suite']}" if info.get("suite") else "?"), target
        try:
            return Problem(**info["problem"]).short(), target
        except Exception:  # noqa: BLE001 - a problem forge cannot read is named by its op, if any
            op = (info.get("problem") or {}).get("op") if isinstance(info.get("problem"), dict) else None
            return str(op or "?"), target
    except Exception:  # noqa: BLE001 - an unreadable file names nothing
        return "?", "?"


def _damage(exc: Exception) -> str:
    """What is wrong with a folder, in words: forge's own reading names the file; anything else is
    named by its exception."""
    if isinstance(exc, ForgeInputError):
        return str(exc).removeprefix(f"{exc.field}: ")
    return f"{type(exc).__name__}: {exc}"
