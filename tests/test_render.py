"""The terminal leaderboard prints what was recorded, brackets included (rich would read them as markup)."""
from __future__ import annotations

import dataclasses
import io
import os

from rich.console import Console

from forge.report.leaderboard import Leaderboard, Row
from forge.report.render import headline, print_leaderboard
from forge.results.lock import folder_lock

PROBLEM = {"op": "softmax", "shape": {"M": 8, "N": 64}, "dtype": "float32", "attrs": {}}


def test_terminal_leaderboard_keeps_bracketed_text():
    row = Row(1, {"tile": "[4, 4]"}, 1e-3, 1e-5, "measured", 2.0, 1.5, True, None, 1.2, "k", 1)
    lb = Leaderboard("run", {"problem": PROBLEM, "measured": True, "roofline_seconds": 1.2e-3, "space": {"cartesian": 4, "valid": 2}},
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
    lb = Leaderboard("run", {"problem": PROBLEM, "measured": False, "space": {"cartesian": 4, "valid": 2}}, [],
                     [{"name": "unfused", "label": "4 kernels: " + "x" * 150, "median": 1.06e-3,
                       "status": "ok", "reason": "", "time_kind": "modeled"}], {}, {}, [], [])
    out = io.StringIO()
    print_leaderboard(lb, Console(file=out, width=100))
    line = next(x for x in out.getvalue().splitlines() if x.startswith("baseline unfused"))
    assert "1.06 ms [modeled]" in line


def test_a_tie_is_judged_against_the_row_it_names():
    """The demo's case: #3 is noisy, #4 and #5 are 10 % slower than #1. #2, #3 and #4 tie #1 (each
    gap is within the wider of the two spreads; #4's own spread is wide), #5 does not: its gap to #1
    exceeds both spreads, though it is within #4's spread of #4. #6 equals #5 and ties it."""
    from forge.report.leaderboard import tie_ranks

    medians = [2.18e-3, 2.19e-3, 2.20e-3, 2.41e-3, 2.42e-3, 2.42e-3]
    spreads = [3e-5, 1e-5, 2.19e-3, 2.9e-4, 1.4e-5, 0.0]
    assert tie_ranks(medians, spreads) == [None, 1, 1, 1, None, 5]
    assert tie_ranks([1.0], [0.5]) == [None] and tie_ranks([], []) == []


def test_re_measured_rows_and_the_rest_tie_only_among_themselves():
    """A disturbed re-measure (#1, wide spread) must not make a row not re-measured (#3) its tie:
    the two are times of different measurements."""
    from forge.report.leaderboard import group_tie_ranks

    medians, spreads = [4.8e-3, 5.0e-3, 1.7e-4, 1.8e-4], [5.3e-3, 1e-4, 1e-5, 1e-5]
    assert group_tie_ranks(medians, spreads, 2) == [None, 1, None, 3]
    assert group_tie_ranks(medians, spreads, 0) == [None, 1, 1, 1]         # no re-measure: one group


def test_an_unfinished_run_says_whether_it_is_still_going_or_was_interrupted(tmp_path):
    """A table of what is recorded so far must not read as a run's result: the headline says the
    run is in progress (a process holds its folder) or was interrupted (none does), with the
    resume command; a finished run says neither."""
    def lines(status: str) -> list[str]:
        info = {"problem": PROBLEM, "measured": True, "status": status, "settings": {"trials": 40},
                "space": {"cartesian": 4, "valid": 2}}
        return headline(Leaderboard(str(tmp_path), info, [], [], {"ok": 7, "timeout": 1}, {}, [], []))

    assert not any("RUN " in x for x in lines("complete"))
    assert f"RUN NOT FINISHED (interrupted or killed): 8 of 40 variants evaluated; continue with: " \
           f"forge tune --resume {tmp_path}" in lines("running")
    with folder_lock(tmp_path, "--out"):
        assert f"RUN IN PROGRESS (pid {os.getpid()}): 8 of 40 variants evaluated so far; this is what is " \
               "recorded until now" in lines("running")
    assert any("RUN NOT FINISHED" in x for x in lines("running"))


def test_a_shift_of_every_remeasured_variant_beyond_its_spread_is_reported(tmp_path):
    """The demo once re-measured its top 3 at 1.43x their search times: rank 4 then read faster than
    rank 1. When every re-measured variant moves the same way by more than its spread, the report
    says so (from the real records of a run folder) and, from the baselines timed again, whether
    the host or lucky search times explain it; one variant moving, moves within the spread, or
    moves both ways are noise and say nothing."""
    import json

    from forge.problem import Problem
    from forge.report.leaderboard import build_leaderboard
    from forge.results.remeasure import Shift, describe, remeasure_shift
    from forge.results import Record, Store

    slow = [((2.78e-3, 2e-4), (3.97e-3, 5e-5)), ((2.82e-3, 1e-4), (4.45e-3, 5e-5)), ((3.12e-3, 3e-5), (3.96e-3, 1e-4))]
    assert abs(remeasure_shift(slow) - 3.97 / 2.78) < 1e-9
    assert remeasure_shift(slow[:1]) is None
    assert remeasure_shift(slow[:2] + [((3.12e-3, 3e-5), (3.15e-3, 1e-4))]) is None     # within its spread
    assert remeasure_shift(slow[:2] + [((3.12e-3, 3e-5), (2.5e-3, 1e-4))]) is None      # one moved the other way
    assert abs(remeasure_shift([((2e-3, 0.0), (1e-3, 0.0)), ((4e-3, 0.0), (3e-3, 0.0))]) - 0.625) < 1e-9
    # the baselines, timed again, tell the host (moved at least half as far, in log terms) from luck
    assert "1.50x slower" in describe(Shift(1.5, 2, None)) and "0.80x" not in describe(Shift(0.8, 2, None))
    assert "moved likewise (1.30x): this machine ran at another speed" in describe(Shift(1.5, 2, 1.3))
    assert "did not (1.10x): the search times of the best were low draws" in describe(Shift(1.5, 2, 1.1))
    assert "did not (0.70x)" in describe(Shift(1.5, 2, 0.7)) and "1.25x faster" in describe(Shift(0.8, 2, 0.8))
    # rows without * are spoken of only where the leaderboard has some
    assert "Rows without *" in describe(Shift(1.5, 2, 1.1)) and "Rows without" not in describe(Shift(1.5, 2, 1.1),
                                                                                                others=False)

    p = Problem(**PROBLEM)
    (tmp_path / "run.json").write_text(json.dumps({"problem": PROBLEM, "measured": True, "status": "complete",
                                                   "space": {"cartesian": 8, "valid": 4}}))
    store = Store.for_run(tmp_path)
    try:
        for i, ((sm, ss), (fm, fs)) in enumerate(slow + [((3.15e-3, 1e-4), (None, None))]):
            common = dict(run_id="r", variant_key=f"k{i}", op=p.op, shape=p.shape, dtype=p.dtype, target="cpu",
                          attrs=p.attrs, config={"tile": i}, status="ok", time_kind="measured", trial=i)
            store.add(Record(**common, phase="search", median=sm, spread=ss))
            if fm is not None:
                store.add(Record(**common, phase="final", median=fm, spread=fs))
    finally:
        store.close()
    lb = build_leaderboard(tmp_path)
    assert [r.remeasured for r in lb.rows] == [True, True, True, False] and lb.rows[3].median == 3.15e-3
    assert abs(lb.remeasure.factor - 3.97 / 2.78) < 1e-9 and lb.remeasure.baselines is None
    assert lb.to_dict()["remeasure"]["count"] == 3
    out = io.StringIO()
    print_leaderboard(lb, Console(file=out, width=400))
    assert "the 3 re-measured variants (*) ran 1.43x slower at the end than in the search" in out.getvalue()
    assert "either this machine ran at another speed at the end, or the search times" in out.getvalue()
    assert not any("re-measured variants" in x for x in headline(Leaderboard(
        str(tmp_path), lb.info, lb.rows, [], {"ok": 4}, {}, [], [])))
    # a finalist whose repetitions spread wider than their median: its time and place are said to be unreliable
    assert not any("re-measure disturbed" in x for x in headline(lb))
    noisy = [dataclasses.replace(lb.rows[0], spread=0.6 * lb.rows[0].median), *lb.rows[1:]]
    assert any(x.startswith("re-measure disturbed: the repetitions of #1 spread wider than half their median")
               for x in headline(Leaderboard(str(tmp_path), lb.info, noisy, [], {"ok": 4}, {}, [], [])))
    calm = [dataclasses.replace(lb.rows[0], spread=0.4 * lb.rows[0].median), *lb.rows[1:]]
    assert not any("re-measure disturbed" in x for x in headline(Leaderboard(str(tmp_path), lb.info, calm, [],
                                                                              {"ok": 4}, {}, [], [])))


def test_the_correctness_line_says_whether_the_host_check_ran_at_the_problem_s_shape():
    from forge.problem import Problem

    own = Problem(**PROBLEM).short()
    small = Problem(**{**PROBLEM, "shape": {"M": 2, "N": 64}}).short()

    def line(at: str) -> str:
        row = Row(1, {"tile": 4}, 1e-3, 1e-5, "modeled", 2.0, None, False, None, None, "k", 1,
                  {"correctness": f"checked on the CPU by host emulation at {at} (same config); time modeled"})
        lb = Leaderboard("run", {"problem": PROBLEM, "measured": False, "space": {"cartesian": 4, "valid": 2}},
                         [row], [], {"ok": 1}, {}, [], [])
        return next(x for x in headline(lb) if x.startswith("correctness:"))

    assert line(own).endswith("by host emulation at the problem's own shape")
    assert line(small).endswith(f"at a reduced shape with the same config (the best at {small})")


def test_piped_output_is_wide_unless_columns_names_a_width():
    import subprocess
    import sys

    def widest(env: dict) -> int:
        out = subprocess.run([sys.executable, "-m", "forge.cli", "ops"], capture_output=True, text=True,
                             env={**os.environ, **env}, timeout=60).stdout
        return max(len(x) for x in out.splitlines())

    assert widest({}) > 150 and widest({"COLUMNS": "100"}) <= 100


def test_the_emulated_shape_is_written_as_the_flags_write_a_shape():
    row = Row(1, {"tile": 4}, 1e-3, 0.0, "modeled", None, None, False, None, 0.5, "k", 1,
              {"emulation": "ok", "emulated_shape": {"N": 32, "M": 4}})           # in the op's order below
    lb = Leaderboard("run", {"problem": PROBLEM, "measured": False, "space": {"cartesian": 4, "valid": 2}},
                     [row], [], {"ok": 1}, {}, [], [])
    out = io.StringIO()
    print_leaderboard(lb, Console(file=out, width=200))
    assert "1 ranked variant passed, 0 failed; each at a reduced shape with its config (the best at M=4,N=32)" \
        in out.getvalue()


def test_a_roofline_below_the_modeled_launch_says_the_launch_dominates():
    """Ascend's model charges every kernel a launch head of about 20 µs; a roofline of 168 ns
    without a word would make every small kernel look 1 % efficient for no stated reason."""
    def roof_line(roof: float) -> str:
        row = Row(1, {"tile": 4}, 2.1e-5, 0.0, "modeled", None, None, False, None, roof / 2.1e-5, "k", 1,
                  {"launch_head_s": 2e-5})
        info = {"problem": PROBLEM, "measured": False, "space": {"cartesian": 4, "valid": 2}, "roofline_seconds": roof}
        return next(x for x in headline(Leaderboard("run", info, [row], [], {"ok": 1}, {}, [], []))
                    if x.startswith("roofline bound"))

    assert roof_line(1.68e-7) == ("roofline bound: 168 ns (math and data movement only; each modeled time also "
                                  "holds a 20 µs kernel launch, which dominates at this size)")
    assert roof_line(1e-3).endswith("holds a 20 µs kernel launch)")
    # CUDA: a split-k variant launches twice, so the launches differ by variant: the best's is named
    rows = [Row(i, {"split_k": i}, 1e-5 * i, 0.0, "modeled", None, None, False, None, None, f"k{i}", i,
                {"launch_head_s": 2e-6 * i}) for i in (2, 1)]
    info = {"problem": PROBLEM, "measured": False, "space": {"cartesian": 4, "valid": 2}, "roofline_seconds": 1e-7}
    line = next(x for x in headline(Leaderboard("run", info, rows, [], {"ok": 2}, {}, [], []))
                if x.startswith("roofline bound"))
    assert line.endswith("holds its kernel launches (the best variant's: 4 µs), which dominates at this size)")


def test_an_empty_vs_vendor_column_is_explained_once_no_vendor_baseline_is_recorded():
    from forge.backends import get_backend
    from forge.problem import Problem

    reason = get_backend("ascend910b2").no_baseline_reason(Problem(**PROBLEM), "vendor")
    info = {"problem": PROBLEM, "measured": False, "space": {"cartesian": 4, "valid": 2},
            "no_baseline_reason": {"vendor": reason}}
    unfused = {"name": "unfused", "label": "seq", "median": 2e-3, "status": "ok", "reason": "", "time_kind": "modeled"}
    lines = headline(Leaderboard("run", info, [], [unfused], {}, {}, [], []))
    assert f"baseline vendor: none, so '× vendor' is empty — {reason}" in lines and "aclnn" in reason
    vendor = {**unfused, "name": "vendor"}
    assert not any("'× vendor' is empty" in x for x in headline(Leaderboard("run", info, [], [unfused, vendor],
                                                                             {}, {}, [], [])))


def test_a_run_stopped_before_its_baselines_says_so_rather_than_why_none_exist():
    info = {"problem": PROBLEM, "measured": True, "space": {"cartesian": 4, "valid": 2}, "status": "running",
            "no_baseline_reason": {"vendor": "torch is not installed"}}
    lines = headline(Leaderboard("run", info, [], [], {}, {}, [], []))
    assert any(x.startswith("baselines: none timed yet") for x in lines)
    assert not any("torch is not installed" in x for x in lines)
    done = headline(Leaderboard("run", {**info, "status": "complete"}, [], [], {}, {}, [], []))
    assert "baseline vendor: none, so '× vendor' is empty — torch is not installed" in done


def test_a_baseline_of_another_kind_than_the_rows_is_said_to_empty_its_column():
    """On an NPU the variants are measured while the unfused sequence is modeled: the column is
    empty because forge does not set one kind against the other, and the report says so."""
    from forge.backends import get_backend
    from forge.problem import Problem

    row = Row(1, {"tile": 4}, 1e-3, 1e-5, "measured", None, None, False, None, None, "k", 1)
    unfused = {"name": "unfused", "label": "seq", "median": 2e-3, "status": "ok", "reason": "", "time_kind": "modeled"}
    info = {"problem": PROBLEM, "measured": True, "space": {"cartesian": 4, "valid": 2}}
    lines = headline(Leaderboard("run", info, [row], [unfused], {"ok": 1}, {}, [], []))
    assert ("'× unfused' is empty: the unfused baseline is modeled and the variants' times are measured; forge does "
            "not set one kind against the other") in lines
    failed = {"name": "vendor", "label": "torch", "median": None, "status": "timeout", "reason": "no result within 4 s",
              "time_kind": "measured"}
    lines = headline(Leaderboard("run", info, [row], [unfused, failed], {"ok": 1}, {}, [], []))
    assert "baseline vendor: timeout: no result within 4 s — torch" in lines     # a failure is not labelled measured
    model = get_backend("cpu", measure="model")
    assert model.no_baseline_reason(Problem(**PROBLEM), "unfused") == \
        "nothing is run with --measure model, so no baseline is timed"


def test_rows_left_out_by_top_are_counted_and_the_star_is_explained_in_markdown_too():
    from forge.report.render import to_markdown

    rows = [Row(i, {"tile": i}, i * 1e-3, 0.0, "measured", None, None, i == 1, None, None, f"k{i}", i) for i in (1, 2, 3)]
    lb = Leaderboard("run", {"problem": PROBLEM, "measured": True, "space": {"cartesian": 4, "valid": 3}},
                     rows, [], {"ok": 3}, {}, [], [])
    out = io.StringIO()
    print_leaderboard(lb, Console(file=out, width=200), top=1)
    assert "2 more ranked variants not shown (forge report run --top 3 shows all)" in out.getvalue()
    out = io.StringIO()
    print_leaderboard(lb, Console(file=out, width=200), top=2)
    assert "1 more ranked variant not shown" in out.getvalue()
    md = to_markdown(lb)                                   # a file holds every row
    assert "`tile=3`" in md and "not shown" not in md and "\\* re-measured at the end with more repetitions" in md


def test_report_files_carry_what_the_terminal_says_under_the_table():
    """md and html: the emulation column and line, the pipe utilisation, and a run with no
    correct variant said in words (no empty table)."""
    from forge.report.render import to_markdown
    from forge.report.run_html import leaderboard_html

    row = Row(1, {"tile": 4}, 1e-3, 0.0, "modeled", 2.0, None, False, None, 0.5, "k", 1,
              {"emulation": "ok", "emulated_shape": {"M": 4, "N": 32}, "pipe_busy": {"MTE2": 0.44}})
    info = {"problem": PROBLEM, "measured": False, "space": {"cartesian": 4, "valid": 2}}
    lb = Leaderboard("run", info, [row], [], {"ok": 1}, {}, [], [])
    for text in (to_markdown(lb), leaderboard_html(lb)):
        assert "emulation" in text and "(the best at M=4,N=32)" in text
        assert "per-pipe utilisation (modeled: the share of the kernel time each pipe is busy): MTE2 44%" in text
    empty = Leaderboard("run", info, [], [], {"timeout": 1}, {},
                        [{"status": "timeout", "config": {"tile": 8}, "reason": "no result within 1 s"}], [])
    for text in (to_markdown(empty), leaderboard_html(empty)):
        assert "no correct variant: every evaluated variant failed" in text and "| rank |" not in text
        assert 'id="leaderboard"' not in text


def test_modeled_times_on_a_partial_target_say_they_rest_on_estimates():
    info = {"problem": PROBLEM, "measured": False, "space": {"cartesian": 4, "valid": 2}}
    partial = headline(Leaderboard("run", info | {"target": {"name": "ascend950pr"}}, [], [], {}, {}, [], []))
    assert any(x.startswith("ascend950pr is a partial target: some of its numbers are estimates") for x in partial)
    full = headline(Leaderboard("run", info | {"target": {"name": "ascend910b2"}}, [], [], {}, {}, [], []))
    assert not any("partial target" in x for x in full)


def test_a_half_precision_problem_on_the_cpu_says_its_kernel_computes_in_float32():
    info = {"problem": {**PROBLEM, "dtype": "float16"}, "target": {"name": "cpu", "kind": "cpu"}, "measured": True,
            "space": {"cartesian": 4, "valid": 2}}
    lines = headline(Leaderboard("run", info, [], [], {}, {}, [], []))
    assert "float16 on the CPU: the inputs hold float16 values, and the kernel reads, computes and writes them " \
           "in float32 (its time is a float32 kernel's)" in lines
    plain = {**info, "problem": PROBLEM}
    assert not any("on the CPU:" in x for x in headline(Leaderboard("run", plain, [], [], {}, {}, [], [])))
