"""Correctness sweep of the CUDA generators without a GPU: for every case of the shipped suites
that maps on a CUDA target, a few of its valid configs are checked the way a modeled `forge tune`
checks each variant (CudaBackend.host_check_variant: the config generated for a smaller problem
with the same tiling, run on the CPU by host emulation, compared with the float64 reference).
Prints every check that is not ok, then the totals and the slowest checks. No nvcc is needed.

    .venv/bin/python benchmarks/cuda_host_sweep.py [--target h100] [--per-case 1] [--jobs 2]

The configs of a case are drawn with a generator seeded by its case id, so a rerun checks the same
ones; `--per-case 3` checks more of each space.
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from forge.backends import get_backend  # noqa: E402
from forge.bench.suites import load_suite  # noqa: E402
from forge.ops import get_op  # noqa: E402
from forge.variant import Variant  # noqa: E402

SUITES = ("cannbench", "sol_execbench")


def check(job: tuple) -> tuple:
    target, cache, suite, case_id, op, shape, dtype, attrs, cfg = job
    be = get_backend(target, measure="model")
    p = get_op(op).problem(shape, dtype, attrs)
    t = time.perf_counter()
    r = be.host_check_variant(Variant(p, target, cfg), Path(cache))
    status = r.get("status", "skipped")
    why = r.get("reason") or r.get("skipped") or ""
    return suite, case_id, p.short(), cfg, status, why, r.get("at", ""), time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="h100")
    ap.add_argument("--per-case", type=int, default=1, help="configs checked per case")
    ap.add_argument("--jobs", type=int, default=2, help="processes")
    args = ap.parse_args()
    be = get_backend(args.target, measure="model")
    cache = tempfile.mkdtemp(prefix="forge-host-sweep-")
    jobs = []
    for suite in SUITES:
        for case in load_suite(suite).cases:
            p = get_op(case.op).problem(dict(case.shape), case.dtype, dict(case.attrs))
            if be.supports(p):
                continue
            en = be.space(p).enumerate()
            rng = random.Random(zlib.crc32(f"{suite}/{case.case_id}".encode()))
            for i in sorted(rng.sample(range(len(en)), min(args.per_case, len(en)))):
                jobs.append((args.target, cache, suite, case.case_id, case.op, dict(case.shape), case.dtype,
                             dict(case.attrs), dict(en.config(i))))
    print(f"{len(jobs)} host checks on {args.target} ({args.jobs} processes)", flush=True)
    counts: dict[str, int] = {}
    times: list[tuple[float, str, str]] = []
    started = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as ex:
        for suite, case_id, short, cfg, status, why, at, secs in ex.map(check, jobs):
            counts[status] = counts.get(status, 0) + 1
            times.append((secs, short, at))
            if status != "ok":
                print(f"{status.upper()}: {suite} {case_id} {short} {cfg}: {why[:300]}", flush=True)
    times.sort()
    print(f"checked {len(jobs)} in {time.perf_counter() - started:.0f} s wall, {sum(t for t, _, _ in times):.0f} s "
          f"of checks; " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for secs, short, at in times[-3:]:
        print(f"  slowest: {secs:.1f} s  {short} checked at {at}")


if __name__ == "__main__":
    main()
