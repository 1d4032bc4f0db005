"""Folders and files given to a command. Damaged ones, and bad values given with --resume: a one-line
error naming the file or the flag, exit code 2, never a traceback (nor click's "aborted", which means
the user stopped it). A run that did not evaluate its whole space, replayed: said so."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from forge import tuner
from forge.config import TuneSettings
from forge.testing import run_forge


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("damage") / "run"
    settings = TuneSettings(op="softmax", shape={"M": 8, "N": 16}, trials=2, reps=2, warmup=0, top_k=0,
                            sampler="random", bank=False, vendor=False, timeout=20.0, out=out)
    return tuner.tune(settings, console=Console(file=open(os.devnull, "w")))


def forge_cli(*args: str) -> subprocess.CompletedProcess:
    return run_forge(*args, env={"FORGE_BANK": os.devnull})


@pytest.mark.parametrize("damaged,content,needle", [
    ("run.json", "{bad", "run.json is not readable"),
    ("forge.sqlite", "not a database", "forge.sqlite is not a readable forge store"),
    ("run.json", '{"status": "running"}', "run.json has no problem"),
    ("forge.sqlite", None, "forge.sqlite is missing; run.json says 2 variants were evaluated"),
    ("forge.sqlite", "", "forge.sqlite holds no records but run.json says 2 variants were evaluated"),
    # edited by hand: each reader failed on it with a traceback of its own
    ("run.json", '{"problem": {"op": "nope", "shape": {"M": 8}}}', "problem.op 'nope' is not an operator"),
    ("run.json", '{"problem": {"op": "softmax", "shape": "M=8"}}', "problem.shape 'M=8' is not a mapping"),
    ("run.json", '{"problem": {"op": "softmax", "shape": {"M": 8, "N": 16}, "dtype": "float32"}, "settings": [1]}',
     "settings is not a mapping"),
])
@pytest.mark.parametrize("command", [["report"], ["show", "{run}", "1"], ["tune", "--resume"], ["replay"]])
def test_a_damaged_run_folder_is_named_not_a_traceback(small_run, tmp_path, damaged, content, needle, command):
    copy = tmp_path / "run"
    shutil.copytree(small_run, copy)
    if content is None:
        (copy / damaged).unlink()
    else:
        (copy / damaged).write_text(content)
    args = [a.replace("{run}", str(copy)) for a in command]
    res = forge_cli(*args, *([] if "{run}" in " ".join(command) else [str(copy)]))
    assert res.returncode == 2, res.stderr[-2000:]
    assert needle in res.stderr and "damaged" in res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("flag,value", [("--trials", "0"), ("--patience", "0"), ("--executor", "nope"),
                                        ("--trials", "1")])   # below the 2 evaluated: "2 of 1 variants"
def test_a_bad_value_given_with_resume_names_the_flag(small_run, flag, value):
    res = forge_cli("tune", "--resume", str(small_run), flag, value)
    assert res.returncode == 2, res.stderr[-2000:]
    assert res.stderr.startswith(f"error: {flag}:") and "Traceback" not in res.stderr


def test_resume_of_a_missing_folder_says_so(tmp_path):
    res = forge_cli("tune", "--resume", str(tmp_path / "nope"))
    assert res.returncode == 2 and "no such folder" in res.stderr


def test_a_truncated_gzip_cache_is_an_input_error_not_an_abort(tmp_path):
    whole = gzip.compress(b'{"tune_params_keys": [], "cache": {}}' * 200)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    res = forge_cli("replay", str(cut), "--budget", "5", "--seeds", "1")
    assert res.returncode == 2, res.stderr
    assert "not a readable Kernel Tuner cache file" in res.stderr and "aborted" not in res.stderr


def test_replaying_a_run_that_skipped_points_says_its_scores_cover_only_those(small_run):
    res = forge_cli("replay", str(small_run), "--budget", "1", "--seeds", "1")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "note: the run evaluated 2 of the" in res.stderr and "over those points only" in res.stderr
    assert f"space      {small_run.parent.name}/run " in res.stdout     # named by its folder, relative or not


@pytest.mark.parametrize("rank", ["-1", "0", "99"])
def test_a_rank_out_of_range_names_the_range_even_when_negative(small_run, rank):
    res = forge_cli("show", str(small_run), rank)
    assert res.returncode == 2 and "rank: must be between 1 and" in res.stderr, res.stderr[-2000:]


def test_compare_of_runs_of_two_problems_names_both_problems(small_run, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(small_run, other)
    info = json.loads((other / "run.json").read_text())
    info["problem"]["shape"] = {"M": 4, "N": 16}
    (other / "run.json").write_text(json.dumps(info))
    missing = forge_cli("compare", str(small_run), str(tmp_path / "nope"))
    assert missing.returncode == 2 and f"error: B: {tmp_path / 'nope'}: no such folder" in missing.stderr
    res = forge_cli("compare", str(small_run), str(other))
    assert res.returncode == 2
    assert (f"error: B: {other} tunes softmax[M=4,N=16] float32 on cpu, not softmax[M=8,N=16] float32 on cpu"
            in res.stderr), res.stderr


@pytest.mark.parametrize("command, target", [
    (["report", "{run}", "--format", "json", "--output"], "run.json"),
    (["report", "{run}", "--format", "md", "--output"], "forge.sqlite"),
    (["runs", "{parent}", "--json"], "forge.sqlite"),
    (["replay", "{run}", "--export"], "run.json"),
    (["compare", "{run}", "{run2}", "--json"], "run.json"),
])
def test_an_output_file_never_replaces_what_forge_recorded(small_run, tmp_path, command, target):
    """A report, listing or export written over a run's own store or run.json used to leave the run
    unreadable; it is refused, naming the file, and the run reads as before."""
    copy = tmp_path / "runs" / "run"
    shutil.copytree(small_run, copy)
    shutil.copytree(small_run, tmp_path / "runs" / "run2")
    before = {p.name: p.read_bytes() for p in copy.iterdir() if p.is_file()}
    args = [a.format(run=copy, run2=tmp_path / "runs" / "run2", parent=tmp_path / "runs") for a in command]
    res = forge_cli(*args, str(copy / target))
    assert res.returncode == 2, res.stderr[-2000:]
    assert f"{copy / target} is " in res.stderr and "writing over it would lose what it records" in res.stderr
    assert {p.name: p.read_bytes() for p in copy.iterdir() if p.is_file()} == before
    assert forge_cli("report", str(copy)).returncode == 0


def test_an_output_named_like_a_record_file_outside_a_run_is_written_again(small_run, tmp_path):
    """Only a run's own run.json is protected: a listing of one's own named run.json is not."""
    out = tmp_path / "mine" / "run.json"
    out.parent.mkdir()
    for _ in range(2):
        res = forge_cli("runs", str(small_run.parent), "--json", str(out))
        assert res.returncode == 0, res.stderr[-2000:]


def test_a_bank_export_onto_the_bank_itself_is_refused(small_run, tmp_path, monkeypatch):
    from forge.bank import bank_offer
    from forge.results import Store

    bank = tmp_path / "bank.sqlite"
    monkeypatch.setenv("FORGE_BANK", str(bank))
    bank_offer([r for r in Store.for_run(small_run).records() if r.phase == "search" and r.status == "ok"])
    kept = bank.read_bytes()
    res = run_forge("bank", "export", str(bank))
    assert res.returncode == 2 and "an SQLite database" in res.stderr and bank.read_bytes() == kept, res.stderr
