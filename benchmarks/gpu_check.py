"""GPU-node check of the CUDA backend: build a few variants per op, run them on the GPU through the
harness (correctness against the float64 reference + timing), time torch's own kernel (SDPA,
matmul, rms_norm, softmax) the same way, and print one table. Meant to finish in under 8 minutes.

    python benchmarks/gpu_check.py [--target h100] [--per-op 4] [--reps 30]

Without a GPU it says why and exits 1 (use `forge tune --measure model` for modeled runs).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from forge.backends import get_backend  # noqa: E402
from forge.backends.cuda.torch_ref import measure_torch  # noqa: E402
from forge.ops import get_op  # noqa: E402
from forge.variant import Variant  # noqa: E402

CASES = [
    ("attention", dict(B=4, Hq=32, Hkv=8, S=2048, D=128), "bfloat16", {}),
    ("attention", dict(B=2, Hq=16, Hkv=16, S=1024, D=64), "float16", {"causal": True}),
    ("attention", dict(B=1, Hq=32, Hkv=8, Sq=1, Skv=8192, D=128), "bfloat16", {}),
    ("matmul", dict(M=4096, N=4096, K=4096), "bfloat16", {}),
    ("matmul", dict(M=64, N=8192, K=8192), "float16", {"transpose_b": True}),
    ("matmul", dict(M=2048, N=4096, K=4096), "float32", {}),
    ("rmsnorm", dict(M=8192, N=4096), "bfloat16", {"residual": True}),
    ("softmax", dict(M=8192, N=4096), "float32", {}),
    ("softmax_axis", dict(B=4, K=255, I=2049), "float16", {}),
    ("swiglu", dict(M=4096, N=4096), "bfloat16", {}),
]


def pick(backend, p, k):
    """k configs spread over the valid space, ranked by the model first."""
    e = backend.space(p).enumerate()
    cfgs = e.configs()
    cfgs.sort(key=lambda c: backend.model(Variant(p, backend.target.name, c)))
    step = max(1, len(cfgs) // k)
    return cfgs[::step][:k]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=os.environ.get("FORGE_GPU_TARGET", "h100"))
    ap.add_argument("--per-op", type=int, default=4)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--ops", default="", help="only these ops, comma-separated (default: all)")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "forge-gpu-check"))
    a = ap.parse_args()
    if a.per_op < 1 or a.reps < 1:
        ap.error(f"--per-op and --reps must be >= 1 (got {a.per_op}, {a.reps})")
    ops = {o for o in a.ops.split(",") if o}
    unknown = ops - {c[0] for c in CASES}
    if unknown:
        ap.error(f"--ops: no case of {', '.join(sorted(unknown))}; the cases' ops: "
                 f"{', '.join(sorted({c[0] for c in CASES}))}")
    be = get_backend(a.target, measure="device")
    ok, why = be.measure_available()
    if not ok:
        print(f"no GPU measurement possible here: {why}")
        return 1
    cache = Path(a.cache)
    t0 = time.time()
    rows = []
    for op, shape, dtype, attrs in CASES:
        if ops and op not in ops:
            continue
        p = get_op(op).problem(shape, dtype, attrs)
        variants = [Variant(p, a.target, c) for c in pick(be, p, a.per_op)]
        with ThreadPoolExecutor(os.cpu_count() or 4) as ex:
            arts = list(ex.map(lambda v: be.build(v, cache), variants))
        best = None
        for v, art in zip(variants, arts):
            m = be.run(art, v, seed=1, warmup=10, reps=a.reps, timeout=120)
            med = sorted(m.timings)[len(m.timings) // 2] if m.timings else None
            rows.append((p.short(), v.config_str(), m.status, med, be.model(v), art.resources.get("regs"),
                         art.resources.get("blocks_per_sm"), m.reason or ""))
            if m.status == "ok" and (best is None or med < best):
                best = med
        for name, label, m in measure_torch(p, seed=1, reps=a.reps, timeout=300):
            med = sorted(m.timings)[len(m.timings) // 2]
            rows.append((p.short(), label, "torch", med, None, None, None,
                         f"forge best / torch = {best / med:.2f}" if best else ""))
        print(f"[{time.time() - t0:6.1f} s] {p.short()}", flush=True)
    reasons = [f"  {r[0]} {r[1]}: {r[7]}" for r in rows if r[2] != "torch" and r[7]]
    rows = [(*r[:7], r[7] if r[2] == "torch" else r[7][:60]) for r in rows]
    hdr = ("problem", "variant", "status", "measured", "modeled", "regs", "blk/SM", "note")
    w = [max(len(str(r[i] if not isinstance(r[i], float) else f"{r[i] * 1e6:.1f} us")) for r in rows + [hdr])
         for i in range(len(hdr))]
    fmt = lambda x: f"{x * 1e6:.1f} us" if isinstance(x, float) else ("" if x is None else str(x))  # noqa: E731
    print(" | ".join(h.ljust(n) for h, n in zip(hdr, w)))
    for r in rows:
        print(" | ".join(fmt(x).ljust(n) for x, n in zip(r, w)))
    if reasons:
        print("reasons in full:", *reasons, sep="\n")
    bad = [r for r in rows if r[2] in ("incorrect", "runtime_error", "timeout")]
    print(f"{len(rows)} rows in {time.time() - t0:.0f} s; {len(bad)} incorrect/failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
