"""GPU-node sweep of the CUDA generators: are the kernels right on a real GPU, and does the model
rank them as the GPU does?

Correctness: every case the host-emulation tests run on the CPU (tests/test_cuda_host_kernels.py:
its fixed configs, its tiled cases, and for each of its EVERY_VALUE shapes a covering set of
configs that together take every value of every knob), at the same shape, built for the target
and run on the GPU through the timing harness, checked against the float64 reference. Host
emulation stands in for the GPU's barriers, shuffles, cp.async and mma.sync; this is where the
stand-in is checked against the hardware.

Model: for each problem of gpu_check.py, `--sample` valid configs drawn with a seeded generator,
each measured (median of `--reps`) and modeled; per problem the Spearman rank correlation of the
two, the median measured/modeled ratio, and how much slower than the best sampled one the
variant the model ranks first is.

    python benchmarks/gpu_sweep.py [--target h200] [--sample 16] [--reps 20] [--json rows.json]

Builds run in parallel on every core, then each variant runs on the GPU in turn. Without a GPU it
says why and exits 1; `--build-only` builds every variant and checks its limits (no GPU needed).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from cuda_host.run import covering_configs  # noqa: E402
from gpu_check import CASES as MODEL_CASES  # noqa: E402
from test_cuda_host_kernels import ATTRS, CASES, EVERY_VALUE, TILED_CASES, _smallest_matching  # noqa: E402

from forge.backends import get_backend  # noqa: E402
from forge.ops import get_op  # noqa: E402
from forge.variant import Variant  # noqa: E402

FAILED = ("incorrect", "runtime_error", "timeout", "compile_error")


def correctness_jobs(be: Any) -> list[tuple[str, Variant]]:
    """(group, variant) for every host-emulation test case at its own shape."""
    t = be.target.name
    jobs = []
    for op, shape, cfg in CASES:
        p = get_op(op).problem(shape, "float32", ATTRS.get(op, {}))
        jobs.append(("fixed", Variant(p, t, cfg)))
    for op, shape, dtype, attrs, want in TILED_CASES:
        p = get_op(op).problem(shape, dtype, attrs)
        jobs.append(("tiled", Variant(p, t, _smallest_matching(be, p, want))))
    for op, shape, dtype, attrs in EVERY_VALUE:
        p = get_op(op).problem(shape, dtype, attrs)
        jobs += [("every value", Variant(p, t, c)) for c in covering_configs(be.space(p).enumerate().configs())]
    return jobs


def model_jobs(be: Any, sample: int, seed: int) -> list[tuple[str, Variant]]:
    """(problem, variant) for `sample` seeded configs of each gpu_check problem."""
    jobs = []
    for op, shape, dtype, attrs in MODEL_CASES:
        p = get_op(op).problem(shape, dtype, attrs)
        configs = be.space(p).enumerate().configs()
        picked = random.Random(f"{seed}/{p.short()}").sample(configs, min(sample, len(configs)))
        jobs += [(p.short(), Variant(p, be.target.name, c)) for c in picked]
    return jobs


def spearman(a: list[float], b: list[float]) -> float:
    """Rank correlation with tied values sharing their average rank: the model often gives several
    configs one time, and an arbitrary order among them would move the figure with the row order."""
    return float(spearmanr(a, b).statistic) if len(a) > 2 else float("nan")


def pick_over_best(modeled: list[float], measured: list[float]) -> float:
    """The measured time of the model's first choice over the best measured, averaged over the
    configs the model ties for first (which of them a search takes first is arbitrary)."""
    top = [t for m, t in zip(modeled, measured) if m == min(modeled)]
    return float(np.mean(top)) / min(measured)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=os.environ.get("FORGE_GPU_TARGET", "h200"))
    ap.add_argument("--sample", type=int, default=16, help="configs measured per model problem (0: none)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=600.0, help="seconds; no variant starts after it")
    ap.add_argument("--json", type=Path, help="write every row here")
    ap.add_argument("--build-only", action="store_true", help="build and check limits only (no GPU needed)")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "forge-gpu-sweep"))
    ap.add_argument("--rescore", type=Path, help="no GPU: model the measured rows of an earlier --json again with "
                                                  "the current model and print the model's agreement")
    a = ap.parse_args()
    if a.sample < 0 or a.reps < 1:
        ap.error(f"--sample must be >= 0 and --reps >= 1 (got {a.sample}, {a.reps})")
    if a.rescore:
        try:
            rows = json.loads(a.rescore.read_text())
        except (OSError, ValueError) as exc:
            ap.error(f"--rescore {a.rescore}: {exc}")
        if not isinstance(rows, list) or not all(isinstance(r, dict) and {"part", "problem", "status"} <= set(r)
                                                 for r in rows):
            ap.error(f"--rescore {a.rescore}: not the rows of a `gpu_sweep.py --json` file")
        return rescore(a.rescore, rows, a.target)
    be = get_backend(a.target, measure="model" if a.build_only else "device")
    if not a.build_only:
        ok, why = be.measure_available()
        if not ok:
            print(f"no GPU measurement possible here: {why}")
            return 1
    t0 = time.time()
    jobs = [("correctness", g, v) for g, v in correctness_jobs(be)] + \
           [("model", g, v) for g, v in model_jobs(be, a.sample, a.seed)]
    print(f"{len(jobs)} variants on {a.target}: building on {os.cpu_count()} cores…", flush=True)
    with ThreadPoolExecutor(os.cpu_count() or 4) as ex:
        arts = list(ex.map(lambda j: be.build(j[2], Path(a.cache)), jobs))
    print(f"[{time.time() - t0:5.0f} s] built", flush=True)
    rows: list[dict[str, Any]] = []
    for (part, group, v), art in zip(jobs, arts):
        row = {"part": part, "group": group, "target": a.target, "problem": v.problem.short(), "config": v.config,
               "modeled_s": be.model(v), "regs": art.resources.get("regs"),
               "blocks_per_sm": art.resources.get("blocks_per_sm")}
        if not art.ok or art.resources.get("violations"):
            row.update(status="compile_error" if not art.ok else "invalid",
                       reason=(art.error[-300:] if not art.ok else "; ".join(art.resources["violations"])))
        elif a.build_only:
            row.update(status="built", reason="")
        elif time.time() - t0 > a.time_limit:
            row.update(status="not run", reason="--time-limit reached")
        else:
            reps = a.reps if part == "model" else 3
            m = be.run(art, v, seed=1, warmup=3, reps=reps, timeout=60)
            row.update(status=m.status, reason=m.reason,
                       measured_s=float(np.median(m.timings)) if m.timings else None)
        rows.append(row)
        if row["status"] in FAILED:
            print(f"{row['status'].upper()}: {row['problem']} {v.config_str()}: {row['reason']}", flush=True)
    report(rows)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1, default=str))
    print(f"{len(rows)} variants in {time.time() - t0:.0f} s")
    return 1 if any(r["status"] in FAILED for r in rows) else 0


def rescore(path: Path, rows: list[dict[str, Any]], target: str) -> int:
    """The model's agreement with an earlier sweep's measurements, modeled again now: how a model
    change reads against times measured on a GPU, without one."""
    problems = {p.short(): p for p in (get_op(o).problem(sh, dt, at) for o, sh, dt, at in MODEL_CASES)}
    targets = {r.get("target", target) for r in rows}
    for r in rows:
        if r["part"] == "model" and r["status"] == "ok":
            if r["problem"] not in problems:
                print(f"{path}: {r['problem']} is no longer a problem of gpu_check.py; its rows cannot be modeled again")
                return 2
            t = r.get("target", target)
            r["modeled_s"] = get_backend(t, measure="model").model(Variant(problems[r["problem"]], t, r["config"]))
    print(f"{path}: measured on {', '.join(sorted(targets))}, modeled again now")
    report([r for r in rows if r["part"] == "model"])
    return 0


def report(rows: list[dict[str, Any]]) -> None:
    """Correctness counts by group and op, then the model's agreement per problem."""
    counts: dict[tuple[str, str], dict[str, int]] = {}
    for r in rows:
        if r["part"] == "correctness":
            c = counts.setdefault((r["group"], r["problem"].split("[")[0]), {})
            c[r["status"]] = c.get(r["status"], 0) + 1
    if counts:
        print("\ncorrectness on the GPU (cases of tests/test_cuda_host_kernels.py):")
    for (group, op), c in sorted(counts.items()):
        print(f"  {group:<12} {op:<13} " + ", ".join(f"{k} {n}" for k, n in sorted(c.items())))
    if not any(r.get("measured_s") for r in rows if r["part"] == "model"):
        return
    print("\nmodel against measurement (sampled configs):")
    print(f"  {'problem':<72} {'n':>3} {'spearman':>8} {'meas/model':>10} {'model pick/best':>15}")
    for prob in dict.fromkeys(r["problem"] for r in rows if r["part"] == "model"):
        mine = [r for r in rows if r["part"] == "model" and r["problem"] == prob]
        ok = [r for r in mine if r["status"] == "ok"]
        if len(ok) < 3:
            others = Counter(r["status"] for r in mine if r["status"] != "ok")
            print(f"  {prob:<72} {len(ok):>3}  (too few measured to rank; "
                  + ", ".join(f"{k} {n}" for k, n in sorted(others.items())) + ")")
            continue
        meas, mod = [r["measured_s"] for r in ok], [r["modeled_s"] for r in ok]
        pick = pick_over_best(mod, meas)
        ratio = float(np.median(np.array(meas) / np.array(mod)))
        print(f"  {prob:<72} {len(ok):>3} {spearman(mod, meas):>8.2f} {ratio:>10.2f} {pick:>15.2f}")


if __name__ == "__main__":
    sys.exit(main())
