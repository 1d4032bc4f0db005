"""End to end on the CPU target: tune, rank, re-measure, survive faults, resume after SIGKILL."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from forge.config import TuneSettings
from forge.errors import ForgeInputError
from forge.report.leaderboard import build_leaderboard
from forge.results import Store
from forge.targets import get_target
from forge.testing import FaultyCpuBackend, RunOrderCpuBackend, SlowerAtTheEndCpuBackend, run_forge
from forge.results.lock import FolderInUse
from forge.tuner import problem_of, resume, tune

QUIET = Console(file=open(os.devnull, "w"))


def settings(tmp_path: Path, **kw) -> TuneSettings:
    """A small real tune; the vendor baseline (torch, seconds to import) only where a test names it."""
    base = dict(op="softmax", shape={"M": 128, "N": 256}, trials=8, reps=3, warmup=1, top_k=2,
                final_reps=5, sampler="random", out=tmp_path / "run", bank=False, timeout=5.0, vendor=False)
    base.update(kw)
    return TuneSettings(**base)


def test_tune_ranks_correct_variants_with_speedups(tmp_path):
    run = tune(settings(tmp_path, vendor=True), console=QUIET)
    lb = build_leaderboard(run)
    assert lb.measured and lb.status_counts.get("ok", 0) >= 1
    assert sum(lb.status_counts.values()) == 8
    final = [r.median for r in lb.rows if r.remeasured]
    rest = [r.median for r in lb.rows if not r.remeasured]
    assert len(final) == 2 and final == sorted(final) and rest == sorted(rest)
    assert [r.remeasured for r in lb.rows[:2]] == [True, True]
    assert {b["name"] for b in lb.baselines if b["status"] == "ok"} == {"unfused", "vendor"}
    assert lb.rows[0].speedup_unfused and lb.rows[0].speedup_vendor and lb.rows[0].remeasured
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "complete" and info["space"]["valid"] > 0
    _check_report_formats(run, lb)


def test_no_vendor_times_no_vendor_baseline_and_says_why_its_column_is_empty(tmp_path, monkeypatch):
    """vendor=False (--no-vendor): torch is never started, the unfused baseline still is, and the
    report says the '× vendor' column is empty because the run was started so."""
    from forge.report.render import headline

    def vendor_timed(*_a, **_k):
        raise AssertionError("the vendor baseline was timed")

    monkeypatch.setattr("forge.backends.cpu.backend.measure_vendor", vendor_timed)
    run = tune(settings(tmp_path, top_k=0, trials=2), console=QUIET)
    assert [r.config["baseline"] for r in Store.for_run(run).records(phase="baseline")] == ["unfused"]
    assert json.loads((run / "run.json").read_text())["settings"]["vendor"] is False
    assert ("baseline vendor: none, so '× vendor' is empty — not timed: the run was started with --no-vendor "
            "(vendor: false)" in headline(build_leaderboard(run)))


def test_the_re_measure_takes_turns_over_runs_and_pools_them(tmp_path):
    """The finalists' repetitions are split over FINAL_ROUNDS runs each (7 = 3 + 2 + 2), the
    finalists taking turns, and each finalist's record holds every repetition of its runs."""
    from forge.tuner import FINAL_ROUNDS

    backend = RunOrderCpuBackend(get_target("cpu"))
    run = tune(settings(tmp_path, final_reps=7), console=QUIET, backend=backend)
    finals = [r for r in Store.for_run(run).records() if r.phase == "final"]
    assert FINAL_ROUNDS == 3 and len(finals) == 2
    last = backend.runs[-6:]
    assert [reps for _, reps in last] == [3, 3, 2, 2, 2, 2]
    a, b = last[0][0], last[1][0]
    assert a != b and all({last[i][0], last[i + 1][0]} == {a, b} for i in (0, 2, 4))   # each round both
    assert {r.variant_key for r in finals} == {a, b}
    assert all(len(r.timings) == 7 and r.extra["runs"] == 3 for r in finals)
    # the finalists run the programs the search built: their configs, read back from the store in
    # another key order, generate the same source
    searched = {r.variant_key: r.source_hash for r in Store.for_run(run).records(phase="search")}
    assert all(r.source_hash and r.source_hash == searched[r.variant_key] for r in finals)


def test_a_finalist_that_fails_in_one_run_is_recorded_with_that_failure():
    """Pooling the final runs keeps every repetition of runs that all succeeded, and a finalist
    that crashed, hung or went wrong in any run is recorded with that run's failure."""
    from forge.backends.base import Measurement, Verdict
    from forge.executor import Job, Outcome
    from forge.problem import Problem
    from forge.tuner import pooled
    from forge.variant import Variant

    job = Job(Variant(Problem(op="softmax", shape={"M": 8, "N": 64}), "cpu", {"tile": 1}), seed=1, reps=2)
    ok = [Outcome(job, Verdict(True), None, Measurement("ok", timings=[1.0, 2.0])),
          Outcome(job, Verdict(True), None, Measurement("ok", timings=[3.0]))]
    both = pooled(ok)
    assert both.measurement.timings == [1.0, 2.0, 3.0] and both.job.reps == 3 and both.measurement.extra["runs"] == 2
    hung = Outcome(job, Verdict(True), None, Measurement("timeout", "no result within 3 s"))
    assert pooled([ok[0], hung, ok[1]]) is hung


@pytest.mark.parametrize("baselines_too, says", [
    (True, "x): this machine ran at another speed at the end"),
    (False, "x): the search times of the best were low draws")])
def test_a_re_measure_that_moves_every_variant_re_times_the_baselines_to_say_why(tmp_path, monkeypatch,
                                                                                 baselines_too, says):
    """When every re-measured variant comes out slower than in the search by more than its spread,
    the baselines are timed again after the re-measure: if they are slower too (here 10x, against
    the about 3.2x the rule needs), the host changed speed; if not (here exactly as before), the
    search times were lucky. The report says which, and the speedups use the new baselines. The test
    double gives every variant and baseline the time of its first run with no spread, so the outcome
    does not depend on this machine's noise, and the re-time before the re-measure that a run over a
    minute long gets is put off, so the baselines are timed again only after the slowdown."""
    import forge.tuner

    monkeypatch.setattr(forge.tuner, "BASELINE_RETIME_AFTER_S", 1e9)
    backend = SlowerAtTheEndCpuBackend(get_target("cpu"), run_seed=0, factor=10.0, baselines_too=baselines_too)
    run = tune(settings(tmp_path, final_reps=7, seed=0), console=QUIET, backend=backend)
    records = Store.for_run(run).records()
    finals = [r for r in records if r.phase == "final" and r.status == "ok"]
    baselines = [r for r in records if r.phase == "baseline" and r.config["baseline"] == "unfused"]
    assert len(finals) == 2 and len(baselines) == 2
    assert baselines[-1].timestamp > max(r.timestamp for r in finals)
    lb = build_leaderboard(run)
    assert lb.remeasure.factor == pytest.approx(10.0) and lb.remeasure.count == 2
    assert next(b for b in lb.baselines if b["name"] == "unfused")["median"] == baselines[-1].median
    from forge.report.render import headline
    assert any(x.startswith("the 2 re-measured variants (*) ran") and says in x for x in headline(lb))


def _check_report_formats(run, lb):
    from typer.testing import CliRunner

    from forge.cli import app

    for fmt, needle in (("md", "| rank | config |"), ("csv", "rank,tie_with,config"), ("json", '"rows"'),
                        ("html", "data:image/png;base64")):
        r = CliRunner().invoke(app, ["report", str(run), "--format", fmt])
        assert r.exit_code == 0, r.output
        assert needle in (run / f"leaderboard.{fmt}").read_text()
    best = " ".join(f"{k}={v}" for k, v in lb.rows[0].config.items())
    assert best in (run / "leaderboard.md").read_text()
    r = CliRunner().invoke(app, ["report", str(run), "-o", str(run / "named.markdown")])   # the suffix names it
    assert r.exit_code == 0 and "| rank | config |" in (run / "named.markdown").read_text(), r.output
    for argv, needle in ((["-o", str(run / "x.txt")], "--output: unknown format 'txt'"),
                         (["-o", str(run / "noext")], "--output: cannot tell the format from noext"),
                         (["--top", "0"], "--top: must be at least 1")):
        r = CliRunner().invoke(app, ["report", str(run), *argv])     # the console script makes it exit 2
        assert isinstance(r.exception, ForgeInputError) and needle in str(r.exception), r.output
    r = CliRunner().invoke(app, ["show", str(run), "1"])
    assert r.exit_code == 0 and best in r.output and "changed since" not in r.output
    _check_show_export(run, lb)


def _check_show_export(run, lb):
    """`forge show --export` writes the variant's every file and its description to a new folder,
    never into one that holds anything; a run whose target's generators changed since says so."""
    from typer.testing import CliRunner

    from forge.cli import app

    folder = run.parent / "exported"
    r = CliRunner().invoke(app, ["show", str(run), "1", "--export", str(folder)])
    assert r.exit_code == 0, r.output
    about = json.loads((folder / "forge_variant.json").read_text())
    assert about["config"] == lb.rows[0].config and about["rank"] == 1
    from forge.tuner import input_seed
    from forge.variant import Variant

    settings = TuneSettings(**json.loads((run / "run.json").read_text())["settings"])
    searched = Variant(problem_of(settings), settings.target, lb.rows[0].config)
    assert about["seed"] == input_seed(searched, settings.seed, "search")      # the inputs it was checked on
    assert sorted(p.name for p in folder.iterdir()) == sorted([*about["files"], "forge_variant.json"])
    assert "forge_kernel" in (folder / about["main"]).read_text()
    # run.sh builds it as forge does and runs it on the exported inputs; the output matches the reference
    (expected,) = [f for f in about["files"] if f.startswith("expected_")]
    done = subprocess.run(["bash", str(folder / "run.sh")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and '"timings"' in done.stdout, done.stderr[-2000:]
    assert "PASS: " in done.stdout                                    # run.sh ends with check.py
    got, want = np.fromfile(folder / "output.bin", np.float32), np.fromfile(folder / expected, np.float32)
    assert got.shape == want.shape and np.allclose(got, want, atol=2e-4, rtol=2e-4)
    (got * 1.01 + 1e-3).tofile(folder / "output.bin")                   # a wrong output fails the check
    wrong = subprocess.run([sys.executable, "check.py"], cwd=folder, capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 1 and "FAIL: " in wrong.stderr
    again = CliRunner().invoke(app, ["show", str(run), "1", "--export", str(folder)])
    assert again.exit_code != 0 and "is a folder that is not empty" in str(again.exception or again.output)
    meta = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**meta, "code": "an older generator"}))
    r = CliRunner().invoke(app, ["show", str(run), "1"])
    assert "cpu's generators or model changed since" in r.output
    (run / "run.json").write_text(json.dumps(meta))


def test_faulty_variants_are_recorded_and_never_ranked(tmp_path):
    s = settings(tmp_path, trials=6)
    configs = FaultyCpuBackend(get_target("cpu"), faults={}).space(problem_of(s)).enumerate().configs()[:6]
    faults = {"crash": configs[0], "hang": configs[1], "wrong": configs[2], "compile": configs[3]}
    run = _tune_subset(s, faults, configs)
    lb = build_leaderboard(run)
    assert sorted(f["status"] for f in lb.failures) == ["compile_error", "incorrect", "runtime_error", "timeout"]
    assert sorted(json.dumps(r.config, sort_keys=True) for r in lb.rows) == sorted(
        json.dumps(c, sort_keys=True) for c in configs[4:])
    _check_replay_export(run, configs)


def _check_replay_export(run: Path, configs) -> None:
    """The run evaluated its whole (subset) space, so it is a replayable space: failures carry
    Kernel Tuner's markers and the optimum is the best search median."""
    from forge.backends.replay import load_cache
    from forge.backends.replay.from_run import cache_doc_from_run
    from forge.results import load

    doc = cache_doc_from_run(run)
    times = {json.dumps({k: e[k] for k in doc["tune_params_keys"]}, sort_keys=True): e["time"]
             for e in doc["cache"].values()}
    assert sorted(times) == sorted(json.dumps(c, sort_keys=True) for c in configs)
    markers = [times[json.dumps(c, sort_keys=True)] for c in configs[:4]]
    assert markers == ["RuntimeFailedConfig"] * 3 + ["CompilationFailedConfig"]
    df = load(run)
    search = df[(df.phase == "search") & (df.status == "ok")]
    data = load_cache(run)
    assert len(data.time_s) == 6 and data.n_ok == 2
    assert data.optimum_s == pytest.approx(search["median"].min())
    assert all("build_seconds" in e for e in df[df.phase == "search"]["extra"])
    assert doc["forge_run"]["time_kind"] == "measured" and "MODELED" not in doc["device_name"]


def test_a_modeled_run_replays_and_exports_as_modeled(tmp_path):
    """Its times are the model's: the exported cache's device name and forge_run say so, and
    `forge replay` of the run or of the file prints it, so no table takes them for the device's."""
    from typer.testing import CliRunner

    from forge.backends.replay.from_run import cache_doc_from_run
    from forge.cli import app

    run = tune(settings(tmp_path, measure="model", trials=4, top_k=0), console=QUIET)
    import csv
    import io

    from forge.report.render import to_csv

    rows = list(csv.DictReader(io.StringIO(to_csv(build_leaderboard(run)))))
    assert rows and all(r["time_kind"] == "modeled" and r["spread_s"] == "" for r in rows)   # no spread of a model
    doc = cache_doc_from_run(run)
    assert doc["forge_run"]["time_kind"] == "modeled" and "times MODELED by forge" in doc["device_name"]
    for source in (run, tmp_path / "space.json"):
        if source != run:
            assert CliRunner().invoke(app, ["replay", str(run), "--export", str(source)]).exit_code == 0
        res = CliRunner().invoke(app, ["replay", str(source), "--budget", "2", "--seeds", "2"])
        assert res.exit_code == 0, res.output
        assert "times MODELED by forge" in res.output and "modeled by forge's performance model" in res.output


class SubsetBackend(FaultyCpuBackend):
    """Restricts the space to exactly `configs` (a module-level class, so workers can unpickle it)."""

    def __init__(self, target, faults, configs):
        super().__init__(target, faults=faults)
        self.names = list(configs[0])
        self.keep = {tuple(c[n] for n in self.names) for c in configs}

    def _in_subset(self, c):
        import numpy as np

        cols = [np.atleast_1d(np.asarray(c[n], dtype=object)) for n in self.names]
        return np.array([tuple(v) in self.keep for v in zip(*cols)])

    def space(self, problem):
        from forge.space import Constraint

        sp = super().space(problem)
        sp.constraints.append(Constraint("subset", self._in_subset))
        return sp


def _tune_subset(s, faults, configs):
    return tune(s, console=QUIET, backend=SubsetBackend(get_target("cpu"), faults, configs))


def _search_rows(run: Path) -> list[tuple[int, str]]:
    if not (run / "forge.sqlite").exists():
        return []
    db = sqlite3.connect(run / "forge.sqlite")
    try:
        return db.execute("SELECT id, variant_key FROM records WHERE phase = 'search' ORDER BY id").fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        db.close()


@pytest.mark.slow
def test_sigkill_then_resume_loses_nothing_and_remeasures_nothing(tmp_path):
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "forge.cli", "tune", "--op", "softmax", "--shape", "M=256,N=512",
           "--trials", "14", "--reps", "5", "--sampler", "tpe", "--out", str(run), "--no-bank", "--no-vendor", "--top-k", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and len(_search_rows(run)) < 4:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _search_rows(run)
    assert 4 <= len(before) < 14, "the run must be killed mid-search"
    meta = json.loads((run / "run.json").read_text())
    meta["roofline_seconds"] = 1.25e-3        # a resumed run keeps its own roofline (not a new probe's)
    (run / "run.json").write_text(json.dumps(meta))
    done = subprocess.run([sys.executable, "-m", "forge.cli", "tune", "--resume", str(run)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    after = _search_rows(run)
    assert after[: len(before)] == before                       # nothing lost or changed
    keys = [k for _, k in after]
    assert len(keys) == len(set(keys)) == 14                    # nothing measured twice
    assert "resuming: " in done.stderr
    assert json.loads((run / "run.json").read_text())["roofline_seconds"] == 1.25e-3
    store = Store.for_run(run)
    assert all(r.median is not None for r in store.records(phase="search") if r.status == "ok")


def test_measure_model_never_presents_a_measured_time(tmp_path):
    run = tune(settings(tmp_path, measure="model", trials=3), console=QUIET)
    lb = build_leaderboard(run)
    assert not lb.measured
    assert lb.rows and all(r.time_kind == "modeled" for r in lb.rows)
    assert all(r.time_kind == "modeled" for r in Store.for_run(run).records())


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_stops_cleanly_and_says_how_to_resume(tmp_path, signum, status):
    """SIGINT to the whole process group (what Ctrl-C sends), or SIGTERM to it (what a scheduler
    or `kill` sends): the signal's exit status, no traceback from the run or its build workers,
    and the exact resume command."""
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "forge.cli", "tune", "--op", "softmax", "--shape", "M=256,N=512",
           "--trials", "40", "--reps", "5", "--out", str(run), "--no-bank", "--no-vendor", "--top-k", "0"]
    # A shell starts background jobs with SIGINT ignored, and an ignored SIGINT is inherited and
    # kept by Python; the child gets the default back so the test means the same wherever it runs.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while time.time() < deadline and len(_search_rows(run)) < 3:
        time.sleep(0.2)
    os.killpg(proc.pid, signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err[-3000:]
    assert "Traceback" not in err and f"forge tune --resume {run}" in err
    assert len(_search_rows(run)) >= 3


@pytest.mark.slow
def test_sigterm_with_the_ray_executor_still_stops_the_run_cleanly(tmp_path):
    """ray.init installs Ray's own SIGTERM handler, which ends the driver at once; the executor
    puts forge's back, so `kill` on a Ray run gives the same clean stop as on a local one."""
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "forge.cli", "tune", "--op", "softmax", "--shape", "M=256,N=512",
           "--trials", "400", "--executor", "ray", "--out", str(run), "--no-bank", "--no-vendor", "--top-k", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 180
    while time.time() < deadline and len(_search_rows(run)) < 3 and proc.poll() is None:
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err[-3000:]
    assert f"forge tune --resume {run}" in err and "SIGTERM received" not in err
    assert len(_search_rows(run)) >= 3


def test_a_folder_another_forge_process_writes_is_refused_until_it_stops(tmp_path):
    """A second forge on a live run's folder (a --resume started too early) stops before writing
    anything and names the holder; once the holder is gone, however it went (SIGKILL here), the
    folder is free at once."""
    run = tune(settings(tmp_path, trials=3), console=QUIET)
    before = _search_rows(run)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from forge.results.lock import folder_lock\n"
         "with folder_lock(Path(sys.argv[1]), '--out'):\n    print('held', flush=True); time.sleep(120)", str(run)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(FolderInUse, match=rf"--resume: .* another forge process \(pid {holder.pid}\)"):
            resume(run, console=QUIET, trials=6)
    finally:
        holder.kill()
        holder.wait()
    assert _search_rows(run) == before                            # the refused resume wrote nothing
    resume(run, console=QUIET, trials=6)
    assert len(_search_rows(run)) == 6


def test_several_device_slots_need_ray_and_a_device_other_than_the_host(tmp_path):
    """Checked before anything is written: the local executor has one device slot, and the CPU
    target times on the host, where two measurements at once would disturb each other."""
    from forge.errors import ForgeInputError

    with pytest.raises(ForgeInputError, match="--devices: 2 device slots need --executor ray"):
        tune(settings(tmp_path, devices=2), console=QUIET)
    with pytest.raises(ForgeInputError, match="--devices: the cpu target times variants on the host CPU"):
        tune(settings(tmp_path, devices=2, executor="ray"), console=QUIET)
    assert not (tmp_path / "run").exists()


def test_a_ray_address_without_the_ray_executor_is_refused(tmp_path):
    """The local executor would ignore the address, and the user would believe the run was on the
    cluster; RAY_ADDRESS in the environment, by contrast, is only read by the Ray executor."""
    from forge.errors import ForgeInputError

    with pytest.raises(ForgeInputError, match=r"--ray-address: 'ray://head:10001' .* only --executor ray"):
        tune(settings(tmp_path, ray_address="ray://head:10001"), console=QUIET)
    assert not (tmp_path / "run").exists()


def test_an_interrupt_while_the_executor_starts_says_what_there_is_to_continue(tmp_path, monkeypatch):
    """Starting a Ray cluster takes seconds: a Ctrl-C then, before run.json exists, must not point
    to a --resume that would refuse the folder; one on a resumed run points to --resume again."""
    import io

    done = tune(settings(tmp_path, trials=2, top_k=0), console=QUIET)

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setitem(tune.__globals__, "make_executor", stopped)     # the module `tune` runs in
    for run, again in ((tmp_path / "fresh", False), (done, True)):
        out = io.StringIO()
        with pytest.raises(KeyboardInterrupt):
            if again:
                resume(run, console=Console(file=out, width=300), trials=4)
            else:
                tune(settings(tmp_path, out=run), console=Console(file=out, width=300))
        said = out.getvalue()
        if again:
            assert "interrupted while starting" in said and f"forge tune --resume {run}" in said
        else:
            assert "before the run started" in said and "--resume" not in said and not run.exists()


def test_a_ray_address_is_checked_and_named_where_it_came_from(monkeypatch):
    """A port outside 1-65535 is malformed, not "connection refused"; an address read from the
    environment is named RAY_ADDRESS, not a flag the user never typed."""
    from forge.errors import ForgeInputError
    from forge.executor.ray_executor import check_reachable

    with pytest.raises(ForgeInputError, match=r"--ray-address: '127.0.0.1:99999': expected host:port"):
        check_reachable("127.0.0.1:99999")
    monkeypatch.setenv("RAY_ADDRESS", "garbage")
    with pytest.raises(ForgeInputError, match=r"^RAY_ADDRESS: 'garbage': expected host:port"):
        tune(settings(Path("/nonexistent/run"), executor="ray"), console=QUIET)


def test_forge_runs_lists_each_run_with_its_state_and_best(tmp_path):
    """A folder of runs read at a glance: a finished run, one interrupted (run.json still says
    running, no process holds it) and one a process holds, each with its progress and best."""
    import shutil

    from forge.commands.runs import collect
    from forge.results.lock import folder_lock

    done = tune(settings(tmp_path, trials=3, top_k=0, out=tmp_path / "runs" / "a"), console=QUIET)
    for name in ("b", "c"):
        shutil.copytree(done, tmp_path / "runs" / name)
        meta = json.loads((tmp_path / "runs" / name / "run.json").read_text())
        (tmp_path / "runs" / name / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    for i in (1, 0):                                              # a config of two shapes: listed one level down
        shutil.copytree(done, tmp_path / "runs" / "0cfg" / f"shape{i}")
    shutil.copytree(done, tmp_path / "runs" / "e")
    (tmp_path / "runs" / "e" / "forge.sqlite").unlink()     # damaged, but run.json still names what it tuned
    (tmp_path / "runs" / "d").mkdir()
    (tmp_path / "runs" / "d" / "run.json").write_text("{")               # a damaged folder is listed, not fatal
    with folder_lock(tmp_path / "runs" / "c", "--out"):
        rows = collect(tmp_path / "runs")
    assert [Path(r["path"]).relative_to(tmp_path / "runs").as_posix() for r in rows[:2]] == ["0cfg/shape0",
                                                                                            "0cfg/shape1"]
    rows = rows[2:]
    lost = rows.pop()
    assert lost["status"].startswith("unreadable: ") and "forge.sqlite" in lost["status"]
    assert (lost["what"], lost["target"]) == ("softmax[M=128,N=256] float32", "cpu")
    broken = rows.pop()
    assert broken["status"].startswith("unreadable: run.json is not readable (Expecting")
    assert (broken["what"], broken["target"]) == ("?", "?")
    assert [r["status"] for r in rows] == ["complete", "interrupted", f"in progress (pid {os.getpid()})"]
    assert {r["what"] for r in rows} == {"softmax[M=128,N=256] float32"}
    assert all(r["progress"] == "3 of 3 variants" and r["best"] > 0 and r["speedup_unfused"] for r in rows)
    listed = run_forge("runs", str(tmp_path / "runs"), "--json", str(tmp_path / "runs.json"))
    assert listed.returncode == 0, listed.stderr
    assert [r["status"] for r in json.loads((tmp_path / "runs.json").read_text())][2:5] == ["complete", "interrupted",
                                                                                            "interrupted"]
    assert "0cfg/shape1" in run_forge("runs", str(tmp_path / "runs"), env={"COLUMNS": "200"}).stdout
    (itself,) = collect(tmp_path / "runs" / "a")          # a run folder itself: its row, not "no run here"
    assert itself["status"] == "complete" and itself["what"] == "softmax[M=128,N=256] float32"
    missing = run_forge("runs", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "folder: " in missing.stderr
    report = run_forge("report", str(tmp_path / "runs"))
    assert report.returncode == 2 and f"`forge runs {tmp_path / 'runs'}` lists them" in report.stderr


def test_resume_refuses_flags_the_run_fixed_and_takes_its_budget_and_place(tmp_path):
    """A resumed run keeps what it searches and how it measures: a flag that would change it is an
    input error naming the flag (it used to be dropped silently); the budget may be raised."""
    run = tune(settings(tmp_path, trials=2, top_k=0), console=QUIET)
    before = _search_rows(run)
    cli = ("tune", "--resume", str(run))
    refused = run_forge(*cli, "--sampler", "tpe", "--reps", "3", "--no-vendor")
    assert refused.returncode == 2 and "--reps, --sampler, --no-vendor: fixed by the run being resumed" in refused.stderr
    assert _search_rows(run) == before
    done = run_forge(*cli, "--trials", "4")
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(_search_rows(run)) == 4


def test_an_extended_run_re_measures_its_new_top_together(tmp_path):
    """`--resume --trials N` on a finished run: when the longer search puts variants the first
    re-measure did not time into the top k, the new top k is re-measured in the same rounds and
    leads the leaderboard; the earlier re-measure stays in the database, superseded."""
    from forge.testing import LaterIsFasterCpuBackend

    backend = LaterIsFasterCpuBackend(get_target("cpu"))
    first = tune(settings(tmp_path, trials=3, top_k=1), console=QUIET, backend=backend)
    before = Store.for_run(first).records(phase="final")
    assert len(before) == 1
    tune(settings(tmp_path, trials=6, top_k=1), console=QUIET, backend=backend, resume=True)
    store = Store.for_run(first)
    search = [r for r in store.records(phase="search") if r.status == "ok"]
    best = min(search, key=lambda r: r.median)
    assert best.variant_key != before[0].variant_key and best.trial >= 3
    finals = store.records(phase="final")
    assert [r.variant_key for r in finals] == [best.variant_key]
    assert len(store.records(phase="final", superseded=True)) == 2          # nothing lost
    lb = build_leaderboard(first)
    assert lb.rows[0].config == best.config and sum(r.remeasured for r in lb.rows) == 1


def test_patience_stops_a_search_that_stopped_improving_and_counts_afresh_on_a_resume_that_raises_a_limit(tmp_path):
    """--patience P stops proposing after P evaluations without improvement. A resume with more
    trials searches again (its patience counts from the resume), where the evaluations without
    improvement before it would stop it at once; a resume that raises nothing (after an interrupt)
    ends where the run would have ended."""
    from forge.testing import LaterIsSlowerCpuBackend

    backend = LaterIsSlowerCpuBackend(get_target("cpu"))
    run = tune(settings(tmp_path, trials=30, top_k=0, patience=3), console=QUIET, backend=backend)
    first = len(Store.for_run(run).records(phase="search"))
    assert 4 <= first < 30                       # the first variant, 3 without improvement, those in flight
    resume(run, console=QUIET, backend=backend)
    assert len(Store.for_run(run).records(phase="search")) == first
    # the raising resume is interrupted after one new variant: the next resume, which raises
    # nothing, still counts patience from the raise, not from the run's first variant
    real, seen = tune.__globals__["_note_result"], []

    def note_then_stop(ctx, rec):
        real(ctx, rec)
        seen.append(rec)
        if len(seen) == first + 1:
            raise KeyboardInterrupt
    tune.__globals__["_note_result"] = note_then_stop
    try:
        with pytest.raises(KeyboardInterrupt):
            resume(run, console=QUIET, backend=backend, trials=40)
    finally:
        tune.__globals__["_note_result"] = real
    assert len(Store.for_run(run).records(phase="search")) == first + 1
    resume(run, console=QUIET, backend=backend)
    again = len(Store.for_run(run).records(phase="search"))
    assert first + 3 <= again < 40
    # patience given as None (a config that drops it) lifts it: the search runs to its trials
    resume(run, console=QUIET, backend=backend, patience=None)
    assert len(Store.for_run(run).records(phase="search")) == 40


def test_a_final_re_measure_is_committed_whole(tmp_path):
    """A re-measure interrupted while its records are written stars none of them."""
    from forge.results.record import Record

    store = Store(tmp_path / "s.sqlite")

    def rec(key: str, phase: str = "final") -> Record:
        return Record(run_id="r", variant_key=key, op="softmax", shape={"M": 1}, dtype="float32", target="cpu",
                      attrs={}, config={"k": key}, status="ok", phase=phase, median=1.0, timings=[1.0])

    class Boom(Record):
        def to_row(self):
            raise KeyboardInterrupt

    store.add(rec("a", "search"))
    with pytest.raises(KeyboardInterrupt):
        store.add_final([rec("a"), Boom(**{**rec("b").__dict__})])
    assert store.records(phase="final") == [] and len(store.records()) == 1
    store.add_final([rec("a"), rec("b")])
    store.add_final([rec("c")])
    assert [r.variant_key for r in store.records(phase="final")] == ["c"]
    assert [r.variant_key for r in store.records(phase="final", superseded=True)] == ["a", "b", "c"]


def test_no_host_check_on_a_target_without_one_says_it_changes_nothing(tmp_path):
    con = Console(record=True, width=300, file=open(os.devnull, "w"))
    tune(settings(tmp_path, trials=1, top_k=0, host_check=False), console=con)
    assert "--no-host-check changes nothing on cpu" in con.export_text()


def test_a_cpu_run_with_measure_model_is_unchecked_and_not_banked(tmp_path, monkeypatch):
    """--measure model on the CPU compiles and runs nothing, so no output was checked: the report
    says so and the bank, which serves configs to runs that check, is not updated."""
    from forge.report.render import headline

    monkeypatch.setenv("FORGE_BANK", str(tmp_path / "bank.sqlite"))
    con = Console(record=True, width=300, file=open(os.devnull, "w"))
    run = tune(settings(tmp_path, measure="model", trials=2, top_k=0, bank=True), console=con)
    assert "tuning bank: not updated: no variant's output was checked in this run (--measure model" in con.export_text()
    assert any(ln.startswith("correctness: not checked") for ln in headline(build_leaderboard(run)))


def test_a_shape_whose_roofline_exceeds_the_timeout_is_refused_before_anything_is_built(tmp_path):
    """Attention at S = 10^6 on a CPU needs over an hour by its roofline alone (minutes or hours
    by the probed machine): every variant would time out in turn, so the run is refused up front,
    naming --timeout and what the least measurement is made of."""
    with pytest.raises(ForgeInputError, match=r"--timeout: attention\[.*\] float32 on cpu: one measurement takes at "
                                              r"least .* (min|h) \(5 calls at its roofline bound of .*\), so no "
                                              r"variant can finish within --timeout 60 s"):
        tune(settings(tmp_path, op="attention", shape={"B": 1, "H": 8, "S": 1_000_000, "D": 64}, timeout=60.0,
                      reps=3, warmup=1), console=QUIET)
    assert not (tmp_path / "run").exists()


def test_a_timeout_the_harness_cache_flushes_alone_outlast_is_refused(tmp_path, monkeypatch):
    """A host reporting a large L3 gets a flush of twice its size before each timed call: with a
    short --timeout every variant of even a tiny problem timed out in turn."""
    from forge.backends.cpu.backend import CpuBackend

    monkeypatch.setattr(CpuBackend, "_flush_bytes", lambda self: 1 << 40)
    with pytest.raises(ForgeInputError, match=r"--timeout: softmax\[M=128,N=256\] float32 on cpu: one measurement "
                                              r"takes at least .* and a cache flush over 1,024.0 GiB before each of "
                                              r"the 3 timed ones\), so no variant can finish within --timeout 5 s"):
        tune(settings(tmp_path), console=QUIET)


def test_a_finalist_that_fails_its_final_re_measure_is_neither_ranked_nor_banked(tmp_path, monkeypatch):
    """Both finalists crash in the re-measure only: their fast search times are not ranked, the
    failures say why, the header counts them, and the bank takes the best variant that did not fail."""
    from forge.bank import bank_lookup
    from forge.report.render import headline
    from forge.testing import CrashesWhenReMeasuredCpuBackend

    monkeypatch.setenv("FORGE_BANK", str(tmp_path / "bank.json"))
    backend = CrashesWhenReMeasuredCpuBackend(get_target("cpu"), search_reps=3)
    s = settings(tmp_path, bank=True)
    run = tune(s, console=QUIET, backend=backend)
    records = Store.for_run(run).records()
    crashed = {r.variant_key for r in records if r.phase == "final"}
    assert len(crashed) == 2 and all(r.status == "runtime_error" for r in records if r.phase == "final")
    lb = build_leaderboard(run)
    assert lb.rows and not {r.variant_key for r in lb.rows} & crashed and not any(r.remeasured for r in lb.rows)
    finals = [f for f in lb.failures if f["phase"] == "final"]
    assert len(finals) == 2 and all(f["reason"] == "final re-measure: killed by SIGSEGV" for f in finals)
    assert any("2 of them failed the final re-measure and are not ranked" in line for line in headline(lb))
    assert bank_lookup(problem_of(s), "cpu")[0] == lb.rows[0].config
    assert lb.convergence[-1][1] == min(r.median for r in records if r.phase == "search" and r.status == "ok"
                                        and r.variant_key not in crashed)      # no failed finalist is a best


def test_a_full_disk_in_the_final_re_measure_stops_the_run_and_the_resume_re_measures(tmp_path):
    """A finalist whose re-measure failed because the disk filled is no failure of its code: recorded,
    it would be left unranked for good. The run stops with nothing of the re-measure recorded, and
    the resume times the finalists again."""
    from io import StringIO

    from forge.errors import MachineFault
    from forge.testing import CrashesWhenReMeasuredCpuBackend

    full = CrashesWhenReMeasuredCpuBackend(get_target("cpu"), search_reps=3,
                                           reason="write failed: No space left on device")
    out = StringIO()
    with pytest.raises(MachineFault, match="No space left on device .*the finalist is not recorded as failed"):
        tune(settings(tmp_path), console=Console(file=out, width=300), backend=full)
    assert f"continue with: forge tune --resume {tmp_path / 'run'}" in out.getvalue()
    assert not Store.for_run(tmp_path / "run").records(phase="final")
    run = resume(tmp_path / "run", console=QUIET)
    finals = Store.for_run(run).records(phase="final")
    assert len(finals) == 2 and all(r.status == "ok" for r in finals)
    assert all(r.remeasured for r in build_leaderboard(run).rows[:2])


@pytest.mark.parametrize("raises", [False, True], ids=["failed", "raised"])
def test_a_full_disk_while_timing_the_baselines_stops_the_run_and_the_resume_times_them(tmp_path, raises):
    """A baseline that failed because the disk filled would stay failed (the baselines are measured
    once per run) and leave its speedup column empty; none of the baselines is recorded then."""
    from forge.errors import MachineFault
    from forge.testing import BaselinesFailCpuBackend

    healed = tmp_path / "healed"
    backend = BaselinesFailCpuBackend(get_target("cpu"), "cc1: error: No space left on device", str(healed),
                                      raises=raises)
    with pytest.raises(MachineFault, match="No space left on device"):
        tune(settings(tmp_path, top_k=0), console=QUIET, backend=backend)
    assert not Store.for_run(tmp_path / "run").records(phase="baseline")
    healed.touch()
    run = resume(tmp_path / "run", console=QUIET)
    bases = Store.for_run(run).records(phase="baseline")
    assert {r.config["baseline"] for r in bases} >= {"unfused"} and all(r.status == "ok" for r in bases)


def test_baselines_cut_short_by_the_store_are_timed_again_on_resume(tmp_path, monkeypatch):
    """A store write failing at the second baseline left the first recorded, and the resume, seeing
    baselines, never timed the other: the baselines are committed together or not at all."""
    from forge.results.store import StoreError

    add = Store.add

    def full_at_second_baseline(self, rec):
        if rec.phase == "baseline" and any(r.phase == "baseline" for r in self.records()):
            raise StoreError("run", f"cannot write {self.path}: database or disk is full")
        return add(self, rec)

    monkeypatch.setattr(Store, "add", full_at_second_baseline)
    with pytest.raises(StoreError, match="database or disk is full"):
        tune(settings(tmp_path, top_k=0, vendor=True), console=QUIET)
    assert not Store.for_run(tmp_path / "run").records(phase="baseline")
    monkeypatch.setattr(Store, "add", add)
    run = resume(tmp_path / "run", console=QUIET)
    names = [r.config["baseline"] for r in Store.for_run(run).records(phase="baseline")]
    assert "unfused" in names and len(names) == len(set(names)) >= 2


def test_a_full_disk_in_the_re_time_after_a_shift_is_taken_up_on_resume(tmp_path, monkeypatch):
    """The re-measure is committed, then the baselines are timed again because every finalist moved;
    a full disk there stopped the run, and the resume, finding the re-measure done, never re-timed
    them, so the report could not tell a slowed host from lucky search times."""
    from forge.errors import MachineFault
    from forge.testing import SlowerAtTheEndCpuBackend

    monkeypatch.setattr("forge.tuner.BASELINE_RETIME_AFTER_S", 1e9)

    def backend(fault: str) -> SlowerAtTheEndCpuBackend:
        return SlowerAtTheEndCpuBackend(get_target("cpu"), run_seed=0, factor=10.0, baselines_too=True,
                                        fault_when_slow=fault)

    s = settings(tmp_path, final_reps=7, seed=0)
    with pytest.raises(MachineFault, match="No space left on device"):
        tune(s, console=QUIET, backend=backend("write: No space left on device"))
    before = len(Store.for_run(tmp_path / "run").records(phase="baseline"))
    run = resume(tmp_path / "run", console=QUIET, backend=backend(""))
    assert len(Store.for_run(run).records(phase="baseline")) > before
    assert build_leaderboard(run).remeasure.baselines is not None


def test_the_baselines_are_warmed_up_as_the_run_says(tmp_path):
    """A config's `warmup` warmed up the variants only: the baselines took 2 whatever it said."""
    from forge.backends.cpu.backend import CpuBackend

    class Recording(CpuBackend):
        def baselines(self, problem, cache_dir, **kwargs):  # noqa: ANN001, ANN201
            (tmp_path / "warmup").write_text(str(kwargs["warmup"]))
            return super().baselines(problem, cache_dir, **kwargs)

    tune(settings(tmp_path, trials=1, top_k=0, warmup=3), console=QUIET, backend=Recording(get_target("cpu")))
    assert (tmp_path / "warmup").read_text() == "3"


def test_a_store_that_cannot_be_written_mid_run_stops_it_resumably(tmp_path, monkeypatch):
    """A full disk under the run folder: the run stops with the store's reason and how to continue,
    keeps every record written before, and the resume finishes it."""
    from io import StringIO

    from forge.results.store import StoreError

    add = Store.add

    def full_after_three(self, rec):
        if rec.phase == "search" and self.count() >= 3 + sum(1 for r in self.records() if r.phase != "search"):
            raise StoreError("run", f"cannot write {self.path}: database or disk is full")
        return add(self, rec)

    monkeypatch.setattr(Store, "add", full_after_three)
    out = StringIO()
    with pytest.raises(StoreError, match="database or disk is full"):
        tune(settings(tmp_path), console=Console(file=out, width=300))
    said = out.getvalue()
    assert "stopped after" in said and f"continue with: forge tune --resume {tmp_path / 'run'}" in said, said
    assert len(Store.for_run(tmp_path / "run").records(phase="search")) == 3
    monkeypatch.setattr(Store, "add", add)
    run = resume(tmp_path / "run", console=QUIET)
    assert len(Store.for_run(run).records(phase="search")) == 8


def test_a_run_stopped_before_recording_anything_is_not_taken_over_by_another_problem(tmp_path, monkeypatch):
    """Stopped during its baselines, a run has run.json and no records: `--out` of another problem
    used to take the folder over and rewrite run.json; the same problem starts it again."""
    import forge.tuner

    def stop(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(forge.tuner, "measure_baselines", stop)
    with pytest.raises(KeyboardInterrupt):
        tune(settings(tmp_path), console=QUIET)
    assert Store.for_run(tmp_path / "run").count() == 0
    monkeypatch.undo()
    with pytest.raises(ForgeInputError, match=r"--out: .* holds a run of softmax\[M=128,N=256\] float32 on cpu "
                                              r"\(started, nothing recorded yet\), not rmsnorm\[M=128,N=256\]"):
        tune(settings(tmp_path, op="rmsnorm"), console=QUIET)
    assert json.loads((tmp_path / "run" / "run.json").read_text())["problem"]["op"] == "softmax"
    run = tune(settings(tmp_path, trials=2, top_k=0), console=QUIET)
    assert len(Store.for_run(run).records(phase="search")) == 2


def test_a_damaged_optuna_study_is_set_aside_and_the_resume_goes_on(tmp_path):
    """optuna.sqlite holds nothing forge.sqlite does not: damaged, it is begun again from the records."""
    from io import StringIO

    run = tune(settings(tmp_path, sampler="tpe", trials=3, top_k=0), console=QUIET)
    (run / "optuna.sqlite").write_text("not a database")
    out = StringIO()
    resume(run, console=Console(file=out, width=300), trials=5)
    assert len(Store.for_run(run).records(phase="search")) == 5
    assert "optuna.sqlite did not read" in out.getvalue() and len(list(run.glob("optuna.sqlite.damaged-*"))) == 1


def test_out_into_a_folder_of_other_files_is_refused(tmp_path):
    """forge.sqlite and run.json written among a user's own files mixed a run into them."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "notes.txt").write_text("mine")
    with pytest.raises(ForgeInputError, match=r"--out: .* holds files that are not a forge run's \(notes.txt\); "
                                              r"give a new or empty folder"):
        tune(settings(tmp_path), console=QUIET)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["notes.txt"]
    # forge's own leftovers and hidden files are no one else's: a bench case that failed before its
    # run.json (its marker), a kill between run.json's write and rename, a .gitkeep
    (tmp_path / "run" / "notes.txt").unlink()
    for name in ("bench_case.json", "run.json.tmp", ".gitkeep"):
        (tmp_path / "run" / name).write_text("{}")
    run = tune(settings(tmp_path, trials=1, top_k=0), console=QUIET)
    assert Store.for_run(run).count() >= 1


def test_a_full_disk_under_the_build_cache_stops_the_run_resumably(tmp_path):
    """A variant that failed to build because the disk is full is no fault of its code: recorded
    as a compile error, every later variant would fail too and a resume would never retry them.
    The run stops instead, naming the fault, and the resume goes on."""
    from io import StringIO

    from forge.errors import MachineFault
    from forge.testing import DiskFullCpuBackend

    (tmp_path / "marks").mkdir()
    backend = DiskFullCpuBackend(get_target("cpu"), str(tmp_path / "marks"), builds=3)
    out = StringIO()
    with pytest.raises(MachineFault, match="No space left on device .*not recorded as failed"):
        tune(settings(tmp_path), console=Console(file=out, width=300), backend=backend)
    assert f"continue with: forge tune --resume {tmp_path / 'run'}" in out.getvalue()
    records = Store.for_run(tmp_path / "run").records(phase="search")
    assert records and all(r.status != "compile_error" for r in records)
    run = resume(tmp_path / "run", console=QUIET)
    assert len(Store.for_run(run).records(phase="search")) == 8


def test_a_resumed_run_whose_baselines_were_timed_with_the_re_measure_does_not_time_them_again(tmp_path,
                                                                                               monkeypatch):
    """Baselines timed right before the re-measure (a run over BASELINE_RETIME_AFTER_S long) are
    timed with it, shift or not: the run times them no more, and neither does a resume of the
    finished run. It did: the resume found the re-measure shifted and the baselines older than it,
    and timed them again, then, not with the re-measure, and the speedups took those times."""
    from forge.testing import SlowerAtTheEndCpuBackend

    monkeypatch.setattr("forge.tuner.BASELINE_RETIME_AFTER_S", 0.0)

    def backend() -> SlowerAtTheEndCpuBackend:
        return SlowerAtTheEndCpuBackend(get_target("cpu"), run_seed=0, factor=10.0, baselines_too=True)

    run = tune(settings(tmp_path, final_reps=7, seed=0), console=QUIET, backend=backend())
    timed = [r.timestamp for r in Store.for_run(run).records(phase="baseline")]
    assert build_leaderboard(run).remeasure.factor == pytest.approx(10.0)
    resume(run, console=QUIET, backend=backend())
    assert [r.timestamp for r in Store.for_run(run).records(phase="baseline")] == timed


def test_a_runs_benchmark_criterion_reaches_the_check_of_every_variant(tmp_path):
    """A bench case's criterion travels with the run's problem to the check in the device slot: a
    criterion no float32 kernel meets (every value exact) fails every variant, by name."""
    exact = {"kind": "sol", "max_atol": 0, "max_rtol": 0, "required_matched_ratio": 1.0}
    run = tune(settings(tmp_path, trials=2, top_k=0, acceptance=exact), console=QUIET)
    records = Store.for_run(run).records(phase="search")
    assert len(records) == 2 and all(r.status == "incorrect" and r.reason.startswith("SOL-ExecBench's criterion")
                                     for r in records), [(r.status, r.reason) for r in records]
