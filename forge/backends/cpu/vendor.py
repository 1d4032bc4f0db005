"""The vendor baseline on CPU: PyTorch's own kernels, timed like our kernels, in a subprocess.

Run as `python -m forge.backends.cpu.vendor` with a JSON request on stdin (the thread counts to
time it at, in turn); prints a JSON header line once torch is imported, then one JSON line per
thread count as soon as it is timed, so a crash or hang at one count loses only that count.
The subprocess keeps torch (and its thread pool) out of the tuner's process and lets a hang be
killed. Correctness is checked with the operator's float64 reference as for every variant.
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from forge.backends.child import dies_with_parent
from forge.backends.base import Baseline, Measurement
from forge.problem import Problem

# Where torch has an out= form, its output (and swiglu's silu) goes into buffers allocated once,
# as forge's kernels write into theirs: a fresh output each call is paged in anew above glibc's
# 32 MiB mmap threshold, and timed so it made torch about 1.8x slower on a 4096x4096 softmax.
# scaled_dot_product_attention and rms_norm have no out= form and allocate their output per call.
LABELS = {
    "attention": "torch.nn.functional.scaled_dot_product_attention (output allocated per call)",
    "rmsnorm": "torch.nn.functional.rms_norm (output allocated per call)",
    "softmax": "torch softmax, out=",
    "softmax_axis": "torch softmax(x, dim=1), out=",
    "matmul": "torch.matmul, out=",
    "swiglu": "torch silu(a) * b, out= (torch has no fused SwiGLU)",
}

# How the subprocess is started, after the interpreter (tests start a variant that crashes).
ENTRY = ["-m", "forge.backends.cpu.vendor"]


def measure_vendor(problem: Problem, *, seed: int, warmup: int, reps: int, timeout: float,
                   threads: Sequence[int], flush_bytes: int, check: bool = True) -> list[Baseline] | None:
    """torch timings of the same problem, one Baseline per thread count in `threads`, or None when
    torch is not installed. One subprocess times every thread count in turn: torch's import takes
    seconds, as long as the timing itself for most problems, and is paid once. When it dies or hangs
    at one count, that count is recorded so and the counts after it are timed in a fresh subprocess.
    `check=False` skips the float64 comparison (re-timing only, as in `run_executable`)."""
    if importlib.util.find_spec("torch") is None or problem.op not in LABELS:
        return None
    req = {"op": problem.op, "shape": problem.shape, "dtype": problem.dtype, "attrs": problem.attrs,
           "seed": seed, "warmup": warmup, "reps": reps, "flush_bytes": flush_bytes, "check": check}
    return _measure_counts(req, [int(t) for t in threads], timeout)


def _measure_counts(req: dict[str, Any], counts: list[int], timeout: float) -> list[Baseline]:
    """A Baseline for each of `counts`, timed in turn in one subprocess, and in a fresh one for the
    counts after one it died or hung at."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    label = LABELS[req["op"]]
    limit = timeout * len(counts) + 60                        # + torch import time
    proc = subprocess.Popen(dies_with_parent([sys.executable, *ENTRY]), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(json.dumps({**req, "threads": counts}), timeout=limit)
        failure = None if proc.returncode == 0 else Measurement(
            "runtime_error", f"exit {proc.returncode}: {err.strip()[-500:]}")
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        failure = Measurement("timeout", f"torch did not finish within {limit:g} s")
    lines = _json_lines(out)
    header = next((d for d in lines if "label" in d), None)
    runs = [d for d in lines if "threads" in d]
    label = header["label"] if header else label
    done = [Baseline("vendor", label, Measurement(r["status"], r.get("reason", ""), r.get("timings", []),
                                                  r.get("errors", {}),
                                                  extra={"threads": r["threads"], "torch": header["torch"]}))
            for r in runs]
    left = counts[len(runs):]
    if not left:
        return done
    if failure is None:
        failure = Measurement("runtime_error", "torch exited without timing this thread count")
    if header is None:                        # torch never started: every count would fail alike
        failure.extra["threads"] = "/".join(str(t) for t in left)
        return done + [Baseline("vendor", label, failure)]
    failure.extra.update(threads=left[0], torch=header["torch"])
    rest = _measure_counts(req, left[1:], timeout) if left[1:] else []
    return done + [Baseline("vendor", label, failure)] + rest


def _json_lines(out: str) -> list[dict[str, Any]]:
    """The complete JSON lines of the subprocess's output (a crash can cut the last one short)."""
    lines = []
    for line in out.splitlines():
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return [d for d in lines if isinstance(d, dict)]


def _torch_call(problem: Problem, t: dict[str, Any]):  # noqa: ANN202 - returns a closure over torch tensors
    import torch
    import torch.nn.functional as F

    p, a = problem, problem.attrs
    if p.op == "attention":
        from forge.ops.attention import Attention

        q, k, v = t["q"], t["k"], t["v"]
        scale = Attention.scale(p)
        sq, skv = p.shape["Sq"], p.shape["Skv"]
        mask, is_causal = None, False
        if a.get("causal"):
            if sq == skv:
                is_causal = True
            else:  # torch's is_causal is top-left aligned; ours is bottom-right
                mask = torch.ones(sq, skv, dtype=torch.bool).tril(diagonal=skv - sq)
        if p.shape["Hq"] != p.shape["Hkv"]:
            try:
                F.scaled_dot_product_attention(q[:, :, :1], k, v, scale=scale, enable_gqa=True)
                return lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal,
                                                              scale=scale, enable_gqa=True)
            except TypeError:  # torch without enable_gqa: expand the kv heads
                g = p.shape["Hq"] // p.shape["Hkv"]
                return lambda: F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                                                              attn_mask=mask, is_causal=is_causal, scale=scale)
        return lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale)
    if p.op == "rmsnorm":
        n = (p.shape["N"],)
        eps = float(a["eps"])
        if a.get("residual"):
            return lambda: F.rms_norm(t["x"] + t["residual"], n, t["weight"], eps)
        return lambda: F.rms_norm(t["x"], n, t["weight"], eps)
    if p.op in ("softmax", "softmax_axis"):
        x, dim = t["x"], -1 if p.op == "softmax" else 1
        y = torch.empty_like(x)
        return lambda: torch.ops.aten._softmax.out(x, dim, False, out=y)
    if p.op == "swiglu":
        a, b = t["x"].chunk(2, -1)
        act, y = torch.empty_like(a), torch.empty_like(a)
        return lambda: torch.mul(torch.ops.aten.silu.out(a, out=act), b, out=y)
    b = t["b"].T if a.get("transpose_b") else t["b"]
    y = torch.empty(p.shape["M"], p.shape["N"], dtype=t["a"].dtype)
    return lambda: torch.matmul(t["a"], b, out=y)


def _main() -> None:
    import numpy as np
    import torch

    from forge.ops import get_op

    req = json.loads(sys.stdin.read())
    problem = Problem(req["op"], req["shape"], req["dtype"], req["attrs"])
    op = get_op(problem.op)
    inputs = op.make_inputs(problem, int(req["seed"]))
    tensors = {k: torch.from_numpy(v) for k, v in inputs.items()}
    fn = _torch_call(problem, tensors)
    flush = np.zeros(int(req["flush_bytes"]) // 4 + 16, dtype=np.float32)
    print(json.dumps({"label": f"{LABELS[problem.op]} (torch {torch.__version__})", "torch": torch.__version__}),
          flush=True)
    with torch.inference_mode():
        for threads in req["threads"]:
            run: dict[str, Any] = {"threads": int(threads)}
            try:
                torch.set_num_threads(int(threads))
                out = fn().numpy()
                metrics = op.check(problem, inputs, out, seed=int(req["seed"])) if req.get("check", True) else None
                if metrics is not None:
                    run["errors"] = metrics.as_dict()
                if metrics is not None and not metrics.ok:
                    run.update(status="incorrect", reason=metrics.reason)
                else:
                    for _ in range(int(req["warmup"])):
                        fn()
                    timings = []
                    for _ in range(int(req["reps"])):
                        flush[::16] += 1.0                   # evict the caches, untimed
                        t0 = time.perf_counter()
                        fn()
                        timings.append(time.perf_counter() - t0)
                    run.update(status="ok", timings=timings)
            except Exception as exc:  # noqa: BLE001 - one thread count failing keeps the others' runs
                run.update(status="runtime_error", reason=f"torch raised {type(exc).__name__}: {exc}"[:500])
            print(json.dumps(run), flush=True)


if __name__ == "__main__":
    _main()
