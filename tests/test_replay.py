"""Replay backend, budget accounting, exact random-search expectation and the `forge replay` CLI."""
from __future__ import annotations

import gzip
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from forge.backends.replay import NOT_IN_CACHE, ReplayBackend, load_cache
from forge.commands.replay import register
from forge.errors import ForgeInputError
from forge.search.random_baseline import expected_best_random, score
from forge.search.random_strategy import RandomStrategy
from forge.search.replay_run import run_replay
from forge.search.strategy import Strategy

PARAMS = {"bx": [16, 32, 64, 128], "ty": [1, 2, 3, 4], "mode": [0, 1]}


def _time(bx: int, ty: int, mode: int) -> float:
    return 1.0 + abs(np.log2(bx) - 5) * 0.4 + (ty - 3) ** 2 * 0.3 + mode * 0.5   # optimum 1.0 at (32,3,0)


def write_cache(path: Path, gz: bool = False) -> Path:
    """Tiny Kernel Tuner-format cache: bx=128 with ty=4 is infeasible (absent), ty=1 with mode=1
    fails at runtime, (16,2,0) fails to compile."""
    cache = {}
    for bx, ty, mode in itertools.product(*PARAMS.values()):
        if bx == 128 and ty == 4:
            continue
        rec = {"bx": bx, "ty": ty, "mode": mode, "compile_time": 100.0, "verification_time": 0,
               "benchmark_time": 20.0}
        rec["time"] = ("RuntimeFailedConfig" if (ty == 1 and mode == 1) else
                       "CompilationFailedConfig" if (bx, ty, mode) == (16, 2, 0) else _time(bx, ty, mode))
        cache[f"{bx},{ty},{mode}"] = rec
    doc = {"device_name": "toy", "kernel_name": "toy_kernel", "problem_size": [64],
           "tune_params_keys": list(PARAMS), "tune_params": PARAMS, "objective": "time", "cache": cache}
    text = json.dumps(doc)
    if gz:
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


@pytest.fixture
def toy(tmp_path):
    return load_cache(write_cache(tmp_path / "toy.json"))


def test_load_plain_and_gzip_agree(tmp_path, toy):
    gz = load_cache(write_cache(tmp_path / "toy_cache.gz", gz=True))   # any path, any suffix
    assert len(toy.enumeration) == len(gz.enumeration) == 32 - 2
    assert np.array_equal(toy.status, gz.status)
    assert [p.name for p in toy.space.params] == list(PARAMS)          # tune_params_keys order
    assert all(p.ordered for p in toy.space.params)
    assert toy.optimum_s == pytest.approx(1.0e-3)                     # ms -> s
    assert sorted(set(toy.status)) == ["compile_error", "ok", "runtime_error"]
    assert int((toy.status == "runtime_error").sum()) == 4
    assert toy.cost_s[0] == pytest.approx(0.12)                       # compile + verify + benchmark


def test_space_constraint_is_not_in_cache_vectorised(toy):
    assert toy.space.check({"bx": 128, "ty": 4, "mode": 0})[0].startswith(NOT_IN_CACHE)
    assert toy.space.check({"bx": 32, "ty": 3, "mode": 0}) == []
    enum = toy.space.enumerate()                                      # vectorised over the product
    assert np.array_equal(enum.valid, toy.enumeration.valid)
    assert enum.reason_counts == {NOT_IN_CACHE: 2}


def test_backend_evaluate(toy):
    be = ReplayBackend(toy)
    v, st, cost = be.evaluate({"bx": 32, "ty": 3, "mode": 0})
    assert (v, st) == (pytest.approx(1.0e-3), "ok") and cost == pytest.approx(0.12)
    assert be.evaluate({"bx": 64, "ty": 1, "mode": 1})[:2] == (None, "runtime_error")
    assert be.evaluate({"bx": 16, "ty": 2, "mode": 0})[:2] == (None, "compile_error")
    assert be.evaluate({"bx": 128, "ty": 4, "mode": 0}) == (None, "invalid", 0.0)
    assert be.evaluate({"bx": 7, "ty": 4, "mode": 0}) == (None, "invalid", 0.0)


def test_bad_cachefile_is_input_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"cache": {}}')
    with pytest.raises(ForgeInputError, match="tune_params_keys"):
        load_cache(bad)
    with pytest.raises(ForgeInputError, match="no such file"):
        load_cache(tmp_path / "missing.json")
    failed = tmp_path / "failed.json"       # no optimum, no random expectation: said, not a traceback
    failed.write_text(json.dumps({"tune_params_keys": ["a"], "tune_params": {"a": [1, 2]},
                                  "cache": {"1": {"a": 1, "time": "RuntimeFailedConfig"},
                                            "2": {"a": 2, "time": "CompilationFailedConfig"}}}))
    with pytest.raises(ForgeInputError, match="none of its 2 configurations ran successfully"):
        load_cache(failed)
    res = CliRunner().invoke(_app(), ["replay", str(failed)])
    assert res.exit_code == 2 and "ran successfully" in res.output
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "bench.json").write_text("{}")
    with pytest.raises(ForgeInputError, match="is a bench folder; replay one of its cases' runs"):
        load_cache(tmp_path / "bench")


def _damaged(edit) -> dict:
    """The toy cache's document with one part changed by `edit`."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        doc = json.loads(write_cache(Path(d) / "toy.json").read_text())
    edit(doc)
    return doc


def _record(doc: dict) -> dict:
    return next(iter(doc["cache"].values()))


@pytest.mark.parametrize("edit, needle", [
    (lambda d: d.update(cache=[1, 2]), "cache must map"),
    (lambda d: d.update(tune_params=[1, 2]), "tune_params must map"),
    (lambda d: d.update(tune_params_keys=["bx", "ty"]), "must name the same parameters"),
    (lambda d: d["cache"].update(x=5), "record 'x' is not an object"),
    (lambda d: _record(d).update(time=0.0), "has time 0.0"),
    (lambda d: _record(d).update(time=-1.0), "has time -1.0"),
    (lambda d: _record(d).update(time=None), "has time None"),
    (lambda d: _record(d).update(time="8.0"), "has time '8.0'"),
    (lambda d: _record(d).pop("time"), "has time None"),
    (lambda d: _record(d).pop("ty"), "lacks a parameter"),
    (lambda d: d["cache"].update(copy=dict(_record(d))), "repeats the point of another record"),
])
def test_a_damaged_cache_is_named_not_read_as_failures_or_a_wrong_optimum(tmp_path, edit, needle):
    """Times that are not positive numbers or Kernel Tuner's failure markers, records that are not
    objects, and parameter lists that disagree would pass as failures, fold points together or
    set a negative optimum: each is an input error naming the record or key."""
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(_damaged(edit)))
    with pytest.raises(ForgeInputError, match=re.escape(needle)):
        load_cache(path)
    res = CliRunner().invoke(_app(), ["replay", str(path)])
    assert res.exit_code == 2 and needle in " ".join(res.output.split())


def test_a_budget_covering_the_whole_space_is_said_and_not_scored(tmp_path):
    res = CliRunner().invoke(_app(), ["replay", str(write_cache(tmp_path / "c.json")), "--budget", "1000",
                                      "--seeds", "2", "--strategy", "random"])
    assert res.exit_code == 0, res.output
    assert "note: the budget 1000 covers all" in res.output and "score         —" in res.output
    # said before the runs, which stop at the space's size (a strategy over a large space takes long)
    assert res.output.index("covers all") < res.output.index("space      ")
    n = res.output.split("covers all ")[1].split()[0]
    assert f"each run stops at {n}" in res.output and f"budget {n} unique valid evaluations" in res.output


class _Wasteful(Strategy):
    """Proposes an infeasible point and a repeat before every new valid point."""

    name = "wasteful"

    def ask(self, n):
        free = np.flatnonzero(~self.proposed)
        if not len(free):
            return []
        row = int(free[0])
        self.proposed[row] = True
        out = [{"bx": 128, "ty": 4, "mode": 1}, self.config(row)]
        if row > 0:
            out.append(self.config(0))
        return out

    def tell(self, config, value):
        super().tell(config, value)


def test_budget_counts_unique_valid_evaluations_only(toy):
    r = run_replay(toy, _Wasteful(toy.enumeration, 0), budget=7)
    assert r.evaluations == 7 and len(r.trace) == 7
    assert r.infeasible == 7                       # proposed, never counted, never told
    assert r.simulated_s == pytest.approx(7 * 0.12)


def test_failures_count_and_are_told_none(toy):
    r = run_replay(toy, "random", budget=len(toy.enumeration), seed=3)
    assert r.evaluations == 30 and r.failures == 5
    assert r.best_s == pytest.approx(toy.optimum_s)
    assert np.all(np.diff(r.trace) <= 0)


def test_expectation_exact_on_tiny_space_by_enumeration():
    times = np.array([3.0, 1.0, np.nan, 2.0, 5.0, np.nan, 4.0])
    for b in (1, 2, 3, 5, 7):
        draws = list(itertools.combinations(range(len(times)), b))
        vals = []
        for d in draws:
            ok = times[list(d)][np.isfinite(times[list(d)])]
            vals.append(ok.min() if len(ok) else 5.0)       # nothing found -> worst success
        assert expected_best_random(times, 0, b) == pytest.approx(np.mean(vals), rel=1e-12)


def test_expectation_matches_monte_carlo_on_real_space():
    pn = Path(__file__).resolve().parents[2] / "shared/data/tuningdata/pnpoly/RTX_3090.json.gz"
    data = load_cache(pn) if pn.is_file() else None
    if data is None:
        pytest.skip("shared tuningdata not present")
    rng = np.random.default_rng(0)
    t = np.where(data.status == "ok", data.time_s, np.inf)
    for b in (5, 25, 100):
        sims = np.array([t[rng.choice(len(t), b, replace=False)].min() for _ in range(4000)])
        exact = expected_best_random(data.time_s, 0, b)
        assert abs(sims.mean() - exact) < 4 * sims.std() / np.sqrt(len(sims)) + 1e-12
    assert score(data.optimum_s, 2.0, data.optimum_s) == 1.0 and score(2.0, 2.0, 1.0) == 0.0
    # random surely finds the optimum: 0/0, also where the exact sum rounds a hair above it
    assert score(1.0, 1.0, 1.0) is None and score(1.0, 1.0 + 2e-16, 1.0) is None


def _app():
    app = typer.Typer()
    register(app)

    @app.command("noop")
    def noop() -> None:  # a second command so typer keeps sub-command names
        pass

    return app


def test_cli_replay(tmp_path):
    path = write_cache(tmp_path / "toy.json.gz", gz=True)
    res = CliRunner().invoke(_app(), ["replay", str(path), "--strategy", "forge", "--budget", "20",
                                      "--seeds", "2"])
    assert res.exit_code == 0, res.output
    assert "best/optimum  1.0000" in res.output and "score         1.0000" in res.output
    bad = CliRunner().invoke(_app(), ["replay", str(path), "--strategy", "nope"])
    assert bad.exit_code == 2 and "unknown strategy" in bad.output
    one = CliRunner().invoke(_app(), ["replay", str(path), "--budget", "3", "--seeds", "1"])
    assert one.exit_code == 0 and "1 seed, batch 1" in one.output, one.output
    folder = CliRunner().invoke(_app(), ["replay", str(tmp_path)])          # a folder, not a run: the argument named
    assert folder.exit_code == 2 and "error: cachefile:" in folder.output and "not a forge run folder" in folder.output


def test_cli_replay_says_when_every_seed_made_the_same_run(tmp_path, monkeypatch):
    """A strategy that ignores the seed (unscrambled Sobol on some spaces) gives one run however
    many seeds: said, since its ± 0 would read as a precise mean."""
    import forge.search.replay_run as replay_run

    real = replay_run.run_replay
    monkeypatch.setattr(replay_run, "run_replay", lambda data, strategy, budget, seed, **kw: real(data, strategy, budget,
                                                                                                  seed=0, **kw))
    path = write_cache(tmp_path / "toy.json")
    res = CliRunner().invoke(_app(), ["replay", str(path), "--strategy", "random", "--budget", "3", "--seeds", "2"])
    assert res.exit_code == 0 and "every seed made the same run (random ignores the seed" in res.output, res.output


def test_cli_replay_strategy_options(tmp_path):
    path = write_cache(tmp_path / "toy.json.gz", gz=True)
    res = CliRunner().invoke(_app(), ["replay", str(path), "--budget", "5", "--seeds", "2",
                                      "--options", "acquisition=ei,cap=null"])
    assert res.exit_code == 0, res.output
    assert "options acquisition=ei, cap=None" in res.output
    data = load_cache(path)
    best = np.array([run_replay(data, "forge", 5, seed=s, acquisition="ei", cap=None).best_s for s in (0, 1)])
    assert f"best/optimum  {best.mean() / data.optimum_s:.4f} ± {best.std(ddof=1) / np.sqrt(2) / data.optimum_s:.4f}" in res.output
    typo = CliRunner().invoke(_app(), ["replay", str(path), "--options", "acquistion=ei"])
    assert typo.exit_code == 2 and "--options.acquistion: not an option of forge" in typo.output
    assert "acquisition" in typo.output.split("allowed:")[1]


def test_cli_export_round_trips(tmp_path):
    src = write_cache(tmp_path / "toy.json", gz=False)
    out = tmp_path / "copy.json.gz"
    res = CliRunner().invoke(_app(), ["replay", str(src), "--export", str(out)])
    assert res.exit_code == 0, res.output
    a, b = load_cache(src), load_cache(out)
    assert np.array_equal(a.flat, b.flat) and np.array_equal(a.time_s, b.time_s, equal_nan=True)
    missing = CliRunner().invoke(_app(), ["replay", str(tmp_path / "absent"), "--export", str(out)])
    assert missing.exit_code == 2 and "absent" in missing.output
    txt = CliRunner().invoke(_app(), ["replay", str(src), "--export", str(tmp_path / "copy.txt")])
    assert txt.exit_code == 2 and "named .json or .json.gz" in txt.output and not (tmp_path / "copy.txt").exists()


def test_a_run_exported_keeps_a_point_rejected_after_its_build_as_a_failure(tmp_path):
    """A variant ptxas rejected for spills cost its compile: in the replayed space it is a failed
    evaluation, not an infeasible point (one rejected before any build stays absent)."""
    from forge.backends.replay.from_run import cache_doc_from_run
    from forge.results import Record, Store

    store = Store.for_run(tmp_path)
    base = dict(run_id="r", op="softmax", shape={"M": 8, "N": 64}, dtype="float32", target="h100", phase="search")
    for n, (status, built) in enumerate((("ok", True), ("invalid", True), ("invalid", False))):
        store.add(Record(**base, variant_key=f"v{n}", config={"t": n}, status=status, trial=n,
                         timings=[1e-6] * 3 if status == "ok" else [], source_hash="abc" if built else "",
                         extra={"build_seconds": 0.5}))
    store.close()
    (tmp_path / "run.json").write_text(json.dumps({
        "status": "complete", "problem": {"op": "softmax", "shape": {"M": 8, "N": 64}, "dtype": "float32", "attrs": {}},
        "target": {"name": "h100", "description": "H100"}, "space": {"params": {"t": [0, 1, 2]}, "valid": 3}}))
    cache = cache_doc_from_run(tmp_path)["cache"]
    assert set(cache) == {"0", "1"} and cache["1"]["time"] == "CompilationFailedConfig"
    assert cache["1"]["compile_time"] == 500.0                       # what replaying it costs


def test_space_anatomy_tail_and_its_random_hit_chance(capsys):
    """benchmarks/space_anatomy.py: the exact chance of drawing one of k marked points matches
    enumeration, and on convolution it finds the 37-point tail benchmarks/search_design_log.md argues from."""
    root = Path(__file__).resolve().parents[1]
    anatomy = _benchmark_module("space_anatomy")
    n, k, b = 9, 2, 3
    draws = list(itertools.combinations(range(n), b))
    exact = sum(1 for d in draws if min(d) < k) / len(draws)          # marked points are 0..k-1
    assert anatomy.p_hit_random(n, k, b) == pytest.approx(exact, rel=1e-12)
    assert anatomy.p_hit_random(n, 0, b) == 0.0 and anatomy.p_hit_random(n, k, n - 1) == 1.0
    conv = root.parent / "shared/data/tuningdata/convolution_milo/A100.json.gz"
    if not conv.is_file():
        pytest.skip("shared tuningdata not present")
    anatomy.main([str(conv), "--no-runs"])
    out = capsys.readouterr().out
    assert "optimum's path: read_only=1,use_padding=0,use_shmem=1" in out
    assert "37 = 0.85% of the space" in out and "within 100 evaluations with P = 0.578" in out
    assert "k=1: 22 local optima" in out and "k=2: 4 local optima" in out


def test_space_anatomy_steepest_descent_matches_pairwise_search():
    """The group-by steepest descent equals the definition: every row's best neighbour found by
    comparing all row pairs, on a random space with holes (invalid points) and failures."""
    anatomy = _benchmark_module("space_anatomy")
    grid = np.array([[1, 5, 9], [5, 8, 7], [9, 7, 2]], dtype=float)    # (0,0) global, (2,2) local
    valid = np.array([(a, b) for a in range(3) for b in range(3)])
    t = grid[valid[:, 0], valid[:, 1]]
    opt1, end1 = anatomy.steepest_descent(valid, t, 1)
    assert set(np.flatnonzero(opt1)) == {0, 8} and end1[7] == 8 and end1[1] == 0
    opt2, end2 = anatomy.steepest_descent(valid, t, 2)
    assert set(np.flatnonzero(opt2)) == {0} and (end2 == 0).all()

    rng = np.random.default_rng(3)
    full = np.array(list(itertools.product(range(3), range(4), range(2), range(3))))
    valid = full[rng.random(len(full)) < 0.7]
    t = rng.random(len(valid))
    t[rng.random(len(valid)) < 0.1] = np.inf
    for k in (1, 2, 3):
        local_optimum, end = anatomy.steepest_descent(valid, t, k)
        dist = np.count_nonzero(valid[:, None, :] != valid[None, :, :], axis=2)
        nxt = np.array([np.flatnonzero(dist[r] <= k)[np.argmin(t[dist[r] <= k])] for r in range(len(t))])
        nxt = np.where(t[nxt] < t, nxt, np.arange(len(t)))
        assert np.array_equal(local_optimum, nxt == np.arange(len(t)))
        want = nxt.copy()
        for _ in range(len(t)):
            want = nxt[want]
        assert np.array_equal(end, want)


def test_space_anatomy_path_identification_counts_draws_that_rank_the_optimum_path_first():
    """k points per path: the optimum's path is ranked first exactly when the draws show its
    advantage. Path A holds the optimum in one of four points, path B is uniformly second best."""
    anatomy = _benchmark_module("space_anatomy")
    t = np.array([1.0, 100, 100, 100, 2, 2, 2, 2])
    paths = np.array(["A"] * 4 + ["B"] * 4)
    rng = np.random.default_rng(0)
    every = anatomy.path_identification(t, paths, 4, 50, rng)
    assert every["least drawn"] == 1.0
    one = anatomy.path_identification(t, paths, 1, 400, rng)
    assert one["least drawn"] == pytest.approx(0.25, abs=0.06)      # A wins only when its 1.0 is drawn
    two = anatomy.path_identification(t, paths, 2, 400, rng)
    assert two["least drawn"] == pytest.approx(0.5, abs=0.07)       # 1 - C(3,2)/C(4,2)


def test_space_anatomy_within_path_runs_on_that_path_alone(tmp_path, capsys):
    """--within-path: the strategy sees only the optimum's path (mode=0 in the toy space), so a
    budget of the path's size finds the optimum in every seed; proposals never leave the path."""
    anatomy = _benchmark_module("space_anatomy")
    data = load_cache(write_cache(tmp_path / "toy.json"))
    rows = np.flatnonzero(data.enumeration.valid[:, 2] == 0)              # mode is the third parameter
    cut = anatomy.within(data, rows)
    assert len(cut.enumeration) == len(rows) == 15 and cut.optimum_s == data.optimum_s
    r = run_replay(cut, "random", 15, seed=1)
    assert {c["mode"] for c in r.proposals} == {0} and len(r.proposals) == 15
    anatomy.main([str(tmp_path / "toy.json"), "--seeds", "3", "--budgets", "2,15", "--jobs", "1",
                  "--strategy", "random", "--within-path"])
    out = capsys.readouterr().out
    assert "random told the path (run on its 15 points alone), the same seeds:" in out
    assert "B=15: mean best/opt 1.000, within 1.10x in 100% of seeds" in out


def _benchmark_module(name: str):
    import importlib.util
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location(name, root / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_search_efficiency_second_seed_set_runs_those_seeds(tmp_path, capsys):
    """--first-seed picks which seeds run: the table's row is the mean over exactly those seeds."""
    path = write_cache(tmp_path / "toy.json")
    efficiency = _benchmark_module("search_efficiency")
    efficiency.main([str(path), "--seeds", "2", "--first-seed", "5", "--strategies", "forge",
                     "--no-kt", "--jobs", "1", "--budgets", "4", "--markdown", str(tmp_path / "t.md")])
    out = capsys.readouterr().out
    assert "2 seeds (5-6)" in out
    data = load_cache(path)
    want = np.mean([run_replay(data, "forge", 4, seed=s).trace[3] for s in (5, 6)]) / data.optimum_s
    row = next(line for line in (tmp_path / "t.md").read_text().splitlines() if "| forge |" in line)
    assert f"{want:.3f}" in row


def test_space_anatomy_missing_cache_file_is_a_usage_error(tmp_path, capsys):
    anatomy = _benchmark_module("space_anatomy")
    with pytest.raises(SystemExit) as exc:
        anatomy.main([str(tmp_path / "nope.json")])
    assert exc.value.code == 2 and "nope.json" in capsys.readouterr().err


@pytest.mark.parametrize("args, needle", [(["--budgets", "50,x"], "--budgets"), (["--budgets", "0"], ">= 1"),
                                          (["--seeds", "0"], ">= 1"), (["--identify", "5,a"], "--identify"),
                                          (["--identify", "0"], "--identify")])
def test_space_anatomy_bad_budgets_or_seeds_are_usage_errors(args, needle, capsys):
    anatomy = _benchmark_module("space_anatomy")
    space = str(Path(__file__).parents[1] / "benchmarks" / "spaces" / "cpu_conv2d.json.gz")
    with pytest.raises(SystemExit) as exc:
        anatomy.main([space, *args])
    assert exc.value.code == 2 and needle in capsys.readouterr().err


@pytest.mark.parametrize("args, needle", [(["--batch", "0"], "--batch"), (["--seeds", "1"], "--seeds >= 2"),
                                          (["--budgets", "5,x"], "--budgets"), (["nope.json"], "nope.json")])
def test_async_batch_bad_arguments_are_usage_errors(args, needle, capsys):
    async_batch = _benchmark_module("async_batch")
    space = str(Path(__file__).parents[1] / "benchmarks" / "spaces" / "cpu_conv2d.json.gz")
    with pytest.raises(SystemExit) as exc:
        async_batch.main(args if args[0] == "nope.json" else [space, *args])
    assert exc.value.code == 2 and needle in capsys.readouterr().err


def test_search_efficiency_standard_error_is_over_the_seeds(tmp_path, capsys):
    """--se prints each mean's standard error: the sample deviation of the seeds' best over sqrt(seeds)."""
    path = write_cache(tmp_path / "toy.json")
    efficiency = _benchmark_module("search_efficiency")
    efficiency.main([str(path), "--seeds", "3", "--strategies", "random", "--no-kt", "--jobs", "1",
                     "--budgets", "2", "--se", "--markdown", str(tmp_path / "t.md")])
    data = load_cache(path)
    best = np.array([run_replay(data, "random", 2, seed=s).trace[1] for s in range(3)]) / data.optimum_s
    row = next(line for line in (tmp_path / "t.md").read_text().splitlines() if "| random |" in line)
    assert f"{best.mean():.3f} ± {best.std(ddof=1) / np.sqrt(3):.3f} (" in row
    assert "± its standard error over the seeds" in capsys.readouterr().out


def test_search_efficiency_compares_every_kernel_tuner_strategy():
    """The issue compares forge with *every* Kernel Tuner strategy: the default --kt list is all
    that the installed Kernel Tuner registers, brute force aside (it is the cache itself)."""
    interface = pytest.importorskip("kernel_tuner.interface")
    efficiency = _benchmark_module("search_efficiency")
    assert set(efficiency.KT_STRATEGIES) == set(interface._STRATEGY_IMPORTS) - {"brute_force"}


def test_search_efficiency_compares_every_plain_optuna_sampler():
    """The issue compares forge with every plain Optuna sampler: the default --strategies list holds
    each one forge registers (grid aside: it enumerates the space, it does not search it)."""
    from forge.search.strategies import OPTUNA_SAMPLERS

    efficiency = _benchmark_module("search_efficiency")
    assert {f"optuna-{s}" for s in OPTUNA_SAMPLERS if s != "grid"} <= set(efficiency.FORGE_STRATEGIES)


def test_search_efficiency_compare_calls_differences_within_two_standard_errors_level():
    efficiency = _benchmark_module("search_efficiency")
    ref = np.array([1.00, 1.02, 1.04, 1.06])             # mean 1.03, se 0.0129
    assert efficiency.compare(ref, ref + 0.10) == "ahead"
    assert efficiency.compare(ref, ref - 0.10) == "behind"
    assert efficiency.compare(ref, ref + 0.02) == "level"  # 0.02 < 2 * hypot(se, se) = 0.0365
    assert efficiency.compare(np.array([1.0]), np.array([1.5])) == "level"    # one seed: no error bar, no verdict


def test_search_efficiency_reads_the_table_against_the_targets(tmp_path):
    """The reading names each best/optimum target met or not, and every strategy the reference is
    behind or level with at the budgets where it must be ahead of all."""
    efficiency = _benchmark_module("search_efficiency")
    (tmp_path / "t.yaml").write_text("best_over_optimum:\n  toy/X: {2: 1.05, 3: 1.30}\nbetter_than_all_at: [2, 3]\n")
    targets = efficiency.load_targets(tmp_path / "t.yaml")
    seeds = np.array([[1.4, 1.2, 1.10], [1.4, 1.2, 1.12]])
    ratios = {"toy/X": {"forge": seeds, "slow": seeds + 0.5, "fast": seeds - 0.1, "same": seeds + 0.001}}
    lines = efficiency.read_against(ratios, "forge", [1, 2, 3], targets)
    text = "\n".join(lines)
    assert "toy/X B=2: forge 1.200 ± 0.000, target <= 1.05: NOT met" in text
    assert "toy/X B=3: forge 1.110 ± 0.010, target <= 1.30: met" in text
    assert "toy/X B=3: forge 1.110 is ahead of 1 of 3; behind: fast 1.010; level: same 1.111" in text
    assert text.endswith("better than every other strategy at B=3 on every space: no")
    alone = efficiency.read_against({"toy/X": {"forge": seeds, "slow": seeds + 0.5}}, "forge", [2, 3], targets)
    assert alone[-2:] == [f"better than every other strategy at B={b} on every space: yes" for b in (2, 3)]
    nobody = efficiency.read_against({"toy/X": {"forge": seeds}}, "forge", [2, 3], targets)
    assert nobody[-1] == "better than every other strategy at B=3 on every space: no"   # nothing to be better than
    # a strategy that did not run is named beside the verdict it is missing from
    partly = efficiency.read_against({"toy/X": {"forge": seeds, "slow": seeds + 0.5}}, "forge", [2, 3], targets,
                                     {"KT skopt": "ModuleNotFoundError: No module named 'skopt'"})
    assert partly[-1] == ("better than every other strategy at B=3 on every space: yes (of those that ran; not run, "
                          "so not compared: KT skopt (ModuleNotFoundError: No module named 'skopt'))")


def test_kernel_tuner_space_leaves_out_invalid_config_records():
    """An InvalidConfig record is outside the space for forge (the same as absent) and for Kernel
    Tuner's restriction alike; a failure that cost a compile is inside both."""
    efficiency = _benchmark_module("search_efficiency")
    cache = {"cache": {"1": {"a": 1, "time": 2.0}, "2": {"a": 2, "time": "RuntimeFailedConfig"},
                       "3": {"a": 3, "time": "InvalidConfig"}}}
    rule = efficiency.in_space_rule(cache, ["a"])
    assert [rule(v) for v in (1, 2, 3, 4)] == [True, True, False, False]


def test_search_efficiency_marks_strategies_designed_on_the_space(tmp_path):
    """A strategy selected on a space is marked where the reference is behind or level with it on
    that space, with a footnote; the verdicts do not change."""
    efficiency = _benchmark_module("search_efficiency")
    (tmp_path / "t.yaml").write_text("better_than_all_at: [2]\ndesigned_on:\n  fast: [toy/X]\n")
    targets = efficiency.load_targets(tmp_path / "t.yaml")
    seeds = np.array([[1.4, 1.2], [1.4, 1.2]])
    ratios = {"toy/X": {"forge": seeds, "fast": seeds - 0.1}, "toy/Y": {"forge": seeds, "fast": seeds - 0.1}}
    lines = efficiency.read_against(ratios, "forge", [1, 2], targets)
    assert "toy/X B=2: forge 1.200 is ahead of 0 of 1; behind: fast* 1.100; level: none" in lines
    assert "toy/Y B=2: forge 1.200 is ahead of 0 of 1; behind: fast 1.100; level: none" in lines
    assert lines[-2] == "better than every other strategy at B=2 on every space: no"
    assert lines[-1].startswith("* this space is among the problems the strategy was designed on")
    plain = efficiency.read_against({"toy/Y": ratios["toy/Y"]}, "forge", [1, 2], targets)
    assert not any(line.startswith("* ") for line in plain)


@pytest.mark.parametrize("args, needle", [(["--reference", "optuna-tpe"], "--reference"),
                                          (["--targets", "MISSING"], "--targets"),
                                          (["--targets", "BAD"], "better_than_al_at"), (["--targets", "NOTMAP"], "best_over_optimum")])
def test_search_efficiency_bad_reference_or_targets_are_usage_errors(args, needle, tmp_path, capsys):
    efficiency = _benchmark_module("search_efficiency")
    (tmp_path / "bad.yaml").write_text("better_than_al_at: [50]\n")
    (tmp_path / "notmap.yaml").write_text("best_over_optimum: [1.03]\n")
    files = {"MISSING": tmp_path / "nope.yaml", "BAD": tmp_path / "bad.yaml", "NOTMAP": tmp_path / "notmap.yaml"}
    args = [str(files.get(x, x)) for x in args]
    with pytest.raises(SystemExit) as exc:
        efficiency.main([str(write_cache(tmp_path / "toy.json")), "--strategies", "forge", "--no-kt", *args])
    assert exc.value.code == 2 and needle in capsys.readouterr().err


def test_score_is_undefined_when_random_search_surely_finds_a_tied_optimum(tmp_path):
    """Four points, two tied at the optimum: every 3 of them hold one, so random's expected best is
    the optimum and the score is 0/0 — printed as "—" with a note, not as a perfect 1."""
    cache = {f"{x}": {"x": x, "time": t, "compile_time": 1.0, "verification_time": 0, "benchmark_time": 1.0}
             for x, t in zip((1, 2, 3, 4), (1.0, 1.0, 2.0, 3.0))}
    doc = {"device_name": "toy", "kernel_name": "tie", "problem_size": [1], "tune_params_keys": ["x"],
           "tune_params": {"x": [1, 2, 3, 4]}, "objective": "time", "cache": cache}
    path = tmp_path / "tie.json"
    path.write_text(json.dumps(doc))
    res = CliRunner().invoke(_app(), ["replay", str(path), "--budget", "3", "--seeds", "2"])
    assert res.exit_code == 0, res.output
    assert "exact random expectation 1.0000" in res.output
    assert "score         —" in res.output and "already the optimum (tied optima)" in res.output
    efficiency = _benchmark_module("search_efficiency")
    efficiency.main([str(path), "--seeds", "2", "--strategies", "random", "--no-kt", "--jobs", "1",
                     "--budgets", "1,3", "--markdown", str(tmp_path / "t.md")])
    row = next(line for line in (tmp_path / "t.md").read_text().splitlines() if "| random |" in line)
    assert row.endswith("(—) |") and "(1.000)" not in row


@pytest.mark.parametrize("args, needle", [
    (["--budgets", "0"], "--budgets: every budget must be >= 1"), (["--budgets", "-3"], ">= 1"),
    (["--budgets", "5,,10"], "--budgets: comma-separated"), (["--budgets", "abc"], "comma-separated"),
    (["--strategies", "foo"], "--strategies: unknown 'foo'"), (["--strategies", ""], "unknown ''"),
    (["--kt", "foo"], "--kt: unknown 'foo'"), (["--jobs", "0"], "--jobs must be >= 1"),
    (["--forge-options", "nope=1"], "nope"), (["--forge-options", "{bad"], "--forge-options: Expecting"),
    (["--forge-options", "n_init=5,,"], "expected NAME=VALUE"),
])
def test_search_efficiency_bad_arguments_are_usage_errors(args, needle, tmp_path, capsys):
    efficiency = _benchmark_module("search_efficiency")
    with pytest.raises(SystemExit) as exc:
        efficiency.main([str(write_cache(tmp_path / "toy.json")), "--seeds", "1", "--jobs", "1", *args])
    assert exc.value.code == 2 and needle in capsys.readouterr().err


def test_search_efficiency_names_a_bad_file_before_its_workers_start(tmp_path):
    """A file that is not a cache is named with exit 2 before the pool forks (an error raised in a
    worker once hung the pool), and forge's options are taken as `forge replay --options` takes them."""
    import subprocess
    import sys

    script = Path(__file__).parents[1] / "benchmarks" / "search_efficiency.py"
    (tmp_path / "notjson.json").write_text("not json")
    for path, needle in ((tmp_path / "nope.json.gz", "no such file"), (tmp_path / "notjson.json", "not a readable")):
        res = subprocess.run([sys.executable, str(script), str(path), "--seeds", "1", "--budgets", "2",
                              "--strategies", "random", "--no-kt", "--jobs", "2"],
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 2 and needle in res.stderr and "Traceback" not in res.stderr, res.stderr[-2000:]
    res = subprocess.run([sys.executable, str(script), str(write_cache(tmp_path / "toy.json")), "--seeds", "1",
                          "--budgets", "2", "--strategies", "forge", "--no-kt", "--jobs", "2",
                          "--forge-options", "n_init=3"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "/toy | forge |" in res.stdout, res.stderr[-2000:]


def test_an_input_error_survives_pickling():
    import pickle

    err = pickle.loads(pickle.dumps(ForgeInputError("cachefile", "x.json: no such file")))
    assert (err.field, str(err)) == ("cachefile", "cachefile: x.json: no such file")


def test_a_time_budget_needs_the_recorded_costs(tmp_path):
    """A file whose records lack compile_time, verification_time and benchmark_time has no cost to
    spend a time budget on: refused by name (as Kernel Tuner refuses it), not run for free."""
    doc = {"tune_params_keys": ["a"], "tune_params": {"a": [1, 2, 3]},
           "cache": {str(a): {"a": a, "time": float(a)} for a in (1, 2, 3)}}
    path = tmp_path / "costless.json"
    path.write_text(json.dumps(doc))
    data = load_cache(path)
    assert data.costless == 3
    with pytest.raises(ForgeInputError, match="3 of its records have none of compile_time"):
        run_replay(data, "random", budget=3, time_budget_s=1.0)
    assert run_replay(data, "random", budget=3).evaluations == 3       # a budget of evaluations runs


def test_a_parameter_of_mixed_value_kinds_is_named():
    """Numbers and strings in one parameter's values cannot be ordered: refused naming it (it was
    a TypeError from numpy)."""
    import tempfile
    doc = {"tune_params_keys": ["a"], "tune_params": {"a": [1, "x"]},
           "cache": {"1": {"a": 1, "time": 1.0}, "x": {"a": "x", "time": 2.0}}}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "mixed.json"
        path.write_text(json.dumps(doc))
        with pytest.raises(ForgeInputError, match=r"tune_params\['a'\] mixes number and str values"):
            load_cache(path)


def test_cli_replay_a_space_the_budget_covers_names_that_as_why_every_seed_made_the_same_run(tmp_path):
    """A one-point space: every seed measures it, whatever the strategy does with its seed."""
    doc = {"tune_params_keys": ["a"], "tune_params": {"a": [1]},
           "cache": {"1": {"a": 1, "time": 1.0, "compile_time": 1, "verification_time": 0, "benchmark_time": 1}}}
    path = tmp_path / "one.json"
    path.write_text(json.dumps(doc))
    res = CliRunner().invoke(_app(), ["replay", str(path), "--strategy", "random", "--budget", "3", "--seeds", "2"])
    assert res.exit_code == 0 and "every seed made the same run (the budget covers all 1 valid point)" in res.output, \
        res.output


class _Recording(RandomStrategy):
    """Random search that notes the size of every ask and the order of every tell."""

    def __init__(self, enumeration, seed=0):
        super().__init__(enumeration, seed)
        self.asks, self.tells = [], []

    def ask(self, n):
        self.asks.append(n)
        return super().ask(n)

    def tell(self, config, value):
        self.tells.append(config)
        super().tell(config, value)


def test_a_batch_runs_as_forge_tune_runs_it_each_freed_slot_refilled_while_the_rest_run(toy):
    """Three in flight: asked for three, then for one per evaluation that finishes; the recorded
    costs (0.12 s each) run side by side on the simulated clock."""
    s = _Recording(toy.enumeration, 0)
    r = run_replay(toy, s, budget=9, batch=3)
    assert s.asks == [3] + [1] * 6 and r.evaluations == 9
    assert r.simulated_s == pytest.approx(9 * 0.12) and r.elapsed_s == pytest.approx(3 * 0.12)


def test_a_batch_tells_results_in_the_order_their_recorded_costs_finish_them(toy):
    first = _Recording(toy.enumeration, 4).ask(1)[0]
    toy.cost_s[:] = 0.1
    toy.cost_s[toy.row_of_config(first)] = 1.0          # the first point asked is slow
    s = _Recording(toy.enumeration, 4)
    run_replay(toy, s, budget=8, batch=2)
    assert s.tells[-1] == first and len(s.tells) == 8   # the other slot ran the rest meanwhile
    again = _Recording(toy.enumeration, 4)
    run_replay(toy, again, budget=8, batch=2)
    assert again.tells == s.tells                       # the simulated clock: the same run every time


def test_a_time_budget_is_on_the_clock_of_the_slots_running_side_by_side(toy):
    one = run_replay(toy, "random", budget=30, seed=1, time_budget_s=0.5)
    three = run_replay(toy, "random", budget=30, seed=1, batch=3, time_budget_s=0.5)
    assert one.evaluations == 5 and three.evaluations == 15      # 0.12 s each: asked until 0.5 s passed


def test_search_efficiency_reports_a_run_past_its_limit_and_goes_on(monkeypatch, synthetic_space):
    """A strategy that never finishes on some space (Kernel Tuner's nsga2 on a small one) must not
    hang the benchmark: past --run-limit the run ends, even inside a strategy's own `except
    Exception`, and comes back as a reason, which the table prints as "skipped"."""
    import time

    efficiency = _benchmark_module("search_efficiency")

    def stuck(*args, **kwargs):
        end = time.time() + 10         # stuck for the test's purpose; never past 10 s if no alarm comes
        while time.time() < end:
            try:
                time.sleep(0.05)
            except Exception:      # noqa: BLE001 - what a strategy swallowing errors would do
                pass
        raise AssertionError("no alarm")

    monkeypatch.setattr(efficiency, "run_replay", stuck)
    monkeypatch.setattr(efficiency, "RUN_LIMIT_S", 1)
    monkeypatch.setitem(efficiency._DATA, "syn", synthetic_space)
    t0 = time.time()
    key, tr, _ = efficiency.one_run(("syn", "random", 8, 3))
    assert time.time() - t0 < 5 and key == ("syn", "random", 8, 3)
    assert tr == "a 8-evaluation run (seed 3) did not finish within --run-limit 1 s"
    monkeypatch.setattr(efficiency, "run_replay", lambda *a, **k: run_replay(synthetic_space, "random", 8, seed=3))
    assert not isinstance(efficiency.one_run(("syn", "random", 8, 3))[1], str)   # no alarm left behind
    time.sleep(1.2)


def test_search_efficiency_reads_each_budget_from_a_run_of_that_start_size():
    """forge sizes its start by its budget, so the benchmark runs it once per start size and reads
    each budget from the smallest run at least as large; other strategies run once, at the largest."""
    efficiency = _benchmark_module("search_efficiency")
    assert efficiency.run_budgets("optuna-tpe", [8, 25, 50, 100]) == [100]
    assert efficiency.run_budgets("forge", [8, 12, 25, 50, 100]) == [8, 12, 100]
    runs = {8: np.full((2, 8), 8.0), 12: np.full((2, 12), 12.0), 100: np.full((2, 100), 100.0)}
    read = efficiency.read_runs(runs)
    assert read.shape == (2, 100)
    assert (read[:, :8] == 8).all() and (read[:, 8:12] == 12).all() and (read[:, 12:] == 100).all()
