"""Fused attention kernel knobs, the unfused baseline's GEMM, and the cache probe of the CPU backend."""
from __future__ import annotations

import random
import re

import pytest

from forge.backends import get_backend
from forge.backends.cpu import hwinfo
from forge.generators import c as cgen
from forge.generators.c import _split_chunks, baseline_gemm_config
from forge.generators.c.spaces import space_data
from forge.ops import get_op
from forge.targets import get_target
from forge.variant import Variant


def _configs_covering_every_value(space, seed: int) -> list[dict]:
    """For every value of every parameter, one random valid config holding it (deduplicated)."""
    enum = space.enumerate()
    configs = enum.configs()
    rng = random.Random(seed)
    picked: dict[tuple, dict] = {}
    for param in space.params:
        for value in param.values:
            holding = [c for c in configs if c[param.name] == value]
            if holding:
                c = rng.choice(holding)
                picked[tuple(sorted(c.items()))] = c
    return list(picked.values())


def _all_correct(backend, cache_dir, p, configs: list[dict]) -> None:
    """Build and run every config once against the float64 reference; name each that fails."""
    failures = []
    for i, cfg in enumerate(configs):
        v = Variant(p, "cpu", cfg)
        m = backend.run(backend.build(v, cache_dir), v, seed=i, warmup=0, reps=1, timeout=60)
        if m.status != "ok":
            failures.append((cfg, m.status, m.reason[:200]))
    assert not failures, failures


@pytest.mark.slow
@pytest.mark.parametrize("shape,orders", [
    (dict(B=1, Hq=4, Hkv=2, Sq=120, Skv=230, D=24), {"head", "group"}),
    # decode-like: 3 heads a kv head share the lanes; a block of 16 lanes holds 5 queries of each
    # head (the last block 2), one of 32 holds all 7 and leaves 11 lanes empty
    (dict(B=2, Hq=6, Hkv=2, Sq=7, Skv=70, D=24), {"head", "group", "lanes"}),
])
def test_every_value_of_every_attention_knob_is_correct(backend, cache_dir, shape, orders):
    """GQA, causal, tails everywhere (Sq, Skv not multiples of any block; D=24 packs V at vec=16 and
    reads it in place at vec=8); every block size, tile shape, order, vec, schedule and thread count."""
    p = get_op("attention").problem(shape, "float32", {"causal": True})
    space = backend.space(p)
    configs = _configs_covering_every_value(space, seed=7)
    every = space.enumerate().configs()
    for param in space.params:   # the sweep really covers every value a valid config can take
        assert {c[param.name] for c in configs} == {c[param.name] for c in every}, param.name
    assert {c["vec"] for c in configs} == {8, 16} and {c["order"] for c in configs} == orders
    _all_correct(backend, cache_dir, p, configs)


def test_split_chunks_are_balanced():
    assert _split_chunks(8, 6) == [(0, 4), (4, 4)]
    assert _split_chunks(8, 24) == [(0, 8)]
    assert _split_chunks(3, 1) == [(0, 1), (1, 1), (2, 1)]
    assert _split_chunks(7, 3) == [(0, 3), (3, 2), (5, 2)]


@pytest.mark.parametrize("M,N,K,tb", [(2048, 2048, 128, True), (2048, 128, 2048, False), (512, 512, 128, True),
                                      (33, 47, 24, True), (33, 24, 47, False), (1, 5, 3, False)])
def test_baseline_gemm_config_is_the_fixed_rule_and_valid(M, N, K, tb):
    target = get_target("cpu")
    cfg = baseline_gemm_config(M, N, K, tb, target, threads=2)
    pref = space_data()["unfused_gemm"]
    assert cfg["mr"] == pref["mr"] and cfg["nv"] == pref["nv"]
    assert cfg["vec"] == target.details["simd_lanes_fp32"]
    for key, dim in (("mc", M), ("nc", N), ("kc", K)):
        assert cfg[key] <= pref[key]
        if dim >= pref[key]:
            assert cfg[key] == pref[key]          # large dimensions get the full BLAS-style block
    p = get_op("matmul").problem(dict(M=M, N=N, K=K), "float32", {"transpose_b": tb})
    assert not get_backend("cpu").space(p).check(cfg)


def test_unfused_attention_runs_the_matmul_kernels_gemm():
    """The baseline's QK^T and PV are the packed, register-tiled routine of the matmul kernel."""
    target = get_target("cpu")
    p = get_op("attention").problem(dict(B=1, H=8, S=1024, D=64), "float32", {})
    unfused = cgen.generate_unfused(p, 2, target)
    qk = baseline_gemm_config(1024, 1024, 64, True, target, 2)
    mm = cgen.generate(get_op("matmul").problem(dict(M=1024, N=1024, K=64), "float32", {"transpose_b": True}),
                       qk, target)
    assert "static void qk_block(" in unfused and "static void pv_block(" in unfused
    body = mm[mm.index("static void mm_block("):mm.index("void forge_kernel")].rstrip()
    assert body.replace("mm_block", "qk_block") in unfused      # the same routine, text for text
    assert "#pragma omp simd" not in unfused                   # no compiler-vectorised loop nests left


@pytest.mark.parametrize("shape,attrs", [(dict(B=2, Hq=4, Hkv=1, Sq=70, Skv=33, D=40), {}),
                                         (dict(B=1, Hq=2, Hkv=2, Sq=17, Skv=300, D=16), {"causal": True})])
def test_unfused_attention_baseline_correct(backend, cache_dir, shape, attrs, monkeypatch):
    monkeypatch.setattr("forge.backends.cpu.backend.measure_vendor", lambda *a, **k: None)
    p = get_op("attention").problem(shape, "float32", attrs)
    (base,) = backend.baselines(p, cache_dir, seed=2, reps=1, timeout=60)
    assert base.measurement.status == "ok", base.measurement.reason
    assert "packed GEMM" in base.label


def test_cache_probe_order(monkeypatch, tmp_path):
    shipped = get_target("cpu")               # the tests pin llc_bytes (conftest); probed here unpinned
    target = shipped.model_copy(update={"details": {k: v for k, v in shipped.details.items()
                                                    if k not in ("l2_bytes", "llc_bytes")}})
    pinned = target.model_copy(update={"details": {**target.details, "l2_bytes": 12345}})
    assert hwinfo.probe_cache(pinned, 2) == (12345, "target cpu details.l2_bytes")
    idx = tmp_path / "index2"
    idx.mkdir()
    (idx / "level").write_text("2\n")
    (idx / "type").write_text("Unified\n")
    (idx / "size").write_text("1024K\n")
    monkeypatch.setattr(hwinfo, "_SYSFS", tmp_path)
    hwinfo._sysfs_cache_bytes.cache_clear()
    hwinfo._getconf_cache_bytes.cache_clear()
    try:
        assert hwinfo.probe_cache(target, 2) == (1024 * 1024, f"sysfs {tmp_path}/index*/size (level 2)")
        monkeypatch.setattr(hwinfo, "_getconf_cache_bytes", lambda level: None)
        assert hwinfo.probe_cache(target, 3) == (hwinfo._FALLBACK[3], "fallback (nothing probed)")
        assert set(hwinfo.caches(target)) == {"l2_bytes", "llc_bytes"}
    finally:
        hwinfo._sysfs_cache_bytes.cache_clear()


@pytest.mark.parametrize("causal", [False, True])
def test_fused_attention_has_no_scalar_libm_call(causal):
    """The exp of the online softmax is the vector polynomial of common.h, never a per-element expf."""
    p = get_op("attention").problem(dict(B=1, Hq=4, Hkv=2, S=64, D=32), "float32", {"causal": causal})
    cfg = dict(block_q=32, block_kv=64, vec=16, kr=4, qv=2, mr=2, order="group", threads=1, schedule="static")
    text = re.sub(r"/\*.*?\*/", "", cgen.generate(p, cfg, get_target("cpu")), flags=re.S)   # code only
    for call in ("expf(", "exp(", "exp2f(", "fmaxf("):
        assert f" {call}" not in text and f"({call}" not in text, call
    assert text.count("vexp2_neg(") >= 3   # the definition, P = 2^(S - m), alpha = 2^(m_old - m_new)


def test_matmul_baseline_is_the_gemm_at_the_fixed_config():
    """matmul has no unfused form: its baseline is the same packed GEMM at the fixed rule's config."""
    target = get_target("cpu")
    p = get_op("matmul").problem(dict(M=300, N=200, K=100), "float32", {"transpose_b": False})
    text = cgen.generate_unfused(p, 2, target)
    cfg = baseline_gemm_config(300, 200, 100, False, target, 2)
    assert "static void mm_block(" in text and f"mc={cfg['mc']} nc={cfg['nc']} kc={cfg['kc']}" in text
    assert "packed GEMM" in cgen.unfused_label(p)


@pytest.mark.slow
@pytest.mark.parametrize("shape,causal", [
    (dict(B=2, Hq=8, Hkv=2, Sq=1, Skv=45, D=16), False),     # decode: 4 heads x 1 query in 16 lanes
    (dict(B=1, Hq=6, Hkv=2, Sq=7, Skv=70, D=24), True),      # 3 heads: blocks of 5 queries and a tail of 2
    (dict(B=1, Hq=16, Hkv=1, Sq=3, Skv=33, D=32), True),     # 16 heads: 1 query each in 16 lanes, 2 in 32
])
def test_heads_sharing_the_lanes_correct(backend, cache_dir, shape, causal):
    """order=lanes: lane r holds query r / HL of head r % HL. Every block_q, vec, both forms of
    S = Q K^T and the smallest and largest PV row tile, so rows past the heads' queries, partial
    query blocks and (causal) the diagonal mask by query rather than by lane are all checked
    against the float64 reference."""
    p = get_op("attention").problem(shape, "float32", {"causal": causal})
    lanes = [c for c in backend.space(p).enumerate().configs() if c["order"] == "lanes" and c["threads"] == 2]
    picked = {(c["block_q"], c["vec"], c["mr"], c["qk"]): c for c in lanes if c["mr"] in (1, 8)}
    assert len({k[0] for k in picked}) == (1 if shape["Sq"] == 1 else 2) and len(picked) >= 8
    _all_correct(backend, cache_dir, p, list(picked.values()))


@pytest.mark.slow
@pytest.mark.parametrize("shape,causal", [
    (dict(B=2, Hq=3, Hkv=3, Sq=1, Skv=45, D=24), False),     # MHA decode; D=24 leaves a tail past whole vectors
    (dict(B=1, Hq=4, Hkv=2, Sq=2, Skv=37, D=40), True),
])
def test_dot_product_scores_correct(backend, cache_dir, shape, causal):
    """qk=dot: S = Q K^T as KR dot products along D for the lanes holding a query, every order, vec,
    KR and the smallest and largest PV row tile, against the float64 reference."""
    p = get_op("attention").problem(shape, "float32", {"causal": causal})
    dot = [c for c in backend.space(p).enumerate().configs() if c["qk"] == "dot" and c["mr"] in (1, 8)]
    picked = {(c["order"], c["vec"], c["kr"], c["mr"]): c for c in dot}
    assert {k[2] for k in picked} == set(space_data()["attention"]["kr"]) and len(picked) >= 12
    _all_correct(backend, cache_dir, p, list(picked.values()))
