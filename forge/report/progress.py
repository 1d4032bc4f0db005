"""Live progress of a search: a bar with evaluations, best-so-far and its kind (measured/modeled)."""
from __future__ import annotations

import textwrap

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def make_console(stderr: bool = False) -> Console:
    """A rich console; piped output (CI logs, files) gets a wide page instead of 80 columns, unless
    COLUMNS names a width (`COLUMNS=100 forge report RUN | less`)."""
    import os
    import sys

    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr)
    columns = os.environ.get("COLUMNS", "")
    return Console(stderr=stderr, width=int(columns) if columns.isdigit() and int(columns) > 0 else 200)


def fmt_best(best: float | None, kind: str) -> str:
    return f"{fmt_seconds(best)} ({kind})" if best is not None else "—"


def clip(text: str, width: int) -> str:
    """`text` on one line, cut at a word and marked " …" where longer than `width`, so a long
    reason (a compiler's output) never ends inside a number; a first word longer than `width` is
    cut where it must be."""
    one = " ".join(str(text).split())
    if len(one) <= width:
        return one
    cut = textwrap.shorten(one, width=width, placeholder=" …")
    return cut if cut != "…" else one[:width - 2] + " …"


def plural(n: int, noun: str) -> str:
    """'1 case', '2 cases'."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def fmt_seconds(t: float | None) -> str:
    if t is None:
        return "—"
    # (unit, its seconds, from how many seconds it is used): 90 s, 12.5 min, 2.86 h, not 1.03e+04 s
    for unit, scale, start in (("h", 3600.0, 7200.0), ("min", 60.0, 600.0), ("s", 1.0, 1.0), ("ms", 1e-3, 1e-3),
                               ("µs", 1e-6, 1e-6)):
        if t >= start:
            return f"{t / scale:.3g} {unit}"
    return f"{t * 1e9:.3g} ns"


class SearchProgress:
    """A rich progress bar on terminals; one line per new best (and every 10th variant) elsewhere."""

    def __init__(self, console: Console, total: int, done: int = 0):
        self.console = console
        self.live = console.is_terminal
        self.total = total
        self.done = done
        self.progress = Progress(TextColumn("[bold]tuning"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.description}"), TimeElapsedColumn(),
                                 console=console, transient=False, disable=not self.live)
        self.task = self.progress.add_task("best —", total=total, completed=done)
        self.best: float | None = None

    def __enter__(self) -> "SearchProgress":
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def retotal(self, total: int) -> None:
        """The search's length changed (a bank hit that failed here becomes a search)."""
        self.total = total
        self.progress.update(self.task, total=total)

    def refresh(self, ctx: Any) -> None:
        self.progress.refresh()

    def update(self, ctx: Any, rec: Any) -> None:
        if rec.phase != "search":
            return
        self.done += 1
        desc = f"best {fmt_best(ctx.best, ctx.best_kind)}"
        self.progress.update(self.task, completed=self.done, description=desc)
        improved = ctx.best is not None and ctx.best != self.best
        self.best = ctx.best
        if not self.live and (improved or self.done % 10 == 0 or self.done == self.total):
            status = rec.status if rec.status == "ok" else f"{rec.status}: {rec.reason[:80]}"
            self.console.print(f"  [{self.done}/{self.total}] {fmt_seconds(rec.median)} {status}"
                               f"  best {fmt_best(ctx.best, ctx.best_kind)}", markup=False, highlight=False)
