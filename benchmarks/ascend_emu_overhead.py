"""What the emulator's checks cost per variant: its headers at a base revision against the working tree.

Builds generated kernels (random valid configs of each operator, their small emulated problem)
against the emulation headers of `--base` (extracted with `git archive`) and of the working
tree, runs each binary `--runs` times in the same process, and prints per config the compile
seconds and the median run seconds of each, and their ratio. Used to size the pipe-order check
(`include/forge_emu/hazard.h`) against the emulator before it. What is measured is the emulator's
own cost on this machine; no kernel time here is a device time.

    .venv/bin/python benchmarks/ascend_emu_overhead.py --base ff1e250 [--configs 3] [--runs 5]
"""
from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

import forge.backends.ascend.emu.runner as runner
from forge.backends import get_backend
from forge.backends.ascend import emulate
from forge.ops import get_op

CASES = [  # (op, shape, dtype, attrs): one row-reduction kernel, one softmax, one mixed cube/vector kernel
    ("rmsnorm", {"M": 4096, "N": 1000}, "float16", {"residual": True}),
    ("softmax", {"M": 4096, "N": 1000}, "float16", {}),
    ("attention", {"B": 1, "H": 8, "Sq": 512, "Skv": 512, "D": 128}, "float16", {"causal": True}),
]
HEADERS = "forge/backends/ascend/emu/include"


def headers_at(rev: str, into: Path) -> Path:
    """The emulator headers as they were at `rev`."""
    root = Path(__file__).resolve().parent.parent
    try:
        blob = subprocess.run(["git", "archive", rev, HEADERS], cwd=root, check=True, capture_output=True).stdout
    except subprocess.CalledProcessError as e:
        print(f"--base {rev!r}: no emulator headers at that revision ({e.stderr.decode().strip()})", file=sys.stderr)
        sys.exit(2)
    tarfile.open(fileobj=io.BytesIO(blob)).extractall(into, filter="data")
    return into / HEADERS


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="git revision whose emulator headers are the baseline")
    ap.add_argument("--configs", type=int, default=3, help="random valid configs per operator")
    ap.add_argument("--runs", type=int, default=5, help="runs of each binary (the median is printed)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.configs < 1 or args.runs < 1:
        ap.error("--configs and --runs must be at least 1")
    be = get_backend("ascend910b2", measure="model")
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        sides = {"base": headers_at(args.base, Path(tmp) / "base"), "tree": runner.INCLUDE_DIR}
        print(f"{'op':<10} {'compile base s':>14} {'compile tree s':>14} {'run base s':>10} {'run tree s':>10} {'run tree/base':>13}")
        for op, shape, dtype, attrs in CASES:
            p = get_op(op).problem(shape, dtype, attrs)
            plan = be.plan(p)
            configs = list(be.space(p).enumerate().configs())
            for i in rng.choice(len(configs), size=min(args.configs, len(configs)), replace=False):
                cfg = configs[int(i)]
                small, emu = plan.emulation_plan(cfg), plan.emulation_config(cfg)
                text = small.render(emu).text
                row = {}
                for side, include in sides.items():
                    runner.INCLUDE_DIR = include
                    built = emulate.build({"kernel.cpp": text}, "kernel.cpp", Path(tmp) / f"cache_{side}", be.target)
                    runs = []
                    for _ in range(args.runs):
                        chk = emulate.run(built, small.p, int(small.pipeline(emu).block_dim), small.workspace_bytes(emu), 3, 300)
                        if chk.status != "ok":
                            sys.exit(f"{op} {cfg}: {side} headers: {chk.status}: {chk.reason[:300]}")
                        runs.append(chk.seconds)
                    row[side] = (built.seconds, statistics.median(runs))
                (cb, rb), (ct, rt) = row["base"], row["tree"]
                print(f"{op:<10} {cb:>14.2f} {ct:>14.2f} {rb:>10.3f} {rt:>10.3f} {rt / rb:>13.2f}", flush=True)


if __name__ == "__main__":
    main()
