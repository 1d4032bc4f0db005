"""Tuning bank: best-only updates, hit/add/update counts, export/import, and the tuner's bank hit."""
import json
import os

import pytest
from rich.console import Console

from forge.bank import (Bank, bank_lookup, bank_offer, bank_path, bank_stale, export_bank, import_bank, offer_entries,
                        offer_summary)
from forge.errors import ForgeInputError
from forge.ops import get_op
from forge.results import Record
from forge.testing import run_forge
from forge.variant import config_text


@pytest.fixture
def bank(tmp_path, monkeypatch):
    path = tmp_path / "bank.sqlite"
    monkeypatch.setenv("FORGE_BANK", str(path))
    return path


P = get_op("softmax").problem({"M": 64, "N": 128}, "float32")


def rec(median, kind="measured", status="ok", config=None, phase="search", target="cpu", problem=P):
    return Record(run_id="r1", variant_key="k", op=problem.op, shape=problem.shape, dtype=problem.dtype,
                  target=target, attrs=problem.attrs, config=config or {"tile": median}, status=status,
                  phase=phase, median=median, time_kind=kind)


def test_only_a_better_result_replaces_the_entry(bank):
    assert bank_lookup(P, "cpu") is None
    assert bank_offer([rec(5e-6), rec(3e-6), rec(1e-6, status="incorrect")]) == {
        "added": 1, "updated": 0, "retimed": 0, "kept": 0, "outranked": 0}
    assert bank_lookup(P, "cpu") == ({"tile": 3e-6}, 3e-6, "measured", 0)          # best ok record, failures ignored
    assert bank_offer([rec(4e-6)]) == {"added": 0, "updated": 0, "retimed": 0, "kept": 1, "outranked": 0}   # worse never replaces
    assert bank_lookup(P, "cpu")[1] == 3e-6
    assert bank_offer([rec(2e-6, phase="final")]) == {"added": 0, "updated": 1, "retimed": 0, "kept": 0, "outranked": 0}
    assert bank_lookup(P, "cpu")[1] == 2e-6
    # A modeled time never replaces a measured one, however small; the reverse always does.
    counts = bank_offer([rec(1e-9, kind="modeled")])
    assert counts["outranked"] == 1 and counts["kept"] == 0
    assert offer_summary(counts) == "entry kept: it is measured and the time offered is modeled"
    q = get_op("softmax").problem({"M": 64, "N": 256}, "float32")
    bank_offer([rec(1e-6, kind="modeled", problem=q)])
    assert bank_offer([rec(9e-6, problem=q)])["updated"] == 1
    assert bank_lookup(q, "cpu") == ({"tile": 9e-6}, 9e-6, "measured", 0)
    assert bank_lookup(P, "h100") is None                                         # per target
    with Bank() as b:
        c = b.counters()
    assert c["added"] == 2 and c["updated"] == 2 and c["kept"] == 2
    assert c["hits"] == 0 and c["misses"] == 0           # a lookup is counted by the run it answers, or not


def test_the_banked_config_timed_again_but_beaten_takes_its_new_time_before_the_best_is_judged(bank):
    """A lucky 1 µs banked for tile=1; a run times tile=1 again at 3 µs and finds tile=2 at 2 µs:
    the entry is not kept at a time its config did not reproduce, and tile=2 replaces it."""
    bank_offer([rec(1e-6, config={"tile": 1})])
    counts = bank_offer([rec(3e-6, config={"tile": 1}), rec(2e-6, config={"tile": 2})])
    assert counts == {"added": 0, "updated": 1, "retimed": 1, "kept": 0, "outranked": 0}
    assert bank_lookup(P, "cpu")[:2] == ({"tile": 2}, 2e-6)
    # re-measured: the config's final time is the one that counts, not its search time
    bank_offer([rec(1e-6, config={"tile": 3}, problem=Q)])
    bank_offer([rec(1e-6, config={"tile": 3}, problem=Q), rec(5e-6, config={"tile": 3}, problem=Q, phase="final"),
                rec(4e-6, config={"tile": 4}, problem=Q, phase="final")])
    assert bank_lookup(Q, "cpu")[:2] == ({"tile": 4}, 4e-6)


Q = get_op("softmax").problem({"M": 64, "N": 512}, "float32")


def test_a_run_banks_the_time_its_leaderboard_ranks_by_and_a_banked_config_timed_again_takes_its_new_time(bank):
    """The final re-measure is the run's word on its best (a search time is the best of many draws,
    the luckiest); and keeping the lowest time ever seen for one config would keep the luckiest."""
    cfg = {"tile": 4}
    assert bank_offer([rec(1e-6, config=cfg), rec(1.5e-6, config=cfg, phase="final"),
                       rec(1.2e-6, config={"tile": 8})])["added"] == 1
    assert bank_lookup(P, "cpu") == (cfg, 1.5e-6, "measured", 0)         # the re-measure, not the lucky 1e-6
    counts = bank_offer([rec(1.8e-6, config=cfg, phase="final")])
    assert counts["retimed"] == 1 and bank_lookup(P, "cpu") == (cfg, 1.8e-6, "measured", 0)
    assert offer_summary(counts) == "entry's config timed again: its time updated"
    assert bank_offer([rec(1.9e-6, config={"tile": 2})])["kept"] == 1  # another config must still beat it


def test_attrs_are_part_of_the_key(bank):
    causal = get_op("attention").problem({"B": 1, "H": 2, "S": 16, "D": 8}, "float32", {"causal": True})
    plain = get_op("attention").problem({"B": 1, "H": 2, "S": 16, "D": 8}, "float32", {"causal": False})
    bank_offer([rec(1e-6, problem=causal)])
    assert bank_lookup(plain, "cpu") is None and bank_lookup(causal, "cpu") is not None


VALID = {"algo": "online", "rows_per_task": 1, "schedule": "static", "threads": 1, "unroll": 1, "vec": 8}


def test_export_import_roundtrip(bank, tmp_path, monkeypatch):
    bank_offer([rec(3e-6, config=VALID)])
    out = tmp_path / "bank.json"
    assert export_bank(out) == 1
    monkeypatch.setenv("FORGE_BANK", str(tmp_path / "other.sqlite"))
    assert import_bank(out) == {"added": 1, "updated": 0, "retimed": 0, "kept": 0, "outranked": 0}
    assert import_bank(out) == {"added": 0, "updated": 0, "retimed": 0, "kept": 1, "outranked": 0}
    assert bank_lookup(P, "cpu")[1] == 3e-6
    again = tmp_path / "again.json"
    export_bank(again)                                  # an entry keeps its own time of update
    assert json.loads(again.read_text())["entries"][0]["updated"] == json.loads(out.read_text())["entries"][0]["updated"]


@pytest.mark.parametrize("change,needle", [
    ({"op": "nosuchop"}, "entries[0].op: unknown operator 'nosuchop'"),
    ({"target": "tpu9"}, "entries[0].target: unknown target 'tpu9'"),
    ({"dtype": "int7"}, "entries[0].dtype: 'int7' not supported by softmax"),
    ({"shape": {"M": 64, "N": 128, "K": 3}}, "entries[0].shape.K: unknown dimension"),
    ({"shape": {"M": 64}}, "entries[0].shape.N: missing dimension"),
    ({"median": -1}, "entries[0].median: must be a positive number of seconds, got -1"),
    ({"median": float("nan")}, "entries[0].median: must be a positive number of seconds, got nan"),
    ({"median": "fast"}, "entries[0].median: must be a positive number of seconds, got 'fast'"),
    ({"time_kind": "guess"}, "entries[0].time_kind: 'guess'; allowed: measured, modeled"),
    ({"time_kind": None}, "entries[0]: missing time_kind"),
    ({"time-kind": "modeled"}, "entries[0].time-kind: unknown field; an entry has op, shape, dtype, target, "),
    ({"code": 3}, "entries[0].code: must be a string, got 3"),
    ({"updated": "yesterday"}, "entries[0].updated: must be a time in seconds since the epoch, got 'yesterday'"),
    ({"config": VALID | {"threads": 999}}, "entries[0].config: not a valid config of softmax[M=64,N=128] float32 on cpu"),
    ({"config": {"tile": 4}}, "entries[0].config: not a valid config"),
    ({"forge_bank": 2}, "is a bank export of version 2; this forge reads version 1"),
    # a problem the target does not take, refused by its backend: named like the others
    ({"op": "attention", "target": "h100", "dtype": "float32", "code": "h100",
      "shape": {"B": 1, "Hq": 4, "Hkv": 4, "Sq": 64, "Skv": 64, "D": 64}},
     "entries[0].dtype: attention[B=1,Hq=4,Hkv=4,Sq=64,Skv=64,D=64] float32 is not supported on h100: "),
])
def test_an_import_with_an_entry_no_run_could_have_banked_is_refused_whole(bank, tmp_path, change, needle):
    """A negative time would be served as a hit; a config outside the space would be a 'hit' that
    searches silently and keeps every real result out of the bank."""
    bank_offer([rec(3e-6, config=VALID)])
    data = json.loads((export_bank(tmp_path / "b.json") and (tmp_path / "b.json")).read_text())
    data["entries"].append(dict(data["entries"][0], shape={"M": 8, "N": 128}))       # a good entry beside it
    if "forge_bank" in change:
        data.update(change)
    else:
        data["entries"][0].update(change)
        data["entries"][0] = {k: v for k, v in data["entries"][0].items() if v is not None}   # None: left out
    if change.get("code") == "h100":
        from forge.backends import target_code

        data["entries"][0]["code"] = target_code("h100")        # made by this forge's code: checked in full
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(ForgeInputError) as exc:
        import_bank(tmp_path / "bad.json", tmp_path / "fresh.sqlite")
    assert needle in str(exc.value) and str(tmp_path / "bad.json") in str(exc.value)     # the file named
    with Bank(tmp_path / "fresh.sqlite") as fresh:
        assert fresh.entries() == []                                                   # nothing imported


def test_an_offer_is_reported_in_words():
    assert offer_summary({"added": 1, "updated": 0, "kept": 0}) == "new entry added"
    assert offer_summary({"added": 0, "updated": 1, "kept": 0}) == "entry replaced by a better config"
    assert offer_summary({"added": 2, "updated": 0, "kept": 1}) == \
        "2 new entries added; entry kept (nothing faster found)"


@pytest.mark.slow
def test_tuner_bank_hit_skips_the_search(bank, tmp_path):
    """A second tune of the same problem is served by the bank."""
    from forge import tuner
    from forge.config import TuneSettings

    kw = dict(op="softmax", shape={"M": 64, "N": 128}, trials=4, reps=2, warmup=0, top_k=1, final_reps=2, sampler="random",
              timeout=20.0, vendor=False)
    first = Console(record=True, width=200, file=open(os.devnull, "w"))
    tuner.tune(TuneSettings(**kw, out=tmp_path / "first"), console=first)
    assert f"tuning bank: new entry added ({bank_path()})" in first.export_text()
    entry = bank_lookup(P, "cpu")
    assert entry is not None
    second = Console(record=True, width=200, file=open(os.devnull, "w"))
    run = tuner.tune(TuneSettings(**kw, out=tmp_path / "second"), console=second)
    text = second.export_text()
    assert f"tuning bank hit: {config_text(entry[0])} (" in text and "search skipped" in text
    info = json.loads((run / "run.json").read_text())
    assert info["evaluated"] == 1                                               # search skipped
    from forge.results import Store
    store = Store.for_run(run)
    assert store.get_meta("bank_hit") == entry[0]                              # and reported
    store.close()
    from forge.report.leaderboard import build_leaderboard
    from forge.report.render import headline
    assert any(line.startswith("served by the tuning bank") for line in headline(build_leaderboard(run)))


def test_a_hit_skips_only_a_search_no_deeper_than_the_one_behind_the_entry(bank, tmp_path):
    """A config found in a restricted space (--space) or by fewer trials than a run asks for does
    not answer it: the run searches, the banked config measured first, and the entry then stands
    for the deeper search, which a later run of that depth is served by."""
    from forge import tuner
    from forge.config import TuneSettings
    from forge.results import Store

    kw = dict(op="softmax", shape={"M": 64, "N": 128}, reps=2, warmup=0, top_k=1, final_reps=2, sampler="random", timeout=20.0, vendor=False)

    def run(name, **more):
        con = Console(record=True, width=200, file=open(os.devnull, "w"))
        folder = tuner.tune(TuneSettings(**kw, **more, out=tmp_path / name), console=con)
        return con.export_text(), json.loads((folder / "run.json").read_text())["evaluated"], folder

    text, n, _ = run("narrow", trials=2, space={"threads": 1})
    assert "new entry added" in text and bank_lookup(P, "cpu")[3] == 0          # a restricted space: no depth
    narrow_best = bank_lookup(P, "cpu")[0]
    text, n, folder = run("wide", trials=3)
    assert "comes from a search of a restricted space (--space), less than this run's 3; searching" in text
    assert n == 3 and min(Store.for_run(folder).records(phase="search"), key=lambda r: r.trial).config == narrow_best
    assert bank_lookup(P, "cpu")[3] == 3
    text, n, _ = run("deeper", trials=5)
    assert "comes from a search of 3 variants, less than this run's 5; searching" in text and n == 5
    assert bank_lookup(P, "cpu")[3] == 5
    text, n, _ = run("again", trials=5)
    assert "search skipped" in text and n == 1 and bank_lookup(P, "cpu")[3] == 5   # served; depth kept
    text, n, _ = run("fewer", trials=2)
    assert "search skipped" in text and n == 1
    with Bank() as b:
        counters = b.counters()
    assert (counters["hits"], counters["misses"]) == (2, 3)       # served twice; searched three times


def test_a_measured_run_without_a_final_re_measure_banks_a_warm_start_not_an_answer(bank, tmp_path):
    """With --top-k 0 the best is the luckiest of the search-time draws: banked with no depth, so
    the next run measures it first and searches rather than being served by it."""
    from forge import tuner
    from forge.config import TuneSettings

    kw = dict(op="softmax", shape={"M": 64, "N": 128}, trials=2, reps=2, warmup=0, top_k=0, sampler="random",
              timeout=20.0, vendor=False)
    tuner.tune(TuneSettings(**kw, out=tmp_path / "a"), console=Console(file=open(os.devnull, "w")))
    assert bank_lookup(P, "cpu")[3] == 0
    con = Console(record=True, width=200, file=open(os.devnull, "w"))
    run = tuner.tune(TuneSettings(**kw, out=tmp_path / "b"), console=con)
    assert "search skipped" not in con.export_text() and json.loads((run / "run.json").read_text())["evaluated"] == 2
    # nor does such a best take the depth of the entry it replaces; the banked config timed again keeps it
    bank_offer([rec(3e-6, config={"tile": "deep"})], searched=40)
    assert bank_lookup(P, "cpu")[3] == 40
    assert bank_offer([rec(3.5e-6, config={"tile": "deep"})], confirmed=False)["retimed"] == 1
    assert bank_lookup(P, "cpu")[3] == 40
    assert bank_offer([rec(1e-6, config={"tile": "lucky"})], confirmed=False)["updated"] == 1
    assert bank_lookup(P, "cpu")[:2] == ({"tile": "lucky"}, 1e-6) and bank_lookup(P, "cpu")[3] == 0


def test_a_config_the_model_chose_is_measured_first_by_a_measuring_run_not_served(bank, tmp_path):
    """A modeled time says nothing a measurement would: on a machine that measures, the bank's
    modeled config starts the search; the measured result then takes its place as the same config
    timed again (not "replaced by a better config")."""
    from forge import tuner
    from forge.config import TuneSettings
    from forge.results import Store

    bank_offer([rec(1e-9, kind="modeled", config=VALID)])
    out = Console(record=True, width=200, file=open(os.devnull, "w"))
    run = tuner.tune(TuneSettings(op="softmax", shape={"M": 64, "N": 128}, trials=1, reps=2, warmup=0, top_k=0,
                                  sampler="random", timeout=20.0, vendor=False, out=tmp_path / "r"), console=out)
    text = out.export_text()
    assert "the banked config was chosen by the model, not measured; searching, with it measured first" in text
    first = min(Store.for_run(run).records(phase="search"), key=lambda r: r.trial)
    assert first.config == VALID and first.status == "ok"
    entry = bank_lookup(P, "cpu")
    assert entry[2] == "measured" and entry[1] > 1e-9                                   # measured now
    assert "tuning bank: entry's config timed again: its time updated" in text


def test_a_banked_config_from_another_generator_version_is_a_miss(bank, tmp_path):
    """A bank entry whose parameters the current space does not have must not skip the search."""
    from forge import tuner
    from forge.config import TuneSettings

    bank_offer([rec(1e-9, config={"retired_param": 3})])
    assert bank_lookup(P, "cpu")[0] == {"retired_param": 3}
    quiet = Console(file=open(os.devnull, "w"))
    run = tuner.tune(TuneSettings(op="softmax", shape={"M": 64, "N": 128}, trials=3, reps=2, warmup=0,
                                  top_k=0, sampler="random", timeout=20.0, vendor=False, out=tmp_path / "r"), console=quiet)
    assert json.loads((run / "run.json").read_text())["evaluated"] == 3


def test_warm_start_measures_the_nearest_shapes_best_configs_first(bank, tmp_path):
    from forge import tuner
    from forge.config import TuneSettings
    from forge.results import Store

    quiet = Console(file=open(os.devnull, "w"))
    kw = dict(op="softmax", trials=3, reps=2, warmup=0, top_k=0, sampler="random", timeout=20.0, vendor=False)
    tuner.tune(TuneSettings(**kw, shape={"M": 64, "N": 128}, out=tmp_path / "near"), console=quiet)
    tuner.tune(TuneSettings(**kw, shape={"M": 1024, "N": 1024}, out=tmp_path / "far"), console=quiet)
    near_best = bank_lookup(P, "cpu")[0]
    run = tuner.tune(TuneSettings(**kw, shape={"M": 64, "N": 256}, out=tmp_path / "new"), console=quiet)
    store = Store.for_run(run)
    warm = store.get_meta("warm_start")
    first = min(store.records(phase="search"), key=lambda r: r.trial)   # proposed first; several run at once
    store.close()
    assert warm[0] == near_best                       # nearest shape first
    assert {json.dumps(first.config, sort_keys=True)} <= {json.dumps(c, sort_keys=True) for c in warm}


def test_an_entry_made_by_other_generator_code_is_stale(bank, tmp_path, monkeypatch):
    """A banked config found by another version of the target's generators or model is never a hit
    (a changed generator can make other configs valid or faster), an entry of the current code
    replaces it however slow, and it never replaces an entry of the current code (bank import)."""
    from forge import tuner
    from forge.backends import target_code
    from forge.config import TuneSettings

    old = {"op": P.op, "shape": P.shape, "dtype": P.dtype, "attrs": P.attrs, "target": "cpu",
           "config": {"tile": 1}, "median": 1e-9, "time_kind": "measured", "code": "0123456789abcdef",
           "searched": 100}
    assert offer_entries([old]) == {"added": 1, "updated": 0, "retimed": 0, "kept": 0, "outranked": 0}
    assert bank_lookup(P, "cpu") is None and bank_stale(P, "cpu")
    assert bank_offer([rec(5e-6)]) == {"added": 0, "updated": 1, "retimed": 0, "kept": 0, "outranked": 0}  # slower, but current
    # and it stands for its own search only: the stale entry's 100 trials searched other code
    assert bank_lookup(P, "cpu") == ({"tile": 5e-6}, 5e-6, "measured", 0) and not bank_stale(P, "cpu")
    assert offer_entries([old]) == {"added": 0, "updated": 0, "retimed": 0, "kept": 1, "outranked": 0}  # stale never replaces current
    assert bank_lookup(P, "cpu")[3] == 0                     # nor lends the current entry its depth
    with Bank() as b:
        assert b.entries()[0]["code"] == target_code("cpu") != old["code"]

    monkeypatch.setenv("FORGE_BANK", str(tmp_path / "stale.sqlite"))           # a bank holding only the stale entry
    offer_entries([old])
    quiet = Console(file=open(os.devnull, "w"))
    run = tuner.tune(TuneSettings(op="softmax", shape={"M": 64, "N": 128}, trials=3, reps=2, warmup=0,
                                  top_k=0, sampler="random", timeout=20.0, vendor=False, out=tmp_path / "r"), console=quiet)
    assert json.loads((run / "run.json").read_text())["evaluated"] == 3           # searched, not served
    assert bank_lookup(P, "cpu") is not None and not bank_stale(P, "cpu")        # and the stale entry replaced


def test_a_bank_written_before_entries_recorded_their_code_opens_and_its_entries_are_stale(bank):
    import sqlite3

    conn = sqlite3.connect(str(bank))
    conn.execute("CREATE TABLE entries (key TEXT PRIMARY KEY, op TEXT, target TEXT, shape TEXT, dtype TEXT, "
                 "attrs TEXT, config TEXT, median REAL, time_kind TEXT, source TEXT, updated REAL)")
    key = Bank.key(P.op, P.shape, P.dtype, P.attrs, "cpu")
    conn.execute("INSERT INTO entries VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                 (key, P.op, "cpu", json.dumps(P.shape), P.dtype, json.dumps(P.attrs), '{"tile": 1}', 1e-9,
                  "measured", "old", 0.0))
    conn.commit()
    conn.close()
    assert bank_lookup(P, "cpu") is None and bank_stale(P, "cpu")
    assert bank_offer([rec(5e-6)])["updated"] == 1


def test_a_bank_that_cannot_be_opened_never_stops_a_run(bank, tmp_path):
    """The bank only saves searches: a file that is not a database makes a run search without it
    (and say so), while `forge bank show`, whose subject it is, is an input error naming FORGE_BANK."""
    from forge import tuner
    from forge.config import TuneSettings

    bank.write_text("not a database")
    con = Console(record=True, width=200, file=open(os.devnull, "w"))
    run = tuner.tune(TuneSettings(op="softmax", shape={"M": 64, "N": 128}, trials=3, reps=2, warmup=0, top_k=0,
                                  sampler="random", timeout=20.0, vendor=False, out=tmp_path / "r"), console=con)
    assert json.loads((run / "run.json").read_text())["status"] == "complete"
    assert f"tuning bank unavailable ({bank}: file is not a database)" in con.export_text()
    assert bank.read_text() == "not a database"
    done = run_forge("bank", "show")
    assert done.returncode == 2 and f"FORGE_BANK: {bank}: file is not a database" in done.stderr


def test_showing_a_bank_that_does_not_exist_says_so_and_does_not_make_it(tmp_path):
    path = tmp_path / "none" / "bank.sqlite"
    res = run_forge("bank", "show", env={"FORGE_BANK": str(path)})
    assert res.returncode == 0 and "no tuning bank yet at" in res.stdout
    assert not path.exists() and not path.parent.exists()


def test_bank_show_writes_times_as_every_table_does(bank):
    from typer.testing import CliRunner

    from forge.cli import app

    bank_offer([rec(0.184, config={"tile": "big"})])
    res = CliRunner().invoke(app, ["bank", "show"], env={"COLUMNS": "250"})
    assert res.exit_code == 0 and "184 ms" in res.output and "e+0" not in res.output, res.output
