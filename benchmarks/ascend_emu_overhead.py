"""What an emulator check costs per variant, two builds of the emulator side by side.

Builds generated kernels (random valid configs of each operator, their small emulated problem)
two ways, runs each binary `--runs` times in the same process, and prints per config the compile
seconds and the median run seconds of each, and their ratio. The two ways:

- `--base REV`: the emulation headers of REV (extracted with `git archive`) against the working
  tree's; sizes a change to the emulator, e.g. the pipe-order check (`include/forge_emu/hazard.h`)
  against the emulator before it (`--base ff1e250`).
- `--pch`: the working tree's headers parsed in every build against read from the precompiled
  header (`forge/backends/ascend/emu/pch.py`); the one-time cost of building that is printed first.

What is measured is the emulator's own cost on this machine; no kernel time here is a device time.

    .venv/bin/python benchmarks/ascend_emu_overhead.py (--base ff1e250 | --pch) [--configs 3] [--runs 5]
"""
from __future__ import annotations

import argparse
import io
import os
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


def _build(text: str, cache: Path, include: Path, use_pch: bool, target: object):
    runner.INCLUDE_DIR, runner.USE_PCH = include, use_pch
    return emulate.build({"kernel.cpp": text}, "kernel.cpp", cache, target)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    how = ap.add_mutually_exclusive_group(required=True)
    how.add_argument("--base", help="git revision whose emulator headers are the baseline")
    how.add_argument("--pch", action="store_true", help="headers parsed in every build against precompiled")
    ap.add_argument("--configs", type=int, default=3, help="random valid configs per operator")
    ap.add_argument("--runs", type=int, default=5, help="runs of each binary (the median is printed)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.configs < 1 or args.runs < 1:
        ap.error("--configs and --runs must be at least 1")
    be = get_backend("ascend910b2", measure="model")
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["FORGE_CACHE"] = str(Path(tmp) / "forge-cache")    # precompiled headers built here, anew
        tree = runner.INCLUDE_DIR
        if args.pch:
            sides = {"parsed": (tree, False), "pch": (tree, True)}
        else:
            sides = {"base": (headers_at(args.base, Path(tmp) / "base"), runner.USE_PCH), "tree": (tree, runner.USE_PCH)}
        cases = []
        for op, shape, dtype, attrs in CASES:
            p = get_op(op).problem(shape, dtype, attrs)
            plan = be.plan(p)
            configs = list(be.space(p).enumerate().configs())
            for i in rng.choice(len(configs), size=min(args.configs, len(configs)), replace=False):
                cfg = configs[int(i)]
                small, emu = plan.emulation_plan(cfg), plan.emulation_config(cfg)
                cases.append((op, small, emu, small.render(emu).text))
        if args.pch:       # the one-time build of the precompiled header, outside the rows below
            first = _build(cases[0][3], Path(tmp) / "warm_parsed", tree, False, be.target).seconds
            with_pch = _build(cases[0][3], Path(tmp) / "warm_pch", tree, True, be.target).seconds
            print(f"first build with the precompiled header, which it builds: {with_pch:.2f} s "
                  f"(the same kernel parsed: {first:.2f} s); later builds with the same flags read it")
        a, b = sides
        print(f"{'op':<10} {'compile ' + a + ' s':>16} {'compile ' + b + ' s':>16} {'run ' + a + ' s':>12} "
              f"{'run ' + b + ' s':>12} {'compile ' + b + '/' + a:>16} {'run ' + b + '/' + a:>12}")
        for op, small, emu, text in cases:
            row = {}
            for side, (include, use_pch) in sides.items():
                built = _build(text, Path(tmp) / f"cache_{side}", include, use_pch, be.target)
                runs = []
                for _ in range(args.runs):
                    chk = emulate.run(built, small.p, int(small.pipeline(emu).block_dim), small.workspace_bytes(emu), 3, 300)
                    if chk.status != "ok":
                        sys.exit(f"{op}: {side}: {chk.status}: {chk.reason[:300]}")
                    runs.append(chk.seconds)
                row[side] = (built.seconds, statistics.median(runs), built.cached)
            (ca, ra, hit_a), (cb, rb, hit_b) = row[a], row[b]
            compile_a = "(cached)" if hit_a else f"{ca:.2f}"
            compile_b = "(cached)" if hit_b else f"{cb:.2f}"
            ratio = "" if hit_a or hit_b else f"{cb / ca:.2f}"
            print(f"{op:<10} {compile_a:>16} {compile_b:>16} {ra:>12.3f} {rb:>12.3f} {ratio:>16} {rb / ra:>12.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
