"""Tables in a narrow terminal: numbers are never cut, a config never breaks mid-word; what does
not fit beside the numbers is listed below them, or the table becomes one record per row."""
from __future__ import annotations

import io

from rich.console import Console

from forge.report.leaderboard import Leaderboard, Row
from forge.report.render import print_leaderboard
from forge.report.tables import print_fitted

CONFIG = {"block_kv": 128, "block_q": 64, "kr": 2, "mr": 8, "order": "head", "qv": 4, "schedule": "static",
          "threads": 1, "vec": 8}
PROBLEM = {"op": "attention", "shape": {"B": 1, "Hq": 4, "Hkv": 4, "Sq": 256, "Skv": 256, "D": 64},
           "dtype": "float32", "attrs": {}}


def board(width: int) -> str:
    rows = [Row(i, CONFIG | {"qv": i}, 1.51e-3, 2.7e-4, "measured", 1.18, 0.92, True, 1 if i > 1 else None, 0.285,
                f"k{i}", i) for i in (1, 2)]
    lb = Leaderboard("run", {"problem": PROBLEM, "measured": True, "space": {"cartesian": 4, "valid": 2}},
                     rows, [], {"ok": 2}, {}, [], [])
    out = io.StringIO()
    print_leaderboard(lb, Console(file=out, width=width))
    return out.getvalue()


def test_a_wide_terminal_has_each_config_on_its_row():
    text = board(200)
    assert "block_kv=128 block_q=64 kr=2 mr=8 order=head qv=1 schedule=static threads=1 vec=8 │ 1.51 ms *" in text


def test_a_narrow_terminal_lists_the_configs_below_whole_and_cuts_no_number():
    for width in (80, 100):
        text = board(width)
        assert "┃ × unfused ┃ × vendor ┃ roofline ┃" in text and "│ 2 (tie #1) │ 1.51 ms * │ 270 µs │" in text
        listed = text[text.index("  #1: "):text.index("* re-measured")]
        assert " ".join(listed.split()) == ("#1: block_kv=128 block_q=64 kr=2 mr=8 order=head qv=1 schedule=static "
                                           "threads=1 vec=8 #2: block_kv=128 block_q=64 kr=2 mr=8 order=head qv=2 "
                                           "schedule=static threads=1 vec=8")
        assert all(len(line) <= width and line == line.rstrip() for line in listed.splitlines())


def fitted(width: int) -> str:
    out = io.StringIO()
    rows = [("a1", "attention[B=1,Hq=4,Hkv=2,Sq=256,Skv=256,D=128] float16", "ascend910b2", "complete",
             "8 of 8 variants", "25 µs modeled", "3.42×", "–")]
    print_fitted(Console(file=out, width=width), ("folder", "what", "target", "state", "progress", "best",
                                                  "× unfused", "× vendor"), rows,
                 keys=("folder", "what"), wrap=("what", "state", "progress"), title="runs")
    return out.getvalue()


def test_a_table_too_wide_for_the_terminal_becomes_records_with_named_values():
    assert "┃ folder ┃" in fitted(200)
    text = fitted(80)
    assert "┃" not in text and "…" not in text
    lines = text.splitlines()
    assert lines[1] == "a1  attention[B=1,Hq=4,Hkv=2,Sq=256,Skv=256,D=128] float16"
    body = " ".join(x.strip() for x in lines[2:])
    assert "target: ascend910b2 · state: complete · progress: 8 of 8 variants · best: 25 µs modeled · × unfused: 3.42×" \
        in body and "× vendor" not in body                      # an empty value is left out
    assert all(len(x) <= 80 and x == x.rstrip() for x in lines)


def test_a_terminal_too_narrow_for_the_numbers_alone_lists_records():
    """Below the width of the number columns, cutting them would drop units and ranks: records."""
    text = board(60)
    assert "┃" not in text and "…" not in text
    body = " ".join(text.split())
    assert "2 (tie #1) config: block_kv=128" in body and "median: 1.51 ms * · spread: 270 µs · kind: measured" in body
    records = text[text.index("leaderboard\n"):text.index("* re-measured")]
    assert all(len(x) <= 60 for x in records.splitlines())
