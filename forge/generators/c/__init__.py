"""C generators for the CPU backend: one Jinja2 template per kernel, config printed at the top.

`generate(problem, config, target)` gives the fused kernel file, `generate_unfused(problem, threads,
target)` the baseline sequence, `harness(problem)` the timing `main`. Everything tile-dependent (scratch
layout, register-tile unrolling, tails) is derived here from the config, never searched.
"""
from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
import numpy as np

from forge.generators.c.spaces import (FLOAT, attention_group, attention_pack_v, attention_scratch_floats,
                                       cpu_space, matmul_scratch_floats, padded_dp, space_data)
from forge.ops import get_op
from forge.ops.attention import Attention
from forge.problem import Problem
from forge.targets import Target

TEMPLATES = Path(__file__).with_name("templates")
ALIGN_FLOATS = 16  # 64-byte alignment of every scratch buffer


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def render(template: str, **ctx: Any) -> str:
    return _env().get_template(template).render(**ctx)


def scratch_layout(sizes: dict[str, int]) -> tuple[dict[str, tuple[int, int]], int]:
    """Offsets (64-byte aligned) of named per-thread buffers; returns (name -> (offset, size), total)."""
    out, off = {}, 0
    for name, size in sizes.items():
        out[name] = (off, int(size))
        off += -(-int(size) // ALIGN_FLOATS) * ALIGN_FLOATS
    return out, off


def _split_chunks(n_vec: int, per_step: int) -> list[tuple[int, int]]:
    """Head-dim vectors [0, n_vec) in the fewest chunks of at most per_step, sizes balanced
    (8 vectors at 6 per step -> 4 + 4, not 6 + 2): (first vector, count)."""
    n_chunks = -(-n_vec // per_step)
    base, extra = divmod(n_vec, n_chunks)
    out, v0 = [], 0
    for i in range(n_chunks):
        n = base + (1 if i < extra else 0)
        out.append((v0, n))
        v0 += n
    return out


def _c_float(x: float) -> str:
    return repr(float(x))


def _attention(p: Problem, cfg: dict[str, Any]) -> str:
    s = p.shape
    group = attention_group(p)
    G = group if cfg["order"] == "group" else 1      # lane sets: heads with BQ query lanes each
    HL = group if cfg["order"] == "lanes" else 1     # heads sharing the lanes of one set
    vec = cfg["vec"]
    dp = int(padded_dp(s["D"], vec))
    pack_v = bool(attention_pack_v(p, vec))
    floats = attention_scratch_floats(p, cfg)
    sizes = {"Qt": floats["Q"], "O": floats["O"], "S": floats["S"], "m": G * cfg["block_q"],
             "l": G * cfg["block_q"], "alpha": floats["alpha"]}
    if pack_v:
        sizes["V"] = floats["V"]
    layout, total = scratch_layout({k: int(np.asarray(v)) for k, v in sizes.items()})
    # PV register tile: `rows` rows x up to (max_accumulators // rows) head-dim vectors per pass
    pv_chunks = lambda rows: _split_chunks(dp // vec, max(1, space_data()["max_accumulators"] // rows))  # noqa: E731
    return render("attention.c.j2", problem_text=p.short(), config=cfg, G=G, HL=HL, HT=s["Hq"] // (G * HL), DP=dp,
                  dot=cfg.get("qk") == "dot",
                  pack_v=pack_v, scratch=layout, scratch_total=total,
                  pv_chunks=pv_chunks(cfg["mr"]), pv_chunks_row=pv_chunks(1),
                  causal=bool(p.attrs.get("causal")), qscale=_c_float(Attention.scale(p) * math.log2(math.e)),
                  **s, **cfg)


def _rows(p: Problem, cfg: dict[str, Any], template: str) -> str:
    return render(template, problem_text=p.short(), config=cfg, M=p.shape["M"], N=p.shape["N"],
                  residual=bool(p.attrs.get("residual")), eps=_c_float(p.attrs.get("eps", 0.0)), **cfg)


def _matmul(p: Problem, cfg: dict[str, Any]) -> str:
    sizes = {k: int(v) for k, v in matmul_scratch_floats(cfg).items()}
    layout, total = scratch_layout({"A": sizes["A panel"], "B": sizes["B panel"]})
    return render("matmul.c.j2", problem_text=p.short(), config=cfg, scratch=layout, scratch_total=total,
                  transpose_b=bool(p.attrs.get("transpose_b")), **p.shape, **cfg)


def generate(p: Problem, config: dict[str, Any], target: Target) -> str:
    """The fused kernel for a config (the caller has checked it against `cpu_space`)."""
    cpu_space(p, target)  # unknown op -> ForgeInputError
    cfg = dict(config)
    if p.op == "attention":
        return _attention(p, cfg)
    if p.op == "matmul":
        return _matmul(p, cfg)
    if p.op == "softmax_axis":
        return render("softmax_axis.c.j2", problem_text=p.short(), config=cfg, **p.shape, **cfg)
    return _rows(p, cfg, f"{p.op}.c.j2")


def unfused_label(p: Problem) -> str:
    if p.op == "matmul":
        return "the packed GEMM kernel at the fixed baseline config (matmul has no unfused form)"
    if p.op == "attention":
        return (f"unfused C sequence ({len(get_op(p.op).unfused_steps(p))} steps as separate OpenMP kernels; "
                "matmuls: the packed GEMM kernel at the fixed baseline config)")
    return f"unfused C sequence ({len(get_op(p.op).unfused_steps(p))} steps as separate OpenMP kernels)"


def baseline_gemm_config(M: int, N: int, K: int, transpose_b: bool, target: Target,
                         threads: int) -> dict[str, Any]:
    """The one GEMM config of the unfused baselines: `unfused_gemm` of spaces.yaml with each block
    clipped to its padded dimension (largest listed value not above it), vec = the target's lanes.
    It is checked against the matmul space, so the baseline runs a valid point of the tuned kernel."""
    d = space_data()
    lists, pref = d["matmul"], d["unfused_gemm"]
    cfg: dict[str, Any] = {"mr": pref["mr"], "nv": pref["nv"]}
    for key, dim in (("mc", M), ("nc", N), ("kc", K)):
        values = sorted(lists[key])
        cap = min(pref[key], -(-dim // values[0]) * values[0])
        cfg[key] = max(v for v in values if v <= cap)
    lanes = int(target.details.get("simd_lanes_fp32", d["unfused_vec"]))
    cfg.update(vec=lanes, threads=threads, schedule="static")
    p = get_op("matmul").problem(dict(M=M, N=N, K=K), "float32", {"transpose_b": transpose_b})
    bad = cpu_space(p, target).check(cfg)
    if bad:
        raise ValueError(f"baseline GEMM config {cfg} is not valid for {p.short()}: {'; '.join(bad)}")
    return cfg


def _gemm_packing(*configs: dict[str, Any]) -> dict[str, int]:
    """Per-thread packing buffers shared by the GEMM steps of one baseline: Ap at 0, Bp at pack_b
    (64-byte aligned), pack_total floats in all."""
    panels = [matmul_scratch_floats(c) for c in configs]
    pack_b = -(-max(int(f["A panel"]) for f in panels) // ALIGN_FLOATS) * ALIGN_FLOATS
    return {"pack_b": pack_b, "pack_total": pack_b + max(int(f["B panel"]) for f in panels)}


def generate_unfused(p: Problem, threads: int, target: Target) -> str:
    """The small-operator sequence a network runs without the fused kernel (same compiler, flags)."""
    s = p.shape
    ctx: dict[str, Any] = dict(problem_text=p.short(), threads=threads, vec=space_data()["unfused_vec"])
    if p.op == "attention":
        qk = baseline_gemm_config(s["Sq"], s["Skv"], s["D"], True, target, threads)
        pv = baseline_gemm_config(s["Sq"], s["D"], s["Skv"], False, target, threads)
        assert qk["vec"] == pv["vec"]
        ctx.update(causal=bool(p.attrs.get("causal")), scale=_c_float(Attention.scale(p)), qk_cfg=qk, pv_cfg=pv,
                   vec=qk["vec"], **_gemm_packing(qk, pv), **s)
    elif p.op == "matmul":
        tb = bool(p.attrs.get("transpose_b"))
        mm = baseline_gemm_config(s["M"], s["N"], s["K"], tb, target, threads)
        ctx.update(transpose_b=tb, gemm_cfg=mm, vec=mm["vec"], **_gemm_packing(mm), **s)
    else:
        ctx.update(residual=bool(p.attrs.get("residual")), eps=_c_float(p.attrs.get("eps", 0.0)), **s)
    return render(f"unfused_{p.op}.c.j2", steps=get_op(p.op).unfused_steps(p), **ctx)


def harness(p: Problem) -> str:
    op = get_op(p.op)
    in_floats = [int(np.prod(t.shape)) for t in op.inputs(p)]
    return render("harness.c.j2", in_floats=in_floats, out_floats=int(np.prod(op.output(p).shape)))


__all__ = ["FLOAT", "cpu_space", "generate", "generate_unfused", "harness", "render", "unfused_label"]
