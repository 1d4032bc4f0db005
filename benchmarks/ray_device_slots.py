"""How much `--devices N` buys the Ray executor: variants measured per second with 1, 2 and 4 slots.

There is no GPU or NPU here, so each slot stands in for one: a local Ray cluster offers a custom
resource (`forge_test_device`) in the quantity of the largest slot count, and each measurement
of forge's CPU test backend sleeps `--run-seconds` before timing the real softmax kernel (the
sleep is the device's time; `SlotLogCpuBackend` in forge/testing.py). Every slot count runs the
same variants, with builds already cached, in one run; the table prints wall seconds, variants
per second and the ratio to one slot. What it measures is the executor's overlap of slots, not
any device's speed.

    .venv/bin/python benchmarks/ray_device_slots.py [--variants 16] [--run-seconds 0.5]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import ray

from forge.executor import Job, make_executor
from forge.ops import get_op
from forge.targets import get_target
from forge.testing import SlotLogCpuBackend
from forge.variant import Variant

SLOTS = (1, 2, 4)


def run_once(backend: SlotLogCpuBackend, configs: list[dict], cache: Path, slots: int) -> tuple[float, int]:
    problem = get_op("softmax").problem({"M": 64, "N": 96})
    ex = make_executor("ray", backend, cache, build_workers=2, devices=slots)
    t0 = time.perf_counter()
    try:
        for i, c in enumerate(configs):
            ex.submit(Job(Variant(problem, "cpu", c), seed=i, reps=3, warmup=1, timeout=60.0))
        ok = sum(o.measurement.status == "ok" for o in ex.results())
    finally:
        ex.close()
    return time.perf_counter() - t0, ok


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", type=int, default=16)
    ap.add_argument("--run-seconds", type=float, default=0.5, help="the stand-in device's time per measurement")
    args = ap.parse_args()
    ray.init(num_cpus=2, resources={"forge_test_device": max(SLOTS)}, include_dashboard=False,
             log_to_driver=False, logging_level="ERROR")
    with tempfile.TemporaryDirectory() as tmp:
        backend = SlotLogCpuBackend(get_target("cpu"), str(Path(tmp) / "intervals.log"), run_seconds=args.run_seconds)
        configs = backend.space(get_op("softmax").problem({"M": 64, "N": 96})).enumerate().configs()[:args.variants]
        run_once(backend, configs, Path(tmp) / "cache", 1)          # warm the build cache and the workers
        rows = [(n, *run_once(backend, configs, Path(tmp) / "cache", n)) for n in SLOTS]
    ray.shutdown()
    base = rows[0][1]
    print(f"{len(configs)} variants, {args.run_seconds} s of stand-in device time each, builds cached\n")
    print("| device slots | wall s | variants/s | speed vs 1 slot | ok |")
    print("|---|---|---|---|---|")
    for n, wall, ok in rows:
        print(f"| {n} | {wall:.2f} | {len(configs) / wall:.2f} | {base / wall:.2f}x | {ok}/{len(configs)} |")


if __name__ == "__main__":
    main()
