"""forge bench: runner (resume, skip, errors) and leaderboard aggregation on synthetic run folders.

forge.tuner is replaced by a fake that writes Records with known times, so every score in the
leaderboard can be checked by hand.
"""
import json
import os
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import forge.tuner as real_tuner            # before any test puts a fake tuner in sys.modules

from forge.bench.board import build_board
from forge.bench.cases import BenchCase, Suite, Unsupported
from forge.bench.render import to_markdown, total_line, write_reports
from forge.bench.runner import CASE_MARKER, run_bench
from forge.errors import ForgeInputError, MachineFault
from forge.ops import get_op
from forge.report import scores
from forge.results import Record, Store
from forge.results.lock import FolderInUse, folder_lock
from forge.targets import get_target
from forge.testing import run_forge

US = 1e-6


@dataclass
class FakeSettings:
    op: str
    shape: dict
    dtype: str = "float32"
    attrs: dict = field(default_factory=dict)
    target: str = "cpu"
    trials: int = 10
    measure: str = "auto"
    out: Any = None
    seed: int = 0
    sampler: str = "forge"
    executor: str = "local"
    devices: int = 1


class FakeTuner:
    """Search times per case: {case shape M: ([medians...] or status, baseline unfused, vendor)}."""

    def __init__(self, plan):
        self.plan = plan
        self.calls = []

    def __call__(self, s: FakeSettings) -> Path:
        self.calls.append(s)
        out = Path(s.out)
        plan = self.plan[s.shape["M"]]
        if plan == "crash":
            raise RuntimeError("worker lost")
        if plan == "refuse":
            raise ForgeInputError("shape", "not supported on this target")
        if plan == "in use":
            raise FolderInUse("--resume", f"{out} is being written by another forge process")
        if plan == "disk full":
            raise MachineFault("build", "No space left on device (ld: final link failed)")
        if plan == "starting":          # Ctrl-C after run.json, before any record (its baselines)
            out.mkdir(parents=True, exist_ok=True)
            (out / "run.json").write_text(json.dumps({"status": "running"}))
            raise KeyboardInterrupt
        store = Store.for_run(out)
        base = dict(run_id="r", variant_key="v", op=s.op, shape=s.shape, dtype=s.dtype, target=s.target, attrs=s.attrs)
        if plan == "interrupt":         # Ctrl-C after one variant was measured
            store.add(Record(**base, config={"tile": 0}, status="ok", timings=[9 * US] * 3, trial=0))
            store.close()
            raise KeyboardInterrupt
        times, unfused, vendor, kind, *more = plan
        errors = more[0] if more else {}        # what each checked variant's check recorded
        for n, t in enumerate(times):
            if isinstance(t, str):
                store.add(Record(**base, config={"tile": n}, status=t, reason=f"{t} on trial {n}", trial=n))
            elif kind == "unchecked":   # modeled, and nothing ran to check it (CPU --measure model)
                store.add(Record(**base, config={"tile": n}, status="ok", timings=[t * US], trial=n, time_kind="modeled",
                                 extra={"correctness": "not checked: --measure model (compiled, not run)"}))
            else:
                store.add(Record(**base, config={"tile": n}, status="ok", timings=[t * US] * 3, trial=n, time_kind=kind,
                                 errors=errors))
        for name, t in (("unfused", unfused), ("vendor", vendor)):
            if t is not None:
                store.add(Record(**base, config={}, status="ok", phase="baseline", timings=[t * US], time_kind=kind,
                                 extra={"baseline": name, "label": f"{name} label"}))
        store.close()
        (out / "run.json").write_text(json.dumps({"status": "complete"}))
        return out


@pytest.fixture
def fake_tuner(monkeypatch):
    def install(plan):
        tuner = FakeTuner(plan)
        mod = types.ModuleType("forge.tuner")
        mod.TuneSettings = FakeSettings
        mod.tune = tuner
        mod.resume = lambda run_dir: (_ for _ in ()).throw(AssertionError("nothing to resume here"))
        monkeypatch.setitem(sys.modules, "forge.tuner", mod)
        return tuner
    return install


def softmax_case(m: int, name: str = "softmax_h64", source: str = "cannbench") -> BenchCase:
    return BenchCase(source, name, "tasks/x", str(m), "softmax", {"M": m, "N": 64}, "float32")


def make_suite():
    cases = [softmax_case(m) for m in (8, 16, 32, 64)]
    return Suite("t", "test suite", cases, [Unsupported("cannbench", "softmax_h64", "tasks/x", "99", "axis 0")])


PLAN = {8: ([30, 20, "incorrect", 25], 40, 50, "measured"),    # best 20, baseline vendor 50
        16: (["incorrect", "compile_error"], 40, None, "measured"),
        32: "crash",
        64: ([5, 4], None, None, "modeled")}                     # no baseline: HAP fallback


def test_bench_board_scores_by_hand(tmp_path, fake_tuner):
    tuner = fake_tuner(PLAN)
    counts = run_bench(make_suite(), "cpu", tmp_path, budget_per_case=4, options={"measure": "auto", "bogus": 1})
    assert counts == {"tuned": 3, "skipped": 0, "failed": 1}
    assert tuner.calls[0].trials == 4 and tuner.calls[0].out == tmp_path / "cases" / "cannbench-softmax_h64-8"
    board = build_board(tmp_path)
    rows = {r["case_id"]: r for r in board["cases"]}
    target = get_target("cpu")
    op = get_op("softmax")
    r8 = rows["8"]
    p = op.problem({"M": 8, "N": 64}, "float32")
    t_sol = target.roofline_seconds(op.flops(p), op.min_bytes(p), "float32")
    assert r8["status"] == "PASSED" and r8["time"] == pytest.approx(20 * US) and r8["time_kind"] == "measured"
    assert r8["baseline_kind"] == "vendor" and r8["t_b"] == pytest.approx(50 * US)
    assert r8["speedup"] == pytest.approx(2.5)
    assert r8["t_sol"] == pytest.approx(t_sol)
    # what the check applied: this run recorded no benchmark criterion, so forge's bound alone
    assert r8["tolerance_applied"] == f"forge: {op.tolerance_text(p)}" and not r8["benchmark_criterion_applied"]
    assert "each case's tolerance_applied names what its run checked" in to_markdown(board)
    assert r8["sol_score"] == pytest.approx(1 / (1 + (20 * US - t_sol) / (50 * US - t_sol)))
    assert r8["hap"] == pytest.approx(r8["sol_score"])                   # same anchors, same form
    assert r8["convergence"] == [(1, pytest.approx(30 * US)), (2, pytest.approx(20 * US)),
                                 (3, pytest.approx(20 * US)), (4, pytest.approx(20 * US))]
    assert rows["16"]["status"] == "INCORRECT_NUMERICAL" and rows["16"]["compiled"]
    assert rows["32"]["status"] == "RUNTIME_ERROR" and "worker lost" in rows["32"]["reason"]
    r64 = rows["64"]
    assert r64["time_kind"] == "modeled" and r64["t_b"] is None and r64["sol_score"] is None
    assert r64["hap"] == pytest.approx(scores.hap(4 * US, r64["t_sol"], None))   # cann fallback baseline
    assert rows["99"]["status"] == "UNSUPPORTED"

    (grp,) = board["operators"]
    assert grp["cases"] == 5 and grp["passed"] == 2 and grp["pass_rate"] == pytest.approx(0.4)
    assert grp["geomean_speedup"] == pytest.approx(2.5)                   # only case 8 has a baseline
    # case 64 passed without a baseline: no speedup, no SOL score; left out of both, not counted failed
    assert grp["fast_p"]["1.0"] == pytest.approx(1 / 4)
    expected = scores.cann_operator_score(True, [(True, r8["hap"]), (False, None), (False, None), (True, r64["hap"]),
                                                 (False, None)])
    assert grp["cann_score"] == pytest.approx(expected)
    assert grp["mean_sol_score"] == pytest.approx(r8["sol_score"] / 4) and grp["sol_unscored"] == 1
    assert board["total"]["measured"] == 1 and board["total"]["modeled"] == 1
    assert "1 passed case without a baseline left out" in total_line(board)
    from forge.report.html import render_html

    assert '<p class="note" id="unscored">1 passed case without a baseline left out' in render_html(board)


def test_a_case_whose_cann_bench_verdict_rests_on_forges_golden_model_says_so(tmp_path, fake_tuner):
    """A passed case whose best variant passes cann-bench's range test only because forge's model of
    its same-dtype CPU golden is off as often carries that in its row and in the table's best-config
    column; one within the count that passes whatever that golden does not."""
    base = {"mere": 1e-3, "mare": 0.2, "normal_checked": 500, "small_checked": 12, "small_errors_cpu": 4,
            "cancel_checked": 30, "cancel_errors": 0, "cancel_errors_cpu": 0, "normal_errors": 0,
            "normal_errors_cpu": 0, "golden_same_dtype": "modeled"}
    leaning = {"criterion": {**base, "small_errors": 5}}
    fine = {"criterion": {**base, "small_errors": 2}}
    fake_tuner({8: ([20], 40, 50, "measured", leaning), 16: ([20], 40, 50, "measured", fine)})
    suite = Suite("t", "test suite", [softmax_case(8), softmax_case(16)], [])
    run_bench(suite, "cpu", tmp_path, budget_per_case=1)
    rows = {r["case_id"]: r for r in build_board(tmp_path)["cases"]}
    assert rows["16"]["status"] == "PASSED" and rows["16"]["criterion_note"] is None
    note = rows["8"]["criterion_note"]
    assert rows["8"]["status"] == "PASSED" and note == (
        "cann-bench's range test passed on forge's model of its float32 CPU golden (values off, variant vs "
        "golden: small 5 vs 4)")
    assert note in to_markdown(build_board(tmp_path))
    from forge.report.html import render_html
    assert note.replace("'", "&#39;") in render_html(build_board(tmp_path))


def test_a_bench_folder_copied_elsewhere_reads_as_it_did(tmp_path, fake_tuner):
    """A bench run on a GPU node and copied back to a laptop: its cases are found in the copy (their
    markers named the node's folder, so every case read as never run)."""
    import shutil

    fake_tuner(PLAN)
    run_bench(make_suite(), "cpu", tmp_path / "node")
    before = {r["case_id"]: (r["status"], r["time"]) for r in build_board(tmp_path / "node")["cases"]}
    shutil.copytree(tmp_path / "node", tmp_path / "laptop")
    shutil.rmtree(tmp_path / "node")
    after = {r["case_id"]: (r["status"], r["time"]) for r in build_board(tmp_path / "laptop")["cases"]}
    assert after == before and after["8"][0] == "PASSED"


def test_bench_resumes_and_skips_finished(tmp_path, fake_tuner):
    tuner = fake_tuner(PLAN)
    run_bench(make_suite(), "cpu", tmp_path)
    assert len(tuner.calls) == 4
    # The crashed case is not finished: the board says so, and says when a process is still at it.
    state = build_board(tmp_path)["state"]
    assert (state["finished"], state["cases"], state["holder"]) == (3, 4, None)
    assert state["line"].startswith("BENCH NOT FINISHED: 3 of 4 cases finished")
    assert f"**{state['line']}**" in to_markdown(build_board(tmp_path))
    with folder_lock(tmp_path, "--out"):
        assert build_board(tmp_path)["state"]["line"] == f"BENCH IN PROGRESS (pid {os.getpid()}): 3 of 4 cases " \
                                                          "finished so far"
    tuner2 = fake_tuner({**PLAN, 32: ([7], 9, None, "measured")})
    counts = run_bench(make_suite(), "cpu", tmp_path)
    # Finished (and refused) cases are skipped; only the crashed one is tuned again.
    assert counts == {"tuned": 1, "skipped": 3, "failed": 0}
    assert [c.shape["M"] for c in tuner2.calls] == [32]
    marker = json.loads((tmp_path / "cases" / "cannbench-softmax_h64-32" / CASE_MARKER).read_text())
    assert marker["done"] is True
    assert {r["case_id"]: r["status"] for r in build_board(tmp_path)["cases"]}["32"] == "PASSED"
    assert build_board(tmp_path)["state"]["line"] == ""


def test_a_case_stopped_part_way_reads_as_unfinished_not_as_its_result(tmp_path, fake_tuner):
    fake_tuner({8: ([30, 20], 50, None, "measured"), 16: "interrupt"})
    with pytest.raises(KeyboardInterrupt):
        run_bench(make_suite(), "cpu", tmp_path)
    board = build_board(tmp_path)
    shown = {r["case_id"]: r["status_text"] for r in board["cases"]}
    assert shown == {"8": "PASSED", "16": "PASSED (unfinished)", "32": "NOT_RUN", "64": "NOT_RUN",
                     "99": "UNSUPPORTED"}
    assert {r["case_id"]: r["status"] for r in board["cases"]}["16"] == "PASSED"   # SOL's vocabulary kept
    assert to_markdown(board).count("| PASSED (unfinished) |") == 1
    # the totals are the suite's so far, and say that the cases not reached count as failed
    assert total_line(board).startswith("so far, with 2 cases not reached counted as failed: 2/5 cases passed")


def test_a_bench_folder_in_use_is_refused_and_a_case_in_use_is_not_recorded(tmp_path, fake_tuner):
    """A second `forge bench` on a folder another one is filling stops before writing anything; a
    case folder another forge holds (a `forge tune --resume` on it) stops the bench without
    recording the case as refused, so the next run tunes it."""
    tuner = fake_tuner(PLAN)
    with folder_lock(tmp_path, "--out"):
        with pytest.raises(FolderInUse, match="--out: .* another forge process"):
            run_bench(make_suite(), "cpu", tmp_path)
    assert not (tmp_path / "bench.json").exists() and not tuner.calls
    fake_tuner({**PLAN, 16: "in use"})
    with pytest.raises(FolderInUse):
        run_bench(make_suite(), "cpu", tmp_path)
    assert not (tmp_path / "cases" / "cannbench-softmax_h64-16" / CASE_MARKER).exists()
    tuner = fake_tuner(PLAN)
    assert run_bench(make_suite(), "cpu", tmp_path) == {"tuned": 2, "skipped": 1, "failed": 1}
    assert [c.shape["M"] for c in tuner.calls] == [16, 32, 64]


def test_a_stopped_bench_quotes_its_own_command_to_continue(tmp_path, fake_tuner):
    fake_tuner(PLAN)
    from forge.commands.runs import collect

    command = "forge bench --suite cannbench --target cpu --ops softmax --budget-per-case 4"
    run_bench(make_suite(), "cpu", tmp_path / "b", command=command)
    assert build_board(tmp_path / "b")["state"]["line"].endswith(f"; continue with: {command}")
    (row,) = collect(tmp_path)                                          # and `forge runs` lists it
    assert (row["what"], row["status"], row["progress"]) == ("bench t (5 cases)", "interrupted",
                                                             "3/4 cases finished, 2 passed; 1 unsupported")


def test_a_machine_fault_stops_the_bench_without_refusing_the_case(tmp_path, fake_tuner):
    """A full disk is no refusal of the case: recorded as one, the case would stay UNSUPPORTED for
    good; the bench stops, and the rerun tunes it."""
    fake_tuner({8: "disk full"})
    s = Suite("t", cases=[softmax_case(8)])
    with pytest.raises(MachineFault):
        run_bench(s, "cpu", tmp_path)
    fake_tuner({8: ([5], 9, None, "measured")})
    assert run_bench(s, "cpu", tmp_path) == {"tuned": 1, "skipped": 0, "failed": 0}


def test_refusal_is_final_and_target_mismatch_is_an_error(tmp_path, fake_tuner):
    fake_tuner({8: "refuse"})
    s = Suite("t", cases=[softmax_case(8)])
    assert run_bench(s, "cpu", tmp_path)["failed"] == 1
    row = build_board(tmp_path)["cases"][0]     # refused before anything ran: forge cannot tune it here
    assert (row["status"], row["reason"]) == ("UNSUPPORTED", "shape: not supported on this target")
    assert run_bench(s, "cpu", tmp_path)["skipped"] == 1
    fake_tuner({8: ([5], 9, None, "measured")})                 # e.g. a newer forge accepts the case
    assert run_bench(s, "cpu", tmp_path) == {"tuned": 0, "skipped": 1, "failed": 0}
    assert run_bench(s, "cpu", tmp_path, retry_refused=True) == {"tuned": 1, "skipped": 0, "failed": 0}
    assert build_board(tmp_path)["cases"][0]["status"] == "PASSED"
    assert run_bench(s, "cpu", tmp_path, retry_refused=True)["skipped"] == 1   # a finished case stays finished
    # a retry interrupted part way leaves the case unfinished, not done by its old refusal
    fake_tuner({16: "refuse"})
    s16 = Suite("t", cases=[softmax_case(16)])
    run_bench(s16, "cpu", tmp_path / "r")
    fake_tuner({16: "interrupt"})
    with pytest.raises(KeyboardInterrupt):
        run_bench(s16, "cpu", tmp_path / "r", retry_refused=True)
    row = build_board(tmp_path / "r")["cases"][0]
    assert not row["finished"] and row["status_text"] == "PASSED (unfinished)"
    meta = json.loads((tmp_path / "bench.json").read_text())
    meta["target"] = "other"
    (tmp_path / "bench.json").write_text(json.dumps(meta))
    with pytest.raises(ForgeInputError, match="not 'cpu'"):
        run_bench(s, "cpu", tmp_path)
    with pytest.raises(ForgeInputError, match="unknown target"):
        run_bench(s, "nope", tmp_path / "x")


def test_a_rerun_with_an_edited_or_ambiguous_suite_is_refused(tmp_path, fake_tuner):
    """A finished case is skipped on rerun, so a case id whose problem changed in the suite file
    would be reported under the new shape with the old one's results; two cases with one id would
    share one folder."""
    from forge.bench.suites import load_suite

    fake_tuner({8: ([5], 9, None, "measured"), 16: ([5], 9, None, "measured")})
    run_bench(Suite("t", cases=[softmax_case(8)]), "cpu", tmp_path)
    edited = softmax_case(16)
    edited.case_id = "8"
    with pytest.raises(ForgeInputError, match=r"the problem of case cannbench-softmax_h64-8 \(the suite file changed"):
        run_bench(Suite("t", cases=[edited]), "cpu", tmp_path)
    suite = tmp_path / "dup.yaml"
    suite.write_text("name: dup\nsource: cannbench\ntasks:\n  - operator: softmax\n    cases:\n"
                     "      - {case_id: 1, input_shape: [[64, 64]], dtype: float16}\n"
                     "      - {case_id: 1, input_shape: [[128, 64]], dtype: float16}\n")
    with pytest.raises(ForgeInputError, match=r"dup.yaml: softmax case 1: appears twice"):
        load_suite(suite)


def test_a_bench_and_a_run_never_share_a_folder(tmp_path, fake_tuner):
    """Each would hide the other: forge report, runs and compare read a folder as one kind."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text("{}")
    fake_tuner({8: ([5], 9, None, "measured")})
    with pytest.raises(ForgeInputError, match="holds a forge run"):
        run_bench(Suite("t", cases=[softmax_case(8)]), "cpu", tmp_path / "run")
    run_bench(Suite("t", cases=[softmax_case(8)]), "cpu", tmp_path / "bench")
    with pytest.raises(ForgeInputError, match="holds a forge bench"):
        real_tuner.tune(real_tuner.TuneSettings(op="softmax", shape={"M": 8, "N": 64}, target="cpu",
                                                out=tmp_path / "bench"))


def test_a_case_stopped_before_its_first_variant_is_not_run_and_one_finished_by_resume_is_finished(tmp_path,
                                                                                                   fake_tuner):
    """Only baselines in the store: not a compile error. A case whose run.json says complete (resumed
    with forge tune --resume, or stopped before the bench wrote its marker) is finished for the
    board as for the runner."""
    fake_tuner({8: ([5], 9, None, "measured"), 16: ([], 9, None, "measured")})    # 16: its baseline only
    run_bench(Suite("t", cases=[softmax_case(8), softmax_case(16)]), "cpu", tmp_path)
    for m in (8, 16):
        (tmp_path / "cases" / f"cannbench-softmax_h64-{m}" / CASE_MARKER).unlink()
    (tmp_path / "cases" / "cannbench-softmax_h64-16" / "run.json").write_text(json.dumps({"status": "running"}))
    board = build_board(tmp_path)
    rows = {r["case_id"]: r for r in board["cases"]}
    assert rows["8"]["finished"] and rows["8"]["status_text"] == "PASSED"
    assert (rows["16"]["status"], rows["16"]["finished"]) == ("NOT_RUN", False)
    assert "before its first variant" in rows["16"]["reason"]
    assert board["state"]["finished"] == 1


def test_bad_search_option_is_refused_before_any_case_runs(tmp_path, fake_tuner):
    """A value every case would reject the same way is one input error, not N failed cases."""
    fake_tuner(PLAN)
    with pytest.raises(ForgeInputError) as exc:
        run_bench(make_suite(), "cpu", tmp_path / "b", options={"measure": "nope", "top_k": None})
    assert exc.value.field == "--measure" and "'auto'" in str(exc.value)
    assert not (tmp_path / "b").exists()
    with pytest.raises(ForgeInputError) as exc:
        run_bench(make_suite(), "cpu", tmp_path / "b", options={"sampler": "annealing"})
    assert exc.value.field == "--sampler" and "random" in str(exc.value)
    assert not (tmp_path / "b").exists()
    for options, says in (({"devices": 2}, "--devices: .*need --executor ray"),
                          ({"devices": 2, "executor": "ray"}, "--devices: .*host CPU"),
                          ({"ray_address": "ray://head:10001"}, "--ray-address: .*only --executor ray")):
        with pytest.raises(ForgeInputError, match=says):
            run_bench(make_suite(), "cpu", tmp_path / "b", options=options)
        assert not (tmp_path / "b").exists()


def test_sampler_and_executor_reach_every_case(tmp_path, fake_tuner):
    tuner = fake_tuner(PLAN)
    run_bench(make_suite(), "h100", tmp_path, budget_per_case=8,
              options={"sampler": "random", "executor": "ray", "devices": 2})
    assert [(c.sampler, c.executor, c.devices) for c in tuner.calls] == [("random", "ray", 2)] * 4
    with pytest.raises(ForgeInputError) as exc:
        run_bench(make_suite(), "cpu", tmp_path / "b", options={"executor": "slurm"})
    assert exc.value.field == "--executor" and "'ray'" in str(exc.value)


def test_reports_written_in_all_formats(tmp_path, fake_tuner):
    fake_tuner(PLAN)
    run_bench(make_suite(), "cpu", tmp_path)
    paths = write_reports(tmp_path, terminal=False)
    data = json.loads(paths["json"].read_text())
    assert data["total"]["cases"] == 5 and data["cases"][0]["t_sol"] > 0
    md = paths["md"].read_text()
    assert "| softmax_h64 | 8 |" in md and "(measured)" in md and "(modeled)" in md and "UNSUPPORTED" in md
    html = paths["html"].read_text()
    assert html.count("data:image/png;base64,") == 3 and "<table id=\"cases\">" in html
    assert to_markdown(build_board(tmp_path)).startswith("# forge bench")
    assert "\n\ntest suite. T_SOL = T_HW = " in md
    board = build_board(tmp_path) | {"description": ""}          # a suite file without one: no ". T_SOL"
    assert "\n\nT_SOL = T_HW = " in to_markdown(board) and ". T_SOL" not in to_markdown(board)


def test_interrupted_run_is_resumed_and_complete_run_skipped(tmp_path, fake_tuner):
    tuner = fake_tuner(PLAN)
    suite = Suite("t", cases=[softmax_case(8), softmax_case(64)])
    d8, d64 = (tmp_path / "cases" / f"cannbench-softmax_h64-{m}" for m in (8, 64))
    d8.mkdir(parents=True)
    d64.mkdir(parents=True)
    (d8 / "run.json").write_text(json.dumps({"status": "running"}))     # killed mid-run, no marker
    (d64 / "run.json").write_text(json.dumps({"status": "complete"}))   # finished, marker lost
    resumed = []
    sys.modules["forge.tuner"].resume = lambda run_dir, **kw: resumed.append((Path(run_dir), kw)) or Path(run_dir)
    counts = run_bench(suite, "cpu", tmp_path)
    # resumed where this invocation runs (the local executor: no flag given), not where it began
    assert resumed == [(d8, {"replace_placement": True, "executor": "local", "ray_address": None, "devices": 1})]
    assert tuner.calls == []
    assert counts == {"tuned": 1, "skipped": 1, "failed": 0}


def test_a_placement_error_stops_the_bench_and_refuses_no_case(tmp_path, fake_tuner):
    """A Ray cluster gone, a device missing: not the case's doing, so never a final refusal that a
    rerun would skip as finished."""
    fake_tuner({8: ([5], 9, None, "measured")})
    for field in ("--ray-address", "RAY_ADDRESS", "--executor"):
        sys.modules["forge.tuner"].tune = lambda s: (_ for _ in ()).throw(
            ForgeInputError(field, "no Ray cluster answers at 127.0.0.1:1"))
        with pytest.raises(ForgeInputError, match=field):
            run_bench(Suite("t", cases=[softmax_case(8)]), "cpu", tmp_path)
        assert not (tmp_path / "cases" / "cannbench-softmax_h64-8" / CASE_MARKER).exists()
    with pytest.raises(ForgeInputError, match="no Ray cluster answers at 127.0.0.1:1"):      # checked up front
        run_bench(Suite("t", cases=[softmax_case(8)]), "cpu", tmp_path / "x",
                  options={"executor": "ray", "ray_address": "127.0.0.1:1"})
    assert not (tmp_path / "x").exists()


def test_progress_estimates_the_time_left_from_cases_run_so_far(tmp_path, fake_tuner):
    from forge.bench.runner import time_left
    assert time_left({}, ["softmax"] * 5) == ""
    assert time_left({"softmax": [60.0, 180.0]}, ["softmax"] * 3) == " (about 6 min left)"    # mean 2 min x 3 cases
    assert time_left({"softmax": [10.0]}, ["softmax"] * 2) == " (under a minute left)"
    # each op at its own cases' mean, an op not run yet at the mean of all
    assert time_left({"attention": [240.0], "rmsnorm": [20.0, 40.0]},
                     ["attention", "rmsnorm", "rmsnorm", "swiglu"]) == " (about 7 min left)"   # 240+30+30+100 s
    fake_tuner({m: ([5], 10, None, "measured") for m in (8, 16, 32, 64)})
    said: list[str] = []
    run_bench(make_suite(), "cpu", tmp_path, budget_per_case=1, progress=said.append)
    tuning = [m for m in said if ": tuning " in m]
    assert len(tuning) == 4 and "left" not in tuning[0] and all("left)" in m for m in tuning[1:])
    # a refused case takes no time: it says nothing of what a case costs, so no estimate from it
    fake_tuner({8: "refuse", 16: ([5], 10, None, "measured"), 32: ([5], 10, None, "measured"),
                64: ([5], 10, None, "measured")})
    said.clear()
    run_bench(make_suite(), "cpu", tmp_path / "refused", budget_per_case=1, progress=said.append)
    tuning = [m for m in said if ": tuning " in m]
    assert "left" not in tuning[1] and "left)" in tuning[2], tuning


def test_two_benches_compared_case_by_case(tmp_path, fake_tuner):
    """B/A per case over the cases both passed; a tie when the times are equal (no spread here);
    a case passed by one bench only is counted as such, not in the geomean."""
    from forge.report.compare import compare_benches

    fake_tuner(PLAN)
    run_bench(make_suite(), "cpu", tmp_path / "a")
    fake_tuner({8: ([30, 25], 40, 50, "measured"),                  # A's 20 is faster: B/A = 1.25
                16: ([16], 40, None, "measured"),                   # only B has a correct kernel
                32: "crash", 64: ([6, 4], None, None, "modeled")})  # same best time: a tie
    run_bench(make_suite(), "cpu", tmp_path / "b", options={"sampler": "random", "seed": 3, "bank": False})
    cmp = compare_benches(tmp_path / "a", tmp_path / "b")
    assert (cmp["b"]["sampler"], cmp["b"]["seed"], cmp["b"]["bank"]) == ("random", 3, False)   # what each was made with
    assert cmp["a"]["sampler"] == "forge" and cmp["a"]["unfinished"]                 # A's case 32 crashed
    by_case = {r["case_id"]: r for r in cmp["cases"]}
    assert by_case["8"]["ratio"] == pytest.approx(1.25) and by_case["8"]["verdict"] == "A"
    assert by_case["16"]["verdict"] == "B only" and by_case["16"]["ratio"] is None
    assert by_case["32"]["verdict"] == "neither" and by_case["64"]["verdict"] == "tie"
    assert "99" not in by_case                                      # unsupported in both: not a case to compare
    (op,) = cmp["operators"]
    assert op["compared"] == 2 and op["geomean_ratio"] == pytest.approx(1.25 ** 0.5)
    # the speedups are over the cases both passed: B's case 16 (40/16) is not in B's figure
    assert (op["geomean_speedup_a"], op["geomean_speedup_b"]) == (pytest.approx(50 / 20), pytest.approx(50 / 25))
    assert cmp["settings_differ"] == [] and cmp["a"]["suite"] == "t"
    assert (op["a_faster"], op["b_faster"], op["ties"], op["a_only"], op["b_only"], op["neither"]) == (1, 0, 1, 0, 1, 1)

    from typer.testing import CliRunner

    from forge.cli import app

    res = CliRunner().invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--all",
                                   "--json", str(tmp_path / "new" / "c.json")])
    assert res.exit_code == 0, res.output
    assert "B only" in res.output and "1.250" in res.output
    assert "A is not finished: 3 of 4 cases finished" in " ".join(res.output.split())     # said once
    assert json.loads((tmp_path / "new" / "c.json").read_text())["total"]["compared"] == 2
    res = CliRunner().invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "a")])
    assert isinstance(res.exception, ForgeInputError) and "is A itself" in str(res.exception)
    proc = run_forge("compare", str(tmp_path / "a"), str(tmp_path))
    assert proc.returncode == 2 and "is not a forge bench folder" in proc.stderr
    # case 64 measured in C, modeled in A: not compared, in the case row and in the counts
    fake_tuner({8: ([20], 40, 50, "measured"), 16: ([16], 40, None, "measured"), 32: ([9], 40, None, "measured"),
                64: ([4], None, None, "measured")})
    run_bench(make_suite(), "cpu", tmp_path / "c")
    cmp = compare_benches(tmp_path / "a", tmp_path / "c")
    r64 = next(r for r in cmp["cases"] if r["case_id"] == "64")
    assert (r64["verdict"], r64["ratio"]) == ("kinds differ", None) and cmp["total"]["kinds_differ"] == 1
    res = CliRunner().invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "c"), "--all"])
    assert res.exit_code == 0 and "1 case(s) passed by both are not compared" in res.output, res.output


def test_compare_leaves_out_a_case_id_that_names_another_problem(tmp_path, fake_tuner):
    """Benches are joined on the case id; where that id is another problem in B (another suite, an
    edited file) the two times are not of one problem, so the case is listed apart, not compared.
    With no case of one problem in common there is nothing to compare: exit 2."""
    from forge.report.compare import compare_benches

    fake_tuner({m: ([10], 20, None, "measured") for m in (8, 16, 32, 64, 128)})
    run_bench(make_suite(), "cpu", tmp_path / "a")
    other = [softmax_case(8), BenchCase("cannbench", "softmax_h64", "tasks/x", "16", "softmax", {"M": 128, "N": 64},
                                        "float32")]
    run_bench(Suite("u", "edited", other), "cpu", tmp_path / "b", options={"reps": 7})
    cmp = compare_benches(tmp_path / "a", tmp_path / "b")
    assert [r["case_id"] for r in cmp["cases"]] == ["8"]
    assert cmp["mismatched"] == [{"key": "cannbench-softmax_h64-16", "a": "softmax[M=16,N=64] float32",
                                  "b": "softmax[M=128,N=64] float32"}]
    assert cmp["settings_differ"] == ["A --reps 10, B --reps 7"]     # what else a difference may come from
    run_bench(Suite("v", "none shared", [other[1]]), "cpu", tmp_path / "c")
    proc = run_forge("compare", str(tmp_path / "a"), str(tmp_path / "c"))
    assert proc.returncode == 2 and "has no case of the same problem" in proc.stderr and "suite v" in proc.stderr


def _run_folder(path: Path, times: list[float], shape: dict, sampler: str, kind: str = "measured") -> Path:
    """A finished run of softmax on the CPU whose search measured (or modeled) `times` (µs), in trial order."""
    store = Store.for_run(path)
    for n, t in enumerate(times):
        store.add(Record(run_id="r", variant_key=f"v{n}", op="softmax", shape=shape, dtype="float32", target="cpu",
                         config={"tile": n}, status="ok", timings=[t * US] * 3, trial=n, time_kind=kind))
    store.close()
    problem = {"op": "softmax", "shape": shape, "dtype": "float32", "attrs": {}}
    (path / "run.json").write_text(json.dumps({"status": "complete", "problem": problem, "target": {"name": "cpu"},
                                               "settings": {"sampler": sampler}}))
    return path


def test_two_runs_of_one_problem_compared(tmp_path):
    from forge.report.compare import compare_runs

    shape = {"M": 8, "N": 64}
    a = _run_folder(tmp_path / "a", [30, 12, 20], shape, "forge")
    b = _run_folder(tmp_path / "b", [40, 25, 15, 18], shape, "random")
    cmp = compare_runs(a, b)
    assert cmp["ratio"] == pytest.approx(15 / 12) and cmp["verdict"] == "A"
    assert (cmp["a"]["found_at"], cmp["b"]["found_at"]) == (2, 3) and cmp["b"]["evaluations"] == 4
    assert compare_runs(a, _run_folder(tmp_path / "c", [12], shape, "tpe"))["verdict"] == "tie"
    other = _run_folder(tmp_path / "d", [10], {"M": 16, "N": 64}, "forge")
    with pytest.raises(ForgeInputError, match="compare runs of one problem"):
        compare_runs(a, other)

    from typer.testing import CliRunner

    from forge.cli import app

    res = CliRunner().invoke(app, ["compare", str(a), str(b)])
    assert res.exit_code == 0, res.output
    assert "B/A 1.250: A is faster" in res.output and "random" in res.output and "12 µs" in res.output
    res = CliRunner().invoke(app, ["compare", str(a), str(b), "--all"])       # a benches' option
    assert isinstance(res.exception, ForgeInputError) and res.exception.field == "--all"
    # two modeled times a hair apart are a tie (a model has no spread), not a win
    close = compare_runs(_run_folder(tmp_path / "m1", [4], shape, "forge", kind="modeled"),
                         _run_folder(tmp_path / "m2", [4.002], shape, "forge", kind="modeled"))
    assert close["verdict"] == "tie"
    # a measured time is never set against a modeled one: no ratio, no faster side
    modeled = _run_folder(tmp_path / "m", [4], shape, "forge", kind="modeled")
    cmp = compare_runs(a, modeled)
    assert (cmp["ratio"], cmp["verdict"]) == (None, "kinds differ")
    res = CliRunner().invoke(app, ["compare", str(a), str(modeled)])
    assert res.exit_code == 0 and "not compared: A's time is measured and B's modeled" in res.output, res.output
    assert "faster" not in res.output


def test_a_rerun_into_a_bench_with_other_settings_is_refused_where_it_runs_may_change(tmp_path, fake_tuner):
    """A rerun continues the bench: with another budget, sampler, bank use or case selection it
    would skip the finished cases and label them with settings they were not made with."""
    import re

    fake_tuner({m: ([10], 20, None, "measured") for m in (8, 16, 32, 64)})
    suite = make_suite()
    run_bench(suite, "cpu", tmp_path, budget_per_case=4, options={"sampler": "random", "seed": 0})
    for budget, options, needle in (
            (5, {"sampler": "random", "seed": 0}, "--budget-per-case 4, now --budget-per-case 5"),
            (None, {"sampler": "random", "seed": 0}, "--budget-per-case 4, now no --budget-per-case"),
            (4, {"sampler": "forge", "seed": 0}, "--sampler random, now forge"),
            (4, {"sampler": "random", "seed": 0, "bank": False}, "without --no-bank, now with it")):
        with pytest.raises(ForgeInputError, match=re.escape(needle)):
            run_bench(suite, "cpu", tmp_path, budget_per_case=budget, options=options)
    with pytest.raises(ForgeInputError, match=re.escape("its 4 cases, now 2 of which 0 new (--ops, --cases)")):
        run_bench(Suite("t", "test suite", suite.cases[:2], []), "cpu", tmp_path, budget_per_case=4,
                  options={"sampler": "random", "seed": 0})
    # where it runs may change, and the same settings continue it
    counts = run_bench(suite, "cpu", tmp_path, budget_per_case=4,
                       options={"sampler": "random", "seed": None, "executor": "local", "build_workers": None})
    assert counts == {"tuned": 0, "skipped": 4, "failed": 0}     # seed left out: its default, 0, as recorded
    assert json.loads((tmp_path / "bench.json").read_text())["options"]["build_workers"] is None   # a value, not "None"


def test_an_ops_name_that_selects_nothing_is_named_even_beside_one_that_does():
    assert make_suite().unmatched(["softmax", "nosuch", "softmax_h64"]) == ["nosuch"]


def test_report_of_a_bench_writes_the_format_asked_where_asked_and_a_bench_where_nothing_passed_exits_1(
        tmp_path, fake_tuner):
    from typer.testing import CliRunner

    from forge.cli import app

    fake_tuner({m: (["incorrect"], 20, None, "measured") for m in (8, 16, 32, 64)})
    run_bench(make_suite(), "cpu", tmp_path / "b", budget_per_case=1)
    res = CliRunner().invoke(app, ["report", str(tmp_path / "b"), "--format", "md", "--output", str(tmp_path / "x.md")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "x.md").read_text().startswith("# forge bench")
    assert not (tmp_path / "b" / "leaderboard.md").exists()            # a report writes only what is asked
    res = CliRunner().invoke(app, ["report", str(tmp_path / "b"), "--format", "csv"])
    assert isinstance(res.exception, ForgeInputError)           # exit 2 by forge's main
    assert "unknown format 'csv' for a bench folder; allowed: json, md, html" in str(res.exception)
    argv = ["bench", "--suite", "cannbench", "--target", "cpu", "--ops", "softmax", "--out", str(tmp_path / "b"),
            "--report-only"]
    # --report-only reads the folder as it is: another suite or target is a mistake, not a report
    res = CliRunner().invoke(app, argv)
    assert isinstance(res.exception, ForgeInputError) and res.exception.field == "--suite", res.output
    meta = json.loads((tmp_path / "b" / "bench.json").read_text())
    (tmp_path / "b" / "bench.json").write_text(json.dumps(meta | {"suite": "cannbench"}))
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 1 and "no case of" in res.output
    for suite, target, field in (("sol_execbench", "cpu", "--suite"), ("cannbench", "h100", "--target")):
        res = CliRunner().invoke(app, ["bench", "--suite", suite, "--target", target, "--out", str(tmp_path / "b"),
                                       "--report-only"])
        assert isinstance(res.exception, ForgeInputError) and res.exception.field == field, res.output


def test_a_case_is_scored_against_the_bound_its_run_computed(tmp_path, fake_tuner):
    """On the CPU target the bound comes from a probed bandwidth, which a new probe (another host, a
    deleted cpu_probe.json) changes: computed again at every report, every T_SOL and score would move."""
    fake_tuner({m: ([10], 20, None, "measured") for m in (8, 16, 32, 64)})
    run_bench(make_suite(), "cpu", tmp_path)
    run_json = tmp_path / "cases" / "cannbench-softmax_h64-8" / "run.json"
    run_json.write_text(json.dumps({"status": "complete", "roofline_seconds": 7e-6}))
    row = next(r for r in build_board(tmp_path)["cases"] if r["case_id"] == "8")
    assert row["t_sol"] == 7e-6 and row["sol_score"] == scores.sol_score(10 * US, 7e-6, 20 * US)


def test_cases_that_never_ran_are_counted_in_every_output(tmp_path, fake_tuner):
    from forge.commands.runs import collect
    from forge.report.html import render_html

    fake_tuner({8: ([5], None, None, "unchecked"), 16: ([5], 10, None, "measured"), 32: ([6], None, None, "unchecked"),
                64: ([7], 9, None, "measured")})
    run_bench(make_suite(), "cpu", tmp_path / "b")
    board = build_board(tmp_path / "b")
    assert board["total"]["unchecked"] == 2 and board["total"]["passed"] == 2    # unchecked is not passed
    assert {r["case_id"]: r["status"] for r in board["cases"] if r["source"] == "cannbench"} == {
        "8": "NOT_CHECKED", "16": "PASSED", "32": "NOT_CHECKED", "64": "PASSED", "99": "UNSUPPORTED"}
    assert "2 cases not passed: no variant ran where its output could be checked" in total_line(board)
    assert '<p class="note" id="unchecked">2 cases not passed: no variant ran' in render_html(board)
    (row,) = collect(tmp_path)
    assert "2 never ran (correctness not checked)" in row["progress"]


def test_a_case_stopped_while_starting_says_so(tmp_path, fake_tuner):
    fake_tuner({8: ([5], 10, None, "measured"), 16: "starting"})
    with pytest.raises(KeyboardInterrupt):
        run_bench(make_suite(), "cpu", tmp_path / "b")
    rows = {r["case_id"]: r for r in build_board(tmp_path / "b")["cases"]}
    assert (rows["16"]["status"], rows["16"]["reason"]) == (
        "NOT_RUN", "started, nothing recorded yet: stopped (or still) starting, before its baselines")
    assert rows["32"]["reason"] == "no records yet (bench interrupted before this case)"


def test_forge_runs_says_when_a_passed_case_stopped_part_way(tmp_path, fake_tuner):
    from forge.commands.runs import collect

    fake_tuner({8: ([5], 10, None, "measured"), 16: "interrupt"})
    with pytest.raises(KeyboardInterrupt):
        run_bench(make_suite(), "cpu", tmp_path / "b")
    (row,) = collect(tmp_path)
    assert row["progress"] == ("1/4 cases finished, 2 passed (1 of them stopped part way, best so far); "
                               "1 unsupported")


def test_a_long_reason_is_cut_at_a_word_and_marked():
    from forge.bench.render import case_cells

    reason = "only ranges known (total_q 1-16384, total_kv 1-16384); " + "more words " * 40
    row = dict(source_name="gqa", case_id="4", op=None, status="UNSUPPORTED", status_text="UNSUPPORTED", reason=reason)
    tail = case_cells(row)[-1]
    assert tail.endswith(" …") and len(tail) <= 200 and "total_q 1-16384," in tail
    from forge.report.progress import clip

    assert clip("x" * 300, 20) == "x" * 18 + " …"                  # one word longer than the width
    assert clip("a\nb", 20) == "a b"


def test_a_report_names_the_hosts_that_measured_the_times(tmp_path):
    """A run measured on a GPU node and read on a laptop: the report says where its times were taken
    (it said "on this machine")."""
    from forge.report.leaderboard import build_leaderboard
    from forge.report.render import headline

    run = _run_folder(tmp_path / "r", [30, 12], {"M": 8, "N": 64}, "forge")
    info = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**info, "measured": True}))
    store = Store.for_run(run)
    store.add(Record(run_id="r", variant_key="v9", op="softmax", shape={"M": 8, "N": 64}, dtype="float32",
                     target="cpu", config={"tile": 9}, status="ok", timings=[40 * US] * 3, trial=2,
                     time_kind="measured", host="gpu-node-7"))
    store.close()
    here = Record(run_id="r", variant_key="x", op="softmax", shape={}, dtype="float32", target="cpu", config={},
                  status="ok").host
    lines = headline(build_leaderboard(run))
    assert f"times are MEASURED on 2 hosts ({', '.join(sorted([here, 'gpu-node-7']))})" in "\n".join(lines)


def test_a_case_sets_measured_against_measured_only(tmp_path, fake_tuner):
    """A case's store can hold modeled times beside measured ones (the CUDA backend's modeled
    unfused roofline beside torch's measured one; a case started without its device and resumed on
    it): the best is the fastest measured variant and T_b a measured baseline, though a modeled
    variant and a modeled baseline are faster."""
    fake_tuner({m: ([20], 90, None, "measured") for m in (8, 16, 32, 64)})
    run_bench(make_suite(), "cpu", tmp_path)
    store = Store.for_run(tmp_path / "cases" / "cannbench-softmax_h64-8")
    base = dict(run_id="r", op="softmax", shape={"M": 8, "N": 64}, dtype="float32", target="cpu", attrs={})
    store.add(Record(**base, variant_key="m", config={"tile": 9}, status="ok", timings=[5 * US], trial=9,
                     time_kind="modeled"))
    store.add(Record(**base, variant_key="b", config={}, status="ok", phase="baseline", timings=[40 * US],
                     time_kind="modeled", extra={"baseline": "unfused", "label": "modeled roofline"}))
    store.close()
    r8 = next(r for r in build_board(tmp_path)["cases"] if r["case_id"] == "8")
    assert (r8["time"], r8["time_kind"]) == (pytest.approx(20 * US), "measured")
    assert (r8["t_b"], r8["baseline_time_kind"]) == (pytest.approx(90 * US), "measured")
    assert r8["speedup"] == pytest.approx(4.5) and not r8["kinds_differ"]


def test_the_suite_means_the_problems_sol_scores_and_sums_cann_bench_operators_only(tmp_path, fake_tuner):
    """benchmark-formats §5: the benchmark-level SOL score is the mean of the per-problem scores
    (a problem of three failed workloads weighs as much as one of one passed), and the cann-bench
    total sums cann-bench operators, not SOL-ExecBench problems."""
    fake_tuner({8: ([20], 90, None, "measured"), 16: "crash", 32: "crash", 64: "crash"})
    cases = [softmax_case(8, "one", "sol_execbench")] + [softmax_case(m, "three", "sol_execbench") for m in (16, 32, 64)]
    run_bench(Suite("t", "two problems", cases, []), "cpu", tmp_path)
    board = build_board(tmp_path)
    one = next(o for o in board["operators"] if o["name"] == "one")
    assert one["mean_sol_score"] > 0
    assert board["total"]["mean_sol_score"] == pytest.approx(one["mean_sol_score"] / 2)
    assert board["total"]["cann_total_score"] == 0


def test_cases_option_selects_by_id_and_names_an_id_that_selects_nothing(tmp_path):
    """`--cases 11-13,20` is those four ids; an id no case has, or a backwards range, is an input
    error that names --cases before anything is written."""
    from typer.testing import CliRunner

    from forge.cli import app
    from forge.commands.bench import case_ids

    assert case_ids(["11-13,20", "20"]) == ["11", "12", "13", "20"]
    uuid = "3f2a-11-4b"                               # a SOL workload id holding '-' is one id
    assert case_ids([uuid]) == [uuid]
    s = make_suite().select_cases(["16", "99"])
    assert [c.case_id for c in s.cases] == ["16"] and [u.case_id for u in s.unsupported] == ["99"]
    assert make_suite().case_ids() == ["8", "16", "32", "64", "99"]
    base = ["bench", "--suite", "cannbench", "--target", "cpu", "--ops", "gqa", "--out", str(tmp_path / "b")]
    for cases, needle in (("19-21", "no case of suite 'cannbench' (--ops) has id 21; allowed: 1, 2, 3"),
                          ("17-11", "range '17-11' runs backwards"), (",", "names no case")):
        res = CliRunner().invoke(app, base + ["--cases", cases])
        assert isinstance(res.exception, ForgeInputError) and res.exception.field == "--cases", res.output
        assert needle in str(res.exception), str(res.exception)
    assert not (tmp_path / "b").exists()
