"""What a finished command tells a script: a run with no correct variant exits 1 and says why,
keeping its records; nothing prints an empty leaderboard."""
from __future__ import annotations

import os
import subprocess
import sys

from forge.results.store import Store


def forge_cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "forge.cli", *args], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "FORGE_BANK": os.devnull, "COLUMNS": "120", **env})


def test_a_run_with_no_correct_variant_exits_1_and_keeps_its_records(tmp_path):
    """Every variant fails to build here: a `cc` that refuses everything comes first on PATH (and a
    private build cache keeps earlier builds out of it)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "cc").write_text("#!/bin/sh\necho 'error: this cc builds nothing' >&2\nexit 1\n")
    (bin_dir / "cc").chmod(0o755)
    out = tmp_path / "run"
    res = forge_cli("tune", "--op", "softmax", "--shape", "M=8,N=16", "--trials", "2", "--sampler", "random",
                    "--top-k", "0", "--no-bank", "--no-vendor", "--out", str(out),
                    PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", FORGE_CACHE=str(tmp_path / "cache"))
    assert res.returncode == 1, res.stderr[-2000:]
    assert "no correct variant: every evaluated variant failed" in res.stdout
    assert "leaderboard" not in res.stdout          # no empty table
    assert f"no correct variant in {out}" in res.stderr and "Traceback" not in res.stderr
    assert sum(1 for r in Store.for_run(out).records() if r.status == "compile_error") >= 2


def test_ray_address_in_the_environment_leaves_a_local_run_local(tmp_path):
    """RAY_ADDRESS is set on the nodes of many Ray clusters; a `forge tune` there without
    --executor ray runs here, as it says, and is not refused for an address it was never given."""
    out = tmp_path / "run"
    res = subprocess.run([sys.executable, "-m", "forge.cli", "tune", "--op", "softmax", "--shape", "M=8,N=16",
                          "--trials", "1", "--top-k", "0", "--no-bank", "--no-vendor", "--out", str(out)],
                         capture_output=True, text=True, timeout=180,
                         env={**os.environ, "FORGE_BANK": os.devnull, "COLUMNS": "120",
                              "RAY_ADDRESS": "ray://head.invalid:10001"})
    assert res.returncode == 0, res.stderr[-2000:]
    assert "ray:" not in res.stderr and "--ray-address" not in res.stderr
    assert Store.for_run(out).count() >= 1


def test_a_run_killed_outright_leaves_its_folder_free_to_resume(tmp_path):
    """SIGKILL gives forge no chance to clean up: its build workers must neither keep the folder's
    lock (they close their copy at fork) nor live on (they die with their parent)."""
    import signal
    import time

    from forge.results.lock import folder_holder

    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "forge.cli", "tune", "--op", "softmax", "--shape", "M=64,N=128",
                             "--trials", "40", "--sampler", "random", "--no-bank", "--no-vendor", "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "FORGE_BANK": os.devnull})
    try:
        deadline = time.monotonic() + 120
        while not ((out / "forge.sqlite").exists() and Store.for_run(out).records(phase="search")):
            assert time.monotonic() < deadline, "the run recorded no variant in 120 s"
            time.sleep(0.2)
        workers = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        assert workers, "the build pool has no workers to test with"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        time.sleep(1.0)
        assert folder_holder(out) is None
        alive = [w for w in workers if _running(w)]
        assert not alive, f"build workers outlived their parent: {alive}"
    finally:
        proc.kill()
    done = len(Store.for_run(out).records(phase="search"))      # several may land before the kill
    res = forge_cli("tune", "--resume", str(out), "--trials", str(done + 1))
    assert res.returncode == 0 and "resuming:" in res.stderr + res.stdout, res.stderr[-2000:]


def _running(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return not any(line.startswith("State:") and "Z" in line.split()[1] for line in fh)
    except OSError:
        return False
