"""What a CUDA variant's host check costs, two builds of the host emulation side by side.

Every config of a few CUDA plans (a greedy set that together takes every value of every knob
valid at the shape, as tests/test_cuda_host_kernels.py checks them) is built and run on the CPU
twice: with `forge/backends/cuda/host.py` and `host_cuda.h` as they were at `--base REV`, and
with the working tree's. Prints per plan the build and run seconds of each and their ratios, and
whether the two outputs agree. No time here is a device time; what is measured is the host
emulation's own cost on this machine.

    .venv/bin/python benchmarks/cuda_host_overhead.py --base 090ff6e [--cases matmul,attention]
"""
from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from cuda_host.run import covering_configs  # noqa: E402

from forge.backends import get_backend  # noqa: E402
from forge.backends.cuda import host as tree_host  # noqa: E402
from forge.ops import get_op  # noqa: E402
from forge.variant import Variant  # noqa: E402

# (op, shape, dtype, attrs): the shapes of tests/test_cuda_host_kernels.py's EVERY_VALUE cases
CASES = {
    "matmul": ("matmul", dict(M=70, N=70, K=1030), "float32", {"transpose_b": True}),
    "attention": ("attention", dict(B=1, Hq=2, Hkv=1, Sq=70, Skv=300, D=64), "bfloat16", {"causal": True}),
    "softmax": ("softmax", dict(M=9, N=2056), "float32", {}),
    "rmsnorm": ("rmsnorm", dict(M=9, N=2056), "float32", {"residual": True}),
}
FILES = ("forge/backends/cuda/host.py", "forge/backends/cuda/host_cuda.h")


def host_at(rev: str, into: Path) -> ModuleType:
    """host.py as it was at `rev`, importable, reading the host_cuda.h of `rev` beside it."""
    into.mkdir(parents=True)
    for name in FILES:
        try:
            text = subprocess.run(["git", "show", f"{rev}:{name}"], cwd=ROOT, check=True, capture_output=True).stdout
        except subprocess.CalledProcessError as e:
            print(f"--base {rev!r}: no {name} at that revision ({e.stderr.decode().strip()})", file=sys.stderr)
            sys.exit(2)
        (into / Path(name).name).write_bytes(text)
    spec = importlib.util.spec_from_file_location("forge_host_base", into / "host.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module                   # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def check(side: ModuleType, plan, inputs: dict, dtype: str, work: Path) -> tuple[float, float, np.ndarray]:
    """Build and run seconds, and the output."""
    t0 = time.perf_counter()
    built = side.build(plan, work / "build")
    t1 = time.perf_counter()
    if not built.ok:
        raise SystemExit(f"build failed: {built.error[-2000:]}")
    res = side.run(built.exe, plan, inputs, dtype, work / "run", timeout=600)
    t2 = time.perf_counter()
    if not res.ok:
        raise SystemExit(f"run failed: {res.error}")
    return t1 - t0, t2 - t1, res.output


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="git revision whose host emulation is the baseline")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    args = ap.parse_args(argv)
    names = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in names if c not in CASES]
    if unknown or not names:
        ap.error(f"--cases: unknown {', '.join(unknown) or '(none given)'}; allowed: {', '.join(CASES)}")
    be = get_backend("h100", measure="model")
    print(f"{'plan':<34}{'build base s':>13}{'build tree s':>13}{'run base s':>11}{'run tree s':>11}"
          f"{'run tree/base':>14}  outputs")
    totals = np.zeros(4)
    with tempfile.TemporaryDirectory() as tmp:
        sides = {"base": host_at(args.base, Path(tmp) / "base_src"), "tree": tree_host}
        for name in names:
            op, shape, dtype, attrs = CASES[name]
            p = get_op(op).problem(shape, dtype, attrs)
            inputs = get_op(op).make_inputs(p, seed=3)
            for i, cfg in enumerate(covering_configs(be.space(p).enumerate().configs())):
                plan = be.plan(Variant(p, "h100", cfg))
                got = {s: check(m, plan, inputs, dtype, Path(tmp) / s / name / str(i)) for s, m in sides.items()}
                row = np.array([got["base"][0], got["tree"][0], got["base"][1], got["tree"][1]])
                totals += row
                same = "equal" if np.array_equal(got["base"][2], got["tree"][2], equal_nan=True) else "DIFFER"
                print(f"{name + ' #' + str(i):<34}{row[0]:>13.2f}{row[1]:>13.2f}{row[2]:>11.2f}{row[3]:>11.2f}"
                      f"{row[3] / row[2]:>14.2f}  {same}", flush=True)
    print(f"{'total':<34}{totals[0]:>13.2f}{totals[1]:>13.2f}{totals[2]:>11.2f}{totals[3]:>11.2f}"
          f"{totals[3] / totals[2]:>14.2f}")


if __name__ == "__main__":
    main()
