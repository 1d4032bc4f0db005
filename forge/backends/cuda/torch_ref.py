"""Vendor baselines on a GPU node: torch eager (the unfused ops) and the fused torch kernel
(SDPA, matmul, rms_norm, softmax; for swiglu, which torch does not fuse, its silu kernel and a
mul), timed with the harness protocol (L2 flush, CUDA events).
Runs in a subprocess so a missing or broken torch never takes the tuner down."""
from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from forge.backends.base import Measurement
from forge.backends.cuda.harness import FLUSH_MIN_BYTES
from forge.backends.child import dies_with_parent
from forge.problem import Problem

_SCRIPT = r'''
import json, sys, torch, torch.nn.functional as F
p = json.loads(sys.argv[1]); reps = int(sys.argv[2]); flush_min = int(sys.argv[3])
dt = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[p["dtype"]]
s, a = p["shape"], p["attrs"]; g = torch.Generator(device="cuda").manual_seed(p["seed"])
r = lambda *sh: torch.randn(*sh, device="cuda", dtype=dt, generator=g)
fns = {}
if p["op"] == "attention":
    q, k, v = r(s["B"], s["Hq"], s["Sq"], s["D"]), r(s["B"], s["Hkv"], s["Skv"], s["D"]), r(s["B"], s["Hkv"], s["Skv"], s["D"])
    rep = s["Hq"] // s["Hkv"]; scale = a.get("scale") or s["D"] ** -0.5; causal = bool(a.get("causal"))
    def eager():
        kk, vv = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        S = (q @ kk.transpose(-1, -2)) * scale
        if causal:
            i = torch.arange(s["Sq"], device="cuda")[:, None]; j = torch.arange(s["Skv"], device="cuda")[None]
            S = S.masked_fill(j > i + s["Skv"] - s["Sq"], float("-inf"))
        return torch.softmax(S, -1) @ vv
    # bottom-right causal equals SDPA's top-left mask only when Sq == Skv
    if not causal or s["Sq"] == s["Skv"]:
        fns["vendor"] = ("torch SDPA", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=rep > 1))
    fns["unfused"] = ("torch eager (matmul, scale, softmax, matmul)", eager)
elif p["op"] == "matmul":
    A = r(s["M"], s["K"]); B = r(s["N"], s["K"]) if a.get("transpose_b") else r(s["K"], s["N"])
    fns["vendor"] = ("torch matmul (cuBLAS)", (lambda: A @ B.t()) if a.get("transpose_b") else (lambda: A @ B))
elif p["op"] == "rmsnorm":
    x, w = r(s["M"], s["N"]), r(s["N"]); res = r(s["M"], s["N"]) if a.get("residual") else None
    eps = a.get("eps", 1e-6)
    h = (lambda: x + res) if res is not None else (lambda: x)
    fns["vendor"] = ("torch rms_norm", lambda: F.rms_norm(h(), (s["N"],), w, eps))
    fns["unfused"] = ("torch eager rmsnorm", lambda: (lambda t: t * torch.rsqrt(t.float().pow(2).mean(-1, keepdim=True) + eps).to(dt) * w)(h()))
elif p["op"] == "softmax":
    x = r(s["M"], s["N"])
    fns["vendor"] = ("torch softmax", lambda: torch.softmax(x, -1))
    fns["unfused"] = ("torch eager softmax", lambda: (lambda e: e / e.sum(-1, keepdim=True))(torch.exp(x - x.amax(-1, keepdim=True))))
elif p["op"] == "softmax_axis":
    x = r(s["B"], s["K"], s["I"])
    fns["vendor"] = ("torch softmax (dim=1)", lambda: torch.softmax(x, 1))
    fns["unfused"] = ("torch eager softmax (dim=1)", lambda: (lambda e: e / e.sum(1, keepdim=True))(torch.exp(x - x.amax(1, keepdim=True))))
elif p["op"] == "swiglu":
    x = r(s["M"], 2 * s["N"]); xa, xb = x.chunk(2, -1)
    fns["vendor"] = ("torch silu(a) * b (no fused SwiGLU in torch)", lambda: F.silu(xa) * xb)
    fns["unfused"] = ("torch eager sigmoid, mul, mul", lambda: torch.sigmoid(xa) * xa * xb)
cache = torch.empty(max(flush_min, 2 * torch.cuda.get_device_properties(0).L2_cache_size), dtype=torch.int8, device="cuda")
out = []
for name, (label, fn) in fns.items():
    for _ in range(10): fn()
    ts = []
    for _ in range(reps):
        cache.zero_(); e0 = torch.cuda.Event(enable_timing=True); e1 = torch.cuda.Event(enable_timing=True)
        e0.record(); fn(); e1.record(); e1.synchronize(); ts.append(e0.elapsed_time(e1) * 1e-3)
    out.append({"name": name, "label": label, "timings": ts})
print(json.dumps(out))
'''


def measure_torch(p: Problem, *, seed: int, reps: int, timeout: float) -> list[tuple[str, str, Measurement]]:
    """[(name, label, Measurement)], empty when torch (with CUDA) is not importable."""
    spec = json.dumps({"op": p.op, "shape": p.shape, "dtype": p.dtype, "attrs": p.attrs, "seed": seed})
    try:
        r = subprocess.run(dies_with_parent([sys.executable, "-c", _SCRIPT, spec, str(max(5, reps)), str(FLUSH_MIN_BYTES)]),
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return []
    if r.returncode != 0:
        return []
    rows: list[dict[str, Any]] = json.loads(r.stdout.strip().splitlines()[-1])
    return [(x["name"], x["label"], Measurement("ok", timings=x["timings"], time_kind="measured",
                                                extra={"note": "torch on fresh random inputs; not checked by forge"}))
            for x in rows]
