"""How long the Ascend pipe model takes per config, and what the steady-state extrapolation buys.

For the cann-bench cases of the row-streaming operators (softmax down a middle axis, the longest
pipe streams of the suite; rms_norm, softmax and swi_glu, up to a million rows) and a sample of
their valid configs, times each config's model twice in the same run: as forge models it
(`plan.model`: a long stream over two prefixes of whole units, extrapolated) and by simulating
every step (`Plan.model`, the base class's full simulation).
Prints per case the seconds of each, their ratio, and the largest relative difference of the
modeled times. Every time the model produces is MODELED (ascend.md §5); what is measured here is
the model's own run time on this machine.

    .venv/bin/python benchmarks/ascend_model_speed.py [--target ascend910b2] [--configs 20] [--ops softmax_axis,swiglu]
"""
from __future__ import annotations

import argparse
import time

from forge.backends import get_backend
from forge.bench.suites import load_suite
from forge.generators.ascendc.base import Plan
from forge.ops import get_op


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="ascend910b2")
    ap.add_argument("--configs", type=int, default=20, help="configs per case, spread over its valid space")
    ap.add_argument("--ops", default="softmax_axis,rmsnorm,softmax,swiglu", help="forge operators of the cases")
    args = ap.parse_args()
    be = get_backend(args.target, measure="model")
    cases = [c for c in load_suite("cannbench").cases if c.op in args.ops.split(",")]
    print(f"{'case':<40} {'configs':>7} {'forge s':>8} {'full s':>8} {'full/forge':>10} {'max rel. diff':>13}")
    totals = [0.0, 0.0]
    for case in cases:
        p = get_op(case.op).problem(dict(case.shape), case.dtype, dict(case.attrs))
        plan = be.plan(p)
        en = be.space(p).enumerate()
        picks = range(0, len(en), max(1, len(en) // args.configs))
        fast_s = full_s = worst = 0.0
        for i in picks:
            cfg = en.config(i)
            t = time.perf_counter()
            fast = plan.model(cfg).seconds
            fast_s += time.perf_counter() - t
            t = time.perf_counter()
            full = Plan.model(plan, cfg).seconds
            full_s += time.perf_counter() - t
            worst = max(worst, abs(fast - full) / full)
        totals[0] += fast_s
        totals[1] += full_s
        shape = ",".join(f"{k}={v}" for k, v in case.shape.items())
        print(f"{case.op + ' ' + case.case_id + ' ' + shape:<40} {len(picks):>7} {fast_s:>8.1f} {full_s:>8.1f} "
              f"{full_s / fast_s:>10.1f} {worst:>13.1e}")
    print(f"{'all':<40} {'':>7} {totals[0]:>8.1f} {totals[1]:>8.1f} {totals[1] / totals[0]:>10.1f}")


if __name__ == "__main__":
    main()
