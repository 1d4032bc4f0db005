"""Model sanity at a glance: attention on ascend910b2 over the cann-bench gqa shapes.

For each case of ../shared/data/benchdata/cann-bench/gqa/cases.yaml (query [B,S,N_q,D],
key/value [B,S_kv,N_kv,D]; scaleValue <= 0 means 1/sqrt(D); bottom-right causal), prints the
roofline bound, the modeled best variant (over every valid config) and the modeled unfused
sequence. Every time here is MODELED (ascend.md §5), none is measured.

    .venv/bin/python benchmarks/ascend_gqa_model.py [--target ascend910b2] [--cases 1,8,11]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import yaml

from forge.backends.ascend.hw import AscendHW
from forge.backends.ascend.unfused import unfused
from forge.generators.ascendc.base import get_plan
from forge.ops import get_op
from forge.targets import get_target

CASES = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "benchdata" / "cann-bench" / "gqa" / "cases.yaml"


def problem_of(case: dict):
    (b, s, nq, d), (_, skv, nkv, _), _ = case["input_shape"]
    attrs = case.get("attrs", {})
    scale = attrs.get("scaleValue", -1.0)
    return get_op("attention").problem({"B": b, "Hq": nq, "Hkv": nkv, "Sq": s, "Skv": skv, "D": d}, case["dtype"][0],
                                       {"causal": bool(attrs.get("is_causal")), "scale": scale if scale > 0 else None})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="ascend910b2")
    ap.add_argument("--cases", default="", help="comma-separated case ids (default: all)")
    args = ap.parse_args()
    hw = AscendHW(get_target(args.target))
    cases = yaml.safe_load(CASES.read_text())["cases"]
    want = {int(x) for x in args.cases.split(",") if x}
    print(f"attention on {args.target}: all times MODELED (pipe model, ascend.md §5); roofline = max(FLOPs/peak, bytes/BW)")
    print(f"{'case':>4} {'shape (B,Hq,Hkv,Sq,Skv,D)':<28} {'dtype':<8} {'causal':<6} {'roofline us':>11} "
          f"{'best us':>9} {'roof%':>6} {'unfused us':>10} {'speedup':>7}  best config")
    for case in cases:
        if want and case["case_id"] not in want:
            continue
        p = problem_of(case)
        op = get_op("attention")
        roof = hw.target.roofline_seconds(op.flops(p), op.min_bytes(p), p.dtype)
        plan = get_plan(p, hw)
        en = plan.space().enumerate()
        s = p.shape
        shape = f"{s['B']},{s['Hq']},{s['Hkv']},{s['Sq']},{s['Skv']},{s['D']}"
        if not len(en):
            print(f"{case['case_id']:>4} {shape:<28} no valid config: {en.reason_counts}")
            continue
        t0 = time.time()
        best = min(((plan.model(en.config(i)).seconds, en.config(i)) for i in range(len(en))), key=lambda x: x[0])
        unf = sum(k.seconds for k in unfused(p, hw))
        cfg = " ".join(f"{k}={v}" for k, v in best[1].items())
        print(f"{case['case_id']:>4} {shape:<28} {p.dtype:<8} {str(p.attrs['causal']):<6} {roof * 1e6:>11.1f} "
              f"{best[0] * 1e6:>9.1f} {100 * roof / best[0]:>5.1f}% {unf * 1e6:>10.1f} {unf / best[0]:>6.2f}x  {cfg}"
              f"  [{len(en)} valid, {time.time() - t0:.1f}s]")


if __name__ == "__main__":
    main()
