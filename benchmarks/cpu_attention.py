"""Fused attention on this CPU against the unfused C sequence and torch SDPA, measured in one run.

For each shape this runs what a user runs — `forge.tuner.tune` with the "forge" sampler (threads
fixed to all cores, nothing else restricted) — and reads the run's leaderboard: the best variant
(re-measured at the end), the unfused baseline (QK^T and PV on the packed GEMM kernel, vectorised
scale/mask and softmax passes, S in memory) and torch SDPA, all timed by the backend the same way
(subprocess, caches flushed between repetitions, median). numpy's 2048^3 fp32 matmul rate, measured
at the start and at the end of this run, is the machine's practical fp32 peak for the "% numpy"
column; the roofline columns say what bounds the unfused sequence.

After each search the tuned variant, the unfused sequence, torch and numpy are re-timed in turn for a
few rounds (`side_by_side`), so that a shared machine's changing load hits all of them alike; both
tables are printed.

usage: python benchmarks/cpu_attention.py [--budget 60] [--trials 40] [--rounds 3] [--out DIR] [--shapes 0,1,2,3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console

from forge.backends import get_backend
from forge.backends.cpu import hwinfo
from forge.backends.cpu.runner import run_executable
from forge.backends.cpu.vendor import measure_vendor
from forge.config import TuneSettings
from forge.ops import get_op
from forge.report.leaderboard import build_leaderboard
from forge.targets import get_target
from forge.tuner import CACHE_DIR, tune
from forge.variant import Variant

SHAPES = [  # (B, H, S, D, causal), fp32
    (1, 8, 1024, 64, False),
    (1, 16, 2048, 128, False),
    (4, 32, 512, 128, False),
    (1, 16, 2048, 128, True),
]
# bytes of S/P traffic per score element in the unfused sequence: QK^T writes S (4), scale+mask
# reads and writes it (8), softmax reads it for the max (4), writes exp (4 + 4 read), rescales (8),
# PV's packing reads P (4): 36 bytes.
UNFUSED_BYTES_PER_SCORE = 36


def numpy_matmul_rate(n: int = 2048, reps: int = 5) -> float:
    """Best-of-`reps` fp32 GFLOP/s of numpy's n^3 matmul (its BLAS, all cores)."""
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    a @ a
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - t)
    return 2.0 * n ** 3 / best


def tune_shape(shape: tuple, out: Path, args: argparse.Namespace, cores: int) -> dict:
    B, H, S, D, causal = shape
    settings = TuneSettings(
        op="attention", shape=dict(B=B, H=H, S=S, D=D), dtype="float32", attrs={"causal": causal},
        target="cpu", space={"threads": cores}, trials=args.trials, time_budget=args.budget,
        sampler="forge", seed=args.seed, measure="device", reps=args.reps, warmup=1,
        timeout=120.0, top_k=args.top_k, final_reps=args.final_reps, bank=False,
        batch=1, build_workers=1,   # no compile running beside a measurement on a small machine
        out=out / f"B{B}_H{H}_S{S}_D{D}{'_causal' if causal else ''}")
    t0 = time.perf_counter()
    run_dir = tune(settings, console=Console(stderr=True, quiet=not args.verbose))
    lb = build_leaderboard(run_dir)
    bases = {b["name"]: b for b in lb.baselines}
    p = get_op("attention").problem(settings.shape, "float32", settings.attrs)

    def median(name: str) -> float:
        b = bases.get(name)
        return b["median"] if b and b["status"] == "ok" and b["median"] else float("nan")

    best = lb.best
    side = side_by_side(p, best.config, args) if best and args.rounds else None
    return dict(side=side, label=f"B={B} H={H} S={S} D={D}{' causal' if causal else ''}", problem=p,
                fused=best.median if best else float("nan"), spread=best.spread if best else float("nan"),
                unfused=median("unfused"), torch=median("vendor"), config=best.config if best else {},
                evaluated=lb.info.get("evaluated"), status=lb.status_counts, seconds=time.perf_counter() - t0,
                run_dir=str(run_dir), torch_label=bases.get("vendor", {}).get("label", "torch (not installed)"))


def side_by_side(p, config: dict, args: argparse.Namespace) -> dict:
    """The tuned variant, the unfused sequence, torch SDPA and numpy's matmul, timed in turn for
    `rounds` rounds in the same minutes, so load drift on a shared machine hits all of them alike.
    Outputs were checked in the tuning run; these re-runs only time (extra["unchecked"])."""
    backend = get_backend(get_target("cpu"), measure="device")
    fused = backend.build(Variant(p, "cpu", config), CACHE_DIR)
    unfused = backend.unfused_artifact(p, CACHE_DIR)
    kw = dict(seed=args.seed, warmup=1, reps=args.reps, timeout=600.0,
              flush_bytes=2 * hwinfo.cache_bytes(backend.target, 3))   # as CpuBackend flushes
    times: dict[str, list[float]] = {"fused": [], "unfused": [], "torch": [], "numpy": []}
    for _ in range(args.rounds):
        for name, art in (("fused", fused), ("unfused", unfused)):
            m = run_executable(art.path, p, check=False, **kw)
            times[name].append(statistics.median(m.timings) if m.status == "ok" else float("nan"))
        v = (measure_vendor(p, check=False, threads=[int(backend.target.details["cores"])], **kw) or [None])[0]
        ok = v is not None and v.measurement.status == "ok"
        times["torch"].append(statistics.median(v.measurement.timings) if ok else float("nan"))
        times["numpy"].append(numpy_matmul_rate(reps=3))
    ratio = lambda a, b: statistics.median(x / y for x, y in zip(times[a], times[b]))  # noqa: E731
    return {"fused": statistics.median(times["fused"]), "unfused": statistics.median(times["unfused"]),
            "torch": statistics.median(times["torch"]), "numpy": statistics.median(times["numpy"]),
            "x_unfused": ratio("unfused", "fused"), "x_torch": ratio("torch", "fused"), "times": times}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", type=float, default=60.0, help="search seconds per shape")
    ap.add_argument("--trials", type=int, default=40, help="most variants searched per shape")
    ap.add_argument("--reps", type=int, default=3, help="timed repetitions per searched variant")
    ap.add_argument("--final-reps", type=int, default=7, help="repetitions of the re-measured top variants")
    ap.add_argument("--top-k", type=int, default=2, help="variants re-measured at the end")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved re-timing rounds after each search (0: off)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shapes", default=",".join(str(i) for i in range(len(SHAPES))), help="indices into SHAPES")
    ap.add_argument("--out", type=Path, default=None, help="run folders (default: a temporary directory)")
    ap.add_argument("--verbose", action="store_true", help="show the tuner's progress")
    args = ap.parse_args()

    target = get_target("cpu")
    cores = int(target.details["cores"])
    cache = hwinfo.caches(target)
    print(f"machine: {target.details['model']}, {cores} cores, isa {' '.join(target.details['isa'])}, "
          f"L2 {cache['l2_bytes']['bytes'] >> 10} KiB/core, LLC {cache['llc_bytes']['bytes'] >> 20} MiB; "
          f"load average {os.getloadavg()[0]:.2f} at start")
    rate0 = numpy_matmul_rate()
    print(f"numpy 2048^3 fp32 matmul: {rate0 / 1e9:.1f} GFLOP/s (start)")
    bandwidth = target.memory_bandwidth
    with tempfile.TemporaryDirectory(prefix="forge-cpu-attention-") as tmp:
        out = args.out or Path(tmp)
        rows = []
        for i in (int(x) for x in args.shapes.split(",")):
            r = tune_shape(SHAPES[i], out, args, cores)
            rows.append(r)
            print(f"{r['label']}: {r['evaluated']} variants ({r['status']}) in {r['seconds']:.0f} s; "
                  f"best {r['config']}")
    rate1 = numpy_matmul_rate()
    print(f"numpy 2048^3 fp32 matmul: {rate1 / 1e9:.1f} GFLOP/s (end); load average {os.getloadavg()[0]:.2f}")
    peak = max(rate0, rate1)
    print()
    hdr = (f"{'shape (fp32)':<28}{'tuned ms':>10}{'unfused ms':>12}{'torch ms':>10}{'x unfused':>11}{'x torch':>9}"
           f"{'GFLOP/s':>9}{'% numpy':>9}{'unf GF/s':>10}{'torch GF/s':>11}{'unf model ms':>14}{'x unf @numpy':>14}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        p = r["problem"]
        flops = get_op("attention").flops(p)
        s = p.shape
        # the unfused sequence modeled: full-size GEMMs (no causal skipping) at numpy's rate + S/P traffic
        gemm_flops = 4.0 * s["B"] * s["Hq"] * s["Sq"] * s["Skv"] * s["D"]
        traffic = UNFUSED_BYTES_PER_SCORE * s["B"] * s["Hq"] * s["Sq"] * s["Skv"]
        model = gemm_flops / peak + traffic / bandwidth
        # the most a fused kernel running at numpy's matmul rate could gain over the measured unfused time
        ceiling = r["unfused"] / (flops / peak)
        print(f"{r['label']:<28}{r['fused'] * 1e3:>10.2f}{r['unfused'] * 1e3:>12.2f}{r['torch'] * 1e3:>10.2f}"
              f"{r['unfused'] / r['fused']:>11.2f}{r['torch'] / r['fused']:>9.2f}{flops / r['fused'] / 1e9:>9.1f}"
              f"{100 * flops / r['fused'] / peak:>8.0f}%{flops / r['unfused'] / 1e9:>10.1f}"
              f"{flops / r['torch'] / 1e9:>11.1f}{model * 1e3:>14.2f}{ceiling:>14.2f}")
    print(f"\nAll times measured (median; caches flushed between repetitions); 'x unfused' / 'x torch' = baseline "
          f"time / tuned time. '% numpy' uses the better numpy rate ({peak / 1e9:.1f} GFLOP/s). 'unf model' = "
          f"unfused GEMM FLOPs at that rate + {UNFUSED_BYTES_PER_SCORE} B per score at the probed "
          f"{bandwidth / 1e9:.1f} GB/s (an estimate: S partly stays in the LLC on small shapes). 'x unf @numpy' = "
          f"measured unfused time / the fused FLOPs at numpy's rate: the speedup a fused kernel as fast as numpy's "
          f"matmul would show, so a shape where it is < 2 cannot meet the bar on this machine. Bar: >= 2x unfused on "
          f"every shape; {'met' if all(r['unfused'] / r['fused'] >= 2 for r in rows) else 'NOT met'} in this run.")
    print(f"vendor: {rows[0]['torch_label'] if rows else ''}")
    sides = [r for r in rows if r["side"]]
    if sides:
        print(f"\nInterleaved re-timing: tuned, unfused, torch, numpy 2048^3 in turn, {args.rounds} rounds in the same "
              f"minutes ({args.reps} reps each; ratios are medians of the per-round ratios)")
        hdr = (f"{'shape (fp32)':<28}{'tuned ms':>10}{'unfused ms':>12}{'torch ms':>10}{'x unfused':>11}"
               f"{'x torch':>9}{'GFLOP/s':>9}{'numpy GF/s':>12}{'% numpy':>9}{'x unf @numpy':>14}")
        print(hdr)
        print("-" * len(hdr))
        for r in sides:
            sd, flops = r["side"], get_op("attention").flops(r["problem"])
            print(f"{r['label']:<28}{sd['fused'] * 1e3:>10.2f}{sd['unfused'] * 1e3:>12.2f}{sd['torch'] * 1e3:>10.2f}"
                  f"{sd['x_unfused']:>11.2f}{sd['x_torch']:>9.2f}{flops / sd['fused'] / 1e9:>9.1f}"
                  f"{sd['numpy'] / 1e9:>12.1f}{100 * flops / sd['fused'] / sd['numpy']:>8.0f}%"
                  f"{sd['unfused'] / (flops / sd['numpy']):>14.2f}")
        met = all(r["side"]["x_unfused"] >= 2 for r in sides)
        print(f"Bar (>= 2x unfused on every shape), interleaved: {'met' if met else 'NOT met'}.")


if __name__ == "__main__":
    main()
