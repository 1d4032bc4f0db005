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
