"""forge tune's search loop across stops and starts: the time budget, the bank hit and the warm start
a resume keeps, warm-start configs valid for the shape, slots kept full, trial numbers that stay unique.

The backend is forge.testing.HashTimedCpuBackend: the CPU target's space with no compiler, so each
variant costs milliseconds and measures the same time every run."""
import json
import os

import pytest
from rich.console import Console

from forge import tuner
from forge.backends import target_code
from forge.bank import offer_entries
from forge.config import TuneSettings
from forge.results import Store
from forge.targets import get_target
from forge.testing import HashTimedCpuBackend

SHAPE = {"M": 8, "N": 64}


def settings(out, **kw) -> TuneSettings:
    base = dict(op="softmax", shape=SHAPE, trials=8, reps=2, warmup=0, top_k=0, sampler="random", timeout=5.0,
                bank=False, seed=0, batch=1)
    return TuneSettings(**{**base, **kw, "out": out})


def console() -> Console:
    return Console(record=True, width=200, file=open(os.devnull, "w"))


def searched(run) -> list:
    store = Store.for_run(run)
    try:
        return sorted(store.records(phase="search"), key=lambda r: r.trial)
    finally:
        store.close()


def valid_configs(backend, *rows: int) -> list[dict]:
    space = backend.space(tuner.problem_of(settings("x")))
    enum = space.enumerate()
    return [space.config_from_indices(enum.valid[i]) for i in rows]


def bank_entry(shape: dict, config: dict, searched: int = 8) -> dict:
    return {"op": "softmax", "shape": shape, "dtype": "float32", "attrs": {}, "target": "cpu", "config": config,
            "median": 1e-3, "time_kind": "measured", "code": target_code("cpu"), "searched": searched}


@pytest.fixture
def bank(tmp_path, monkeypatch):
    monkeypatch.setenv("FORGE_BANK", str(tmp_path / "bank.sqlite"))


def stop_after(monkeypatch, n: int) -> None:
    """Ctrl-C once `n` search results are recorded (the store holds them; those in flight are lost)."""
    seen = []
    real = tuner._note_result

    def note(ctx, rec):
        real(ctx, rec)
        seen.append(rec)
        if len(seen) == n:
            raise KeyboardInterrupt

    monkeypatch.setattr(tuner, "_note_result", note)


def test_a_plain_resume_counts_the_search_time_already_spent_and_a_raised_budget_counts_afresh(tmp_path):
    be = HashTimedCpuBackend(get_target("cpu"), run_sleep=0.2)
    run = tuner.tune(settings(tmp_path / "r", trials=100, time_budget=0.7), console=console(), backend=be)
    first = len(searched(run))
    assert 2 <= first < 100
    out = console()
    tuner.resume(run, console=out, backend=be)
    assert len(searched(run)) == first and "search stopped (time budget)" in out.export_text()
    tuner.resume(run, console=console(), backend=be, time_budget=0.7)       # not raised: still spent
    assert len(searched(run)) == first
    tuner.resume(run, console=console(), backend=be, time_budget=1.4)       # raised: counted from here
    assert len(searched(run)) > first


def test_a_resumed_bank_hit_run_stays_a_bank_hit(tmp_path, bank, monkeypatch):
    be = HashTimedCpuBackend(get_target("cpu"))
    [cfg] = valid_configs(be, 7)
    offer_entries([bank_entry(SHAPE, cfg)])
    real, calls = tuner._final, []

    def final_stopped_once(ctx, executor):
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt          # Ctrl-C during the final re-measure
        return real(ctx, executor)

    monkeypatch.setattr(tuner, "_final", final_stopped_once)
    with pytest.raises(KeyboardInterrupt):
        tuner.tune(settings(tmp_path / "r", bank=True, top_k=1, final_reps=2), console=console(), backend=be)
    out = console()
    tuner.resume(tmp_path / "r", console=out, backend=be)
    assert [r.config for r in searched(tmp_path / "r")] == [cfg]
    assert "search stopped (bank hit) after 1 variant" in out.export_text()
    out = console()                                    # a raised limit asks for a search
    tuner.resume(tmp_path / "r", console=out, backend=be, trials=10)
    assert len(searched(tmp_path / "r")) == 10 and "search stopped (trials) after 10 variants" in out.export_text()
    store = Store.for_run(tmp_path / "r")
    assert store.get_meta("bank_hit") is None
    store.close()


def test_a_banked_config_that_fails_here_is_no_answer_and_the_run_searches(tmp_path, bank):
    [cfg] = valid_configs(HashTimedCpuBackend(get_target("cpu")), 7)
    be = HashTimedCpuBackend(get_target("cpu"), fails=cfg)
    offer_entries([bank_entry(SHAPE, cfg), bank_entry({"M": 16, "N": 64}, cfg)])   # a neighbour's too: no warm start
    out = console()
    run = tuner.tune(settings(tmp_path / "r", bank=True, trials=4), console=out, backend=be)
    text = out.export_text()
    recs = searched(run)
    assert recs[0].config == cfg and recs[0].status == "runtime_error" and len(recs) == 4
    assert "the banked config failed here (runtime_error" in text and "search stopped (trials)" in text
    assert "search: random strategy, seed 0, 1 variant in flight (batch 1)" in text     # said once it searches
    store = Store.for_run(run)
    assert store.get_meta("bank_hit") is None
    store.close()


def test_warm_start_takes_the_nearest_configs_valid_for_the_shape(tmp_path, bank):
    """rows_per_task must not exceed M: the three nearest shapes' configs (16 and 64 rows per task)
    are invalid for M = 8, the fourth's (4) is valid and is measured first."""
    be = HashTimedCpuBackend(get_target("cpu"))
    common = {"algo": "twopass", "vec": 16, "unroll": 4, "threads": 2, "schedule": "guided"}
    for shape, rows in [({"M": 16, "N": 64}, 16), ({"M": 32, "N": 64}, 16), ({"M": 8, "N": 256}, 64),
                        ({"M": 8, "N": 1024}, 4)]:
        offer_entries([bank_entry(shape, {**common, "rows_per_task": rows})])
    run = tuner.tune(settings(tmp_path / "r", bank=True, trials=2), console=console(), backend=be)
    store = Store.for_run(run)
    assert store.get_meta("warm_start") == [{**common, "rows_per_task": 4}]
    store.close()
    assert searched(run)[0].config == {**common, "rows_per_task": 4}


def test_a_resume_measures_the_warm_start_configs_the_run_began_with_first(tmp_path, bank, monkeypatch):
    be = HashTimedCpuBackend(get_target("cpu"))
    warm = valid_configs(be, 5, 50, 100)
    for (m, n), cfg in zip([(16, 64), (8, 128), (32, 64)], warm):
        offer_entries([bank_entry({"M": m, "N": n}, cfg)])
    stop_after(monkeypatch, 1)
    with pytest.raises(KeyboardInterrupt):
        tuner.tune(settings(tmp_path / "r", bank=True, trials=6), console=console(), backend=be)
    monkeypatch.undo()
    monkeypatch.setenv("FORGE_BANK", str(tmp_path / "bank.sqlite"))
    out = console()
    tuner.resume(tmp_path / "r", console=out, backend=be)
    key = lambda c: json.dumps(c, sort_keys=True)            # noqa: E731
    assert {key(r.config) for r in searched(tmp_path / "r")[:3]} == {key(c) for c in warm}
    assert "warm start: 2 config(s) the run began with still to measure" in out.export_text()


def test_warm_start_configs_fewer_than_the_slots_leave_no_slot_waiting(tmp_path, bank, monkeypatch):
    from forge.executor.local import LocalExecutor

    be = HashTimedCpuBackend(get_target("cpu"), run_sleep=0.3)
    [cfg] = valid_configs(be, 5)
    offer_entries([bank_entry({"M": 16, "N": 64}, cfg)])
    events = []
    submit, wait = LocalExecutor.submit, LocalExecutor.next_result
    monkeypatch.setattr(LocalExecutor, "submit", lambda self, job: (events.append(job.phase), submit(self, job))[1])
    monkeypatch.setattr(LocalExecutor, "next_result",
                        lambda self, *a, **k: (events.append("wait"), wait(self, *a, **k))[1])
    tuner.tune(settings(tmp_path / "r", bank=True, trials=3, batch=3), console=console(), backend=be)
    assert events.index("wait") > 0 and events[:events.index("wait")] == ["search"] * 3


def test_trial_numbers_stay_unique_after_a_resume_of_a_run_that_lost_a_variant_in_flight(tmp_path, monkeypatch):
    be = HashTimedCpuBackend(get_target("cpu"))
    add = Store.add
    # trial 1 was in flight when the run stopped: never recorded, while later trials were
    monkeypatch.setattr(Store, "add", lambda self, rec: None if rec.trial == 1 else add(self, rec))
    run = tuner.tune(settings(tmp_path / "r", trials=4), console=console(), backend=be)
    monkeypatch.undo()
    assert [r.trial for r in searched(run)] == [0, 2, 3]
    tuner.resume(run, console=console(), backend=be, trials=6)
    trials = [r.trial for r in searched(run)]
    assert trials == [0, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("workers, devices, trials, batch", [
    (2, 1, 40, 3),        # this machine's cores and one device: all of them
    (64, 4, 40, 10),      # a large Ray cluster: a quarter of the trials
    (64, 4, 8, 5),        # never fewer than one per device slot and one building
    (16, 1, 41, 10),      # at most a quarter, rounded down
    (1, 1, 1, 2),
])
def test_the_default_batch_keeps_the_workers_busy_but_leaves_the_strategy_results_to_learn_from(
        workers, devices, trials, batch):
    assert tuner.default_batch(workers, devices, trials) == batch


@pytest.mark.parametrize("kw, says", [
    (dict(batch=3), "search: random strategy, seed 7, 3 variants in flight (batch 3)"),
    (dict(batch=None, build_workers=2, trials=40), "search: random strategy, seed 7, 3 variants in flight "
                                                   "(2 build workers + 1 device slot)"),
    (dict(batch=None, build_workers=2, trials=4), "search: random strategy, seed 7, 2 variants in flight "
                                                  "(2 build workers + 1 device slot, capped for a search of 4 trials)"),
    (dict(batch=8, trials=3), "search: random strategy, seed 7, 3 variants in flight (batch 8, capped for a search "
                              "of 3 trials)"),
])
def test_a_search_says_its_strategy_seed_and_how_many_variants_it_keeps_in_flight(tmp_path, kw, says):
    out = console()
    tuner.tune(settings(tmp_path / "r", seed=7, **{"trials": 4, **kw}), console=out,
               backend=HashTimedCpuBackend(get_target("cpu")))
    assert says in out.export_text()


def test_a_resume_says_it_searches_only_where_it_does_and_with_the_trials_left(tmp_path):
    be = HashTimedCpuBackend(get_target("cpu"))
    run = tuner.tune(settings(tmp_path / "r", trials=3, batch=3), console=console(), backend=be)
    out = console()
    tuner.resume(run, console=out, backend=be)                              # its trials spent
    assert "search: " not in out.export_text() and len(searched(run)) == 3
    out = console()
    tuner.resume(run, console=out, backend=be, trials=5)
    assert "2 variants in flight (batch 3, capped for the 2 trials left)" in out.export_text()
    stopped = tuner.tune(settings(tmp_path / "p", trials=100, patience=2), console=console(), backend=be)
    assert len(searched(stopped)) < 100
    out = console()
    tuner.resume(stopped, console=out, backend=be)                          # patience spent
    text = out.export_text()
    assert "search: " not in text and "search stopped (patience)" in text, text
