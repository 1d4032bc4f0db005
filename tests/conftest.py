"""Fixtures shared by the tests: the CPU backend, and a small replayed space for the search strategies."""
import itertools
import json
import os

import numpy as np
import pytest

from forge.backends import get_backend
from forge.backends.replay import load_cache

# Piped output takes its width from COLUMNS when set; the tests read it at the default width. GNU
# readline, once imported (pytest's debugger support imports it), sets COLUMNS in the C environment
# only: os.environ does not see it, the forge processes the tests start would.
os.environ.pop("COLUMNS", None)
os.unsetenv("COLUMNS")


def _cpu_target_with_a_small_flush() -> None:
    """The CPU harness flushes twice the last-level cache before every timed call. A VM can report
    its host's whole L3 (480 MiB on the dev machine: 95 ms a call, 19 s for 200 calls of a 64×96
    softmax), which the tests would pay on every measurement while checking nothing that depends
    on the flush's size. The tests' `cpu` target is the shipped file with `details.llc_bytes` set,
    the way a user pins a cache size (hwinfo.probe_cache); set in the environment, so the forge
    processes the tests start use it too. Tests that set FORGE_TARGET_PATH themselves get theirs."""
    import atexit
    import shutil
    import tempfile

    import yaml

    from forge.targets import DATA_DIR

    folder = tempfile.mkdtemp(prefix="forge-test-targets-")
    atexit.register(shutil.rmtree, folder, True)
    doc = yaml.safe_load((DATA_DIR / "cpu.yaml").read_text())
    doc.setdefault("details", {})["llc_bytes"] = 8 << 20
    with open(os.path.join(folder, "cpu.yaml"), "w") as f:
        yaml.safe_dump(doc, f)
    os.environ["FORGE_TARGET_PATH"] = folder


_cpu_target_with_a_small_flush()


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    """One build cache per test session: every CPU test's compiles are shared by source hash."""
    return tmp_path_factory.getbasetemp() / "forge-cpu-cache"


@pytest.fixture(scope="module")
def backend():
    return get_backend("cpu")


VALS = {"a": [1, 2, 4, 8, 16, 32, 64, 128], "b": [1, 2, 4, 8, 16, 32, 64, 128], "c": [0, 1, 2, 3], "d": [0, 1]}


@pytest.fixture(scope="module")
def synthetic_space(tmp_path_factory):
    """A 512-point structured space: smooth in log a, log b, a sharp optimum at c=2, d=0;
    a few points fail at runtime and a corner is infeasible."""
    cache = {}
    for a, b, c, d in itertools.product(*VALS.values()):
        if a * b > 4096:
            continue                                  # infeasible: absent
        t = 1 + 0.3 * (np.log2(a) - 5) ** 2 + 0.2 * (np.log2(b) - 2) ** 2 + (0 if c == 2 else 1.5) + 0.7 * d
        rec = {"a": a, "b": b, "c": c, "d": d, "compile_time": 10, "verification_time": 0, "benchmark_time": 5,
               "time": "RuntimeFailedConfig" if (c == 3 and a >= 64) else float(t)}
        cache[f"{a},{b},{c},{d}"] = rec
    doc = {"device_name": "synthetic", "kernel_name": "k", "problem_size": [1], "tune_params_keys": list(VALS),
           "tune_params": VALS, "objective": "time", "cache": cache}
    p = tmp_path_factory.mktemp("spaces") / "synthetic.json"
    p.write_text(json.dumps(doc))
    return load_cache(p)


def pytest_collection_modifyitems(items):
    """The `slow` tests first (a stable sort: otherwise in collection order). With two workers a
    long test started last, after the short ones ran out, ends the suite minutes after the other
    worker has finished; started first, the short ones fill in beside it (`make test` runs
    pytest-xdist with --dist worksteal, so an idle worker takes queued tests from a busy one)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
