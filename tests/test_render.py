"""The terminal leaderboard prints what was recorded, brackets included (rich would read them as markup)."""
from __future__ import annotations

import io

from rich.console import Console

from forge.report.leaderboard import Leaderboard, Row
from forge.report.render import print_leaderboard


def test_terminal_leaderboard_keeps_bracketed_text():
    row = Row(1, {"tile": "[4, 4]"}, 1e-3, 1e-5, "measured", 2.0, 1.5, True, None, 1.2, "k", 1)
    lb = Leaderboard("run", {"measured": True, "roofline_seconds": 1.2e-3, "space": {"cartesian": 4, "valid": 2}},
                     [row], [{"name": "unfused", "label": "sequence", "median": 2e-3, "status": "ok",
                              "reason": "", "time_kind": "measured"}],
                     {"ok": 1, "compile_error": 1}, {},
                     [{"status": "compile_error", "config": {"tile": 8},
                       "reason": "x.c:3: error [/tmp/x.c] [Errno 2] [-Werror]"}], [])
    out = io.StringIO()
    print_leaderboard(lb, Console(file=out, width=200))
    text = out.getvalue()
    assert "[measured]" in text and "[4, 4]" in text
    assert "error [/tmp/x.c] [Errno 2] [-Werror]" in text
    assert "roofline above 100 %" in text


def test_baseline_line_puts_time_and_kind_before_its_description():
    """A long baseline description wraps on a terminal; its time and [kind] come first so they stay
    on the line that names the baseline."""
    lb = Leaderboard("run", {"measured": False, "space": {"cartesian": 4, "valid": 2}}, [],
                     [{"name": "unfused", "label": "4 kernels: " + "x" * 150, "median": 1.06e-3,
                       "status": "ok", "reason": "", "time_kind": "modeled"}], {}, {}, [], [])
    out = io.StringIO()
    print_leaderboard(lb, Console(file=out, width=100))
    line = next(x for x in out.getvalue().splitlines() if x.startswith("baseline unfused"))
    assert "1.06 ms [modeled]" in line
