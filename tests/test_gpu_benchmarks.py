"""The GPU-node benchmarks where there is no GPU: they say so and exit 1, and the H200 sweep's
measured rows are modeled again (`--rescore`), which is how a model change is read without a GPU."""
import subprocess
import sys
from pathlib import Path

import pytest

from forge.backends import get_backend

ROOT = Path(__file__).resolve().parents[1]
no_gpu = pytest.mark.skipif(get_backend("h200", measure="device").measure_available()[0],
                            reason="a GPU that measures is present")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


@no_gpu
@pytest.mark.parametrize("script", ["benchmarks/gpu_check.py", "benchmarks/gpu_sweep.py"])
def test_a_gpu_benchmark_without_a_gpu_says_why_and_exits_1(script):
    res = _run(script, "--target", "h200")
    assert res.returncode == 1 and res.stdout.startswith("no GPU measurement possible here:"), res


def test_the_h200_sweep_is_modeled_again_without_a_gpu():
    res = _run("benchmarks/gpu_sweep.py", "--rescore", "benchmarks/data/h200_gpu_sweep.json")
    assert res.returncode == 0, res.stderr
    assert "measured on h200, modeled again now" in res.stdout
    row = next(line for line in res.stdout.splitlines() if "matmul[M=64,N=8192,K=8192]" in line)
    n, rho = row.split()[-4:-2]
    assert n == "10" and float(rho) > 0
    assert "swiglu" in res.stdout and "not run 8" in res.stdout


def test_target_reach_reads_a_strategy_against_another_and_its_misses_moved():
    """benchmarks/target_reach.py on pnpoly at a tiny budget: both strategies' means, the share at
    the optimum, the misses, and a reading for each of the best points."""
    pn = ROOT.parent / "shared/data/tuningdata/pnpoly/RTX_3090.json.gz"
    if not pn.is_file():
        pytest.skip("shared tuningdata not present")
    res = _run("benchmarks/target_reach.py", str(pn), "--rival", "random", "--budgets", "5,10", "--seeds", "3",
               "--jobs", "1")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "3774 points ran" in out and "B=5: forge" in out and "B=10: forge" in out
    assert out.count("every miss at best point #") == 2 * 7 and "forge's misses (seed: best/optimum):" in out


@pytest.mark.parametrize("args, says", [
    (("benchmarks/gpu_sweep.py", "--rescore", "no_such.json"), "--rescore no_such.json"),
    (("benchmarks/gpu_sweep.py", "--sample", "-1"), "--sample must be >= 0"),
    (("benchmarks/gpu_check.py", "--per-op", "0"), "--per-op and --reps must be >= 1"),
    (("benchmarks/gpu_check.py", "--reps", "-3"), "--per-op and --reps must be >= 1"),
    (("benchmarks/target_reach.py", "no_such.json.gz"), "no_such.json.gz"),
    (("benchmarks/target_reach.py", "no_such.json.gz", "--budgets", "x"), "--budgets"),
    (("benchmarks/target_reach.py", "no_such.json.gz", "--rival", "nope"), "unknown strategy 'nope'"),
])
def test_bad_arguments_to_the_benchmarks_name_what_is_wrong_and_exit_2(args, says):
    res = _run(*args)
    assert res.returncode == 2 and says in res.stderr and "Traceback" not in res.stderr, res.stderr
