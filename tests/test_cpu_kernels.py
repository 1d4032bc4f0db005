"""Random valid configs of every CPU kernel compile and match the float64 reference (with tails)."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forge.ops import get_op
from forge.variant import Variant

SETTINGS = settings(max_examples=6, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _build_and_run(backend, cache_dir, p, index):
    e = backend.space(p).enumerate()
    cfg = e.config(index % len(e))
    v = Variant(p, "cpu", cfg)
    art = backend.build(v, cache_dir)
    assert art.ok, art.error
    m = backend.run(art, v, seed=index, warmup=0, reps=1, timeout=30)
    assert m.status == "ok", (cfg, m.reason)
    assert m.time_kind == "measured" and len(m.timings) == 1 and m.timings[0] > 0


@SETTINGS
@given(st.integers(1, 2), st.sampled_from([(2, 2), (4, 1), (4, 2)]), st.integers(1, 70), st.integers(1, 70),
       st.sampled_from([8, 24, 32]), st.booleans(), st.integers(0, 10 ** 6))
def test_attention_configs_correct(backend, cache_dir, b, heads, sq, skv, d, causal, index):
    p = get_op("attention").problem(dict(B=b, Hq=heads[0], Hkv=heads[1], Sq=sq, Skv=skv, D=d), "float32",
                                    {"causal": causal})
    _build_and_run(backend, cache_dir, p, index)


@SETTINGS
@given(st.integers(1, 40), st.integers(1, 300), st.booleans(), st.integers(0, 10 ** 6))
def test_rmsnorm_configs_correct(backend, cache_dir, m, n, residual, index):
    _build_and_run(backend, cache_dir, get_op("rmsnorm").problem(dict(M=m, N=n), "float32", {"residual": residual}), index)


@SETTINGS
@given(st.integers(1, 40), st.integers(1, 300), st.integers(0, 10 ** 6))
def test_softmax_configs_correct(backend, cache_dir, m, n, index):
    _build_and_run(backend, cache_dir, get_op("softmax").problem(dict(M=m, N=n)), index)


@SETTINGS
@given(st.integers(1, 3), st.integers(1, 60), st.integers(1, 150), st.integers(0, 10 ** 6))
def test_softmax_axis_configs_correct(backend, cache_dir, b, k, i, index):
    """Softmax down the columns of x[B, K, I]: whole column blocks and the columns past them."""
    _build_and_run(backend, cache_dir, get_op("softmax_axis").problem(dict(B=b, K=k, I=i)), index)


@SETTINGS
@given(st.integers(1, 80), st.integers(1, 150), st.integers(1, 150), st.booleans(), st.integers(0, 10 ** 6))
def test_matmul_configs_correct(backend, cache_dir, m, n, k, tb, index):
    _build_and_run(backend, cache_dir, get_op("matmul").problem(dict(M=m, N=n, K=k), "float32", {"transpose_b": tb}), index)


@SETTINGS
@given(st.integers(1, 9), st.integers(1, 2100), st.integers(0, 10 ** 6))
def test_swiglu_configs_correct(backend, cache_dir, m, n, index):
    """Column chunks of a row (several per row once N > 1024), whole vectors and the tail."""
    _build_and_run(backend, cache_dir, get_op("swiglu").problem(dict(M=m, N=n)), index)


@pytest.mark.parametrize("m,n", [(700, 3), (1031, 1), (300, 7)])
def test_swiglu_rows_shorter_than_a_vector_correct(backend, cache_dir, m, n):
    """N < vec: y walked as one flat array, a and b of each lane loaded from its own row; several
    work items of COLS values, the last one short and ending in a scalar tail."""
    _build_and_run(backend, cache_dir, get_op("swiglu").problem(dict(M=m, N=n)), 0)


def test_causal_rows_without_keys_are_zero(backend, cache_dir):
    """Sq > Skv, bottom-right causal: the first Sq - Skv query rows see no key; output is zero."""
    p = get_op("attention").problem(dict(B=1, Hq=2, Hkv=1, Sq=40, Skv=8, D=16), "float32", {"causal": True})
    cfg = dict(block_q=16, block_kv=32, vec=8, kr=2, qv=1, mr=2, order="group", threads=1, schedule="static")
    v = Variant(p, "cpu", cfg)
    m = backend.run(backend.build(v, cache_dir), v, seed=3, warmup=0, reps=1, timeout=30)
    assert m.status == "ok", m.reason


@pytest.mark.parametrize("op,shape,attrs", [
    ("attention", dict(B=1, Hq=4, Hkv=2, Sq=33, Skv=47, D=24), {"causal": True}),
    ("rmsnorm", dict(M=9, N=70), {"residual": True}),
    ("softmax", dict(M=9, N=70), {}),
    ("softmax_axis", dict(B=2, K=9, I=70), {}),
    ("matmul", dict(M=9, N=70, K=33), {"transpose_b": True}),
    ("swiglu", dict(M=9, N=70), {}),
])
def test_unfused_baseline_correct(backend, cache_dir, op, shape, attrs, monkeypatch):
    monkeypatch.setattr("forge.backends.cpu.backend.measure_vendor", lambda *a, **k: None)
    p = get_op(op).problem(shape, "float32", attrs)
    (base,) = backend.baselines(p, cache_dir, seed=1, reps=2, timeout=30)
    assert base.name == "unfused" and base.measurement.status == "ok", base.measurement.reason
    assert base.measurement.extra["steps"] == get_op(op).unfused_steps(p)


def test_torch_baseline_times_every_thread_count_in_one_process(monkeypatch):
    """The vendor baseline is timed at each thread count the tuned kernels may choose, all in one
    subprocess (torch's import is paid once), each run checked against the float64 reference."""
    import subprocess

    import forge.backends.cpu.vendor as vendor

    pytest.importorskip("torch")
    started = []
    popen = subprocess.Popen

    def counting(*a, **k):
        started.append(a[0])
        return popen(*a, **k)

    monkeypatch.setattr(vendor.subprocess, "Popen", counting)
    p = get_op("softmax").problem(dict(M=8, N=70), "float32")
    runs = vendor.measure_vendor(p, seed=1, warmup=0, reps=2, timeout=30, threads=[1, 2], flush_bytes=1024)
    assert len([cmd for cmd in started if "forge.backends.cpu.vendor" in cmd]) == 1   # not setpriv's probe
    assert [b.measurement.extra["threads"] for b in runs] == [1, 2]
    for b in runs:
        assert b.name == "vendor" and b.measurement.status == "ok", b.measurement.reason
        assert len(b.measurement.timings) == 2 and b.measurement.errors


@pytest.mark.parametrize("op,shape,attrs", [("softmax", dict(M=8, N=70), {}), ("softmax_axis", dict(B=2, K=9, I=70), {}),
                                           ("matmul", dict(M=9, N=20, K=33), {"transpose_b": True}),
                                           ("matmul", dict(M=9, N=20, K=33), {}), ("swiglu", dict(M=5, N=70), {})])
def test_torch_writes_into_an_output_allocated_once_where_it_can(op, shape, attrs):
    """A fresh output per timed call is paged in anew above glibc's mmap threshold (32 MiB), a cost
    forge's kernels, whose output is allocated once, do not pay: torch softmax at 4096 x 4096 timed
    about 1.8x slower so. Every call returns the same buffer, and the result is still checked."""
    import torch

    from forge.backends.cpu.vendor import _torch_call, measure_vendor

    p = get_op(op).problem(shape, "float32", attrs)
    inputs = get_op(op).make_inputs(p, 1)
    fn = _torch_call(p, {k: torch.from_numpy(v) for k, v in inputs.items()})
    with torch.inference_mode():
        first, second = fn(), fn()
    assert first.data_ptr() == second.data_ptr()
    assert get_op(op).check(p, inputs, second.numpy(), seed=1).ok
    (run,) = measure_vendor(p, seed=1, warmup=0, reps=1, timeout=30, threads=[1], flush_bytes=1024)
    assert run.measurement.status == "ok" and "out=" in run.label, run.measurement.reason


def test_torch_crashing_at_one_thread_count_fails_only_that_count(monkeypatch):
    """A hard crash of the torch subprocess (an abort, no Python error to catch) at one thread count
    is recorded for that count; the count before it keeps its run and the count after it is timed
    in a fresh subprocess."""
    import forge.backends.cpu.vendor as vendor

    pytest.importorskip("torch")
    crash_at_2 = ("import os, torch\n"
                  "set_threads = torch.set_num_threads\n"
                  "torch.set_num_threads = lambda n: os.abort() if n == 2 else set_threads(n)\n"
                  "from forge.backends.cpu.vendor import _main\n"
                  "_main()\n")
    monkeypatch.setattr(vendor, "ENTRY", ["-c", crash_at_2])
    p = get_op("softmax").problem(dict(M=8, N=70), "float32")
    runs = vendor.measure_vendor(p, seed=1, warmup=0, reps=1, timeout=30, threads=[1, 2, 3], flush_bytes=1024)
    assert [b.measurement.extra["threads"] for b in runs] == [1, 2, 3]
    assert [b.measurement.status for b in runs] == ["ok", "runtime_error", "ok"]
    assert "exit -6" in runs[1].measurement.reason          # SIGABRT
    assert all("torch" in b.label for b in runs)


def test_a_torch_error_at_one_thread_count_keeps_the_other_counts_runs():
    """torch refusing one thread count (0 here, which set_num_threads rejects) is recorded for that
    count with torch's reason; the runs at the other counts are kept."""
    from forge.backends.cpu.vendor import measure_vendor

    pytest.importorskip("torch")
    p = get_op("softmax").problem(dict(M=8, N=70), "float32")
    ok, bad = measure_vendor(p, seed=1, warmup=0, reps=1, timeout=30, threads=[1, 0], flush_bytes=1024)
    assert ok.measurement.status == "ok" and len(ok.measurement.timings) == 1
    assert bad.measurement.status == "runtime_error" and "torch raised" in bad.measurement.reason


def test_the_cpu_roofline_keeps_the_highest_probe_of_the_machine(tmp_path, monkeypatch):
    """Runs, benches and reports on one machine share one roofline: each probe is kept as the
    highest seen for this host and core set, so a probe on a busy host (low rates) does not lower
    the bound; a damaged file only costs its history; an unwritable folder is said."""
    import forge.targets.cpu_probe as probe

    monkeypatch.setenv("FORGE_CACHE", str(tmp_path))
    rates = {"copy": 1e10}
    monkeypatch.setattr(probe, "_matmul_rate", lambda: 1e11)
    monkeypatch.setattr(probe, "_copy_bandwidth", lambda: rates["copy"])
    first = probe.probe_cpu(None)
    assert first.memory_bandwidth == 1e10
    assert f"kept in {tmp_path / 'cpu_probe.json'}" in first.sources["memory_bandwidth"]
    rates["copy"] = 4e9                                                 # a busy host reads low: kept
    assert probe.probe_cpu(None).memory_bandwidth == 1e10
    rates["copy"] = 2e10                                                # a higher rate raises the bound
    assert probe.probe_cpu(None).memory_bandwidth == 2e10
    (tmp_path / "cpu_probe.json").write_text("{not json")
    rates["copy"] = 1.5e10
    assert probe.probe_cpu(None).memory_bandwidth == 1.5e10
    monkeypatch.setattr(probe.os, "sched_getaffinity", lambda pid: {0})        # another set of cores: its own
    rates["copy"] = 3e9
    assert probe.probe_cpu(None).memory_bandwidth == 3e9
    monkeypatch.setattr(probe.platform, "node", lambda: "another-host")         # another host sharing the folder
    probe.probe_cpu(None)
    assert len(json.loads((tmp_path / "cpu_probe.json").read_text())) == 3
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("FORGE_CACHE", str(blocked / "cache"))                     # cannot be written: said
    t = probe.probe_cpu(None)
    assert "could not be written" in t.sources["memory_bandwidth"] and "kept in" not in t.sources["memory_bandwidth"]


def test_the_cache_folder_expands_home_and_takes_an_empty_value_as_unset(monkeypatch):
    from pathlib import Path

    from forge.paths import cache_dir

    monkeypatch.setenv("FORGE_CACHE", "~/fc")
    assert cache_dir() == Path.home() / "fc"
    monkeypatch.setenv("FORGE_CACHE", "")
    assert cache_dir() == Path.home() / ".cache" / "forge" / "build"


def _run_on(backend, cache_dir, tmp_path, p, cfg, x):
    """The kernel's output for input `x` (the harness reads its inputs from a file)."""
    import subprocess

    import numpy as np

    art = backend.build(Variant(p, "cpu", cfg), cache_dir)
    assert art.ok, art.error
    x.astype(np.float32).tofile(tmp_path / "in.bin")
    subprocess.run([art.path, str(tmp_path / "in.bin"), str(tmp_path / "out.bin"), "0", "0", "0"], check=True,
                   capture_output=True, timeout=60)
    return np.fromfile(tmp_path / "out.bin", np.float32).reshape(get_op(p.op).output(p).shape)


@pytest.mark.parametrize("op", ["softmax", "softmax_axis"])
def test_softmax_of_masked_scores_has_no_nan(backend, cache_dir, tmp_path, op):
    """-inf inputs (masked scores) where a vector lane, a scalar tail or a column has seen nothing
    else yet: the online kernels computed exp(-inf + inf) = NaN there, and the NaN spread over the
    whole row. The check's random inputs never hold -inf."""
    import numpy as np

    shape = dict(M=3, N=45) if op == "softmax" else dict(B=1, K=6, I=45)
    p = get_op(op).problem(shape)
    x = np.random.default_rng(0).standard_normal(tuple(shape.values())).astype(np.float32)
    axis = x.ndim - 1 if op == "softmax" else 1
    if op == "softmax":
        x[0, :17] = -np.inf              # the first vector(s) of a row, whatever the width
        x[1, 40:44] = -np.inf            # in the scalar tail
    else:
        x[0, 0, :] = -np.inf             # every column's first value
    ref = np.exp(x.astype(np.float64) - x.max(axis, keepdims=True))
    ref /= ref.sum(axis, keepdims=True)
    configs = backend.space(p).enumerate().configs()
    assert {c["algo"] for c in configs} == {"online", "twopass"}
    for cfg in configs[:: max(1, len(configs) // 12)] + [c for c in configs if c["algo"] == "online"][:4]:
        y = _run_on(backend, cache_dir, tmp_path, p, cfg, x)
        assert not np.isnan(y).any() and np.abs(y - ref).max() < 1e-5, cfg


@pytest.mark.parametrize("op,shape,kernels", [
    # N = 100: with 16 lanes, a group of 4 vectors, 2 vectors one at a time, 4 elements one by one
    ("softmax", dict(M=3, N=100), 12),
    # I = 101 in blocks of 16 or 64 columns: blocks of whole vectors, a last block of 21 or 37 that
    # ends with a vector overlapping the one before it (the 5 columns past 96 joined the last block
    # of 16), and I = 7, narrower than a vector, column by column
    ("softmax_axis", dict(B=2, K=5, I=101), 8),
    ("softmax_axis", dict(B=2, K=5, I=7), 4),
])
def test_softmax_past_the_whole_vector_groups_correct(backend, cache_dir, tmp_path, op, shape, kernels):
    """Every kernel shape (algorithm x vector width x unroll or column block) on a length that leaves
    whole vectors after the unrolled groups and elements after the whole vectors, with -inf among
    them: the vectors one at a time, the scalar elements and the overlapping last vector of a
    column block (whose lanes before the tail must be counted once) all match the float64 result."""
    import numpy as np

    p = get_op(op).problem(shape)
    x = np.random.default_rng(1).standard_normal(tuple(shape.values())).astype(np.float32) * 3
    if op == "softmax":
        x[0, -3:] = -np.inf              # among the elements one by one
        x[1, 64:96] = -np.inf            # the vectors past the unrolled groups
    else:
        x[0, 0, -21:] = -np.inf          # the first row of the overlapped and the tail columns
        x[1, 1:, -2] = -np.inf
    ref = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))   # axis 1: N of [M, N], K of [B, K, I]
    ref /= ref.sum(1, keepdims=True)
    shaping = ("algo", "vec", "unroll") if op == "softmax" else ("algo", "vec", "cw")
    distinct = {}
    for cfg in backend.space(p).enumerate().configs():
        distinct.setdefault(tuple(cfg[k] for k in shaping), cfg)
    assert len(distinct) == kernels
    for cfg in distinct.values():
        y = _run_on(backend, cache_dir, tmp_path, p, cfg, x)
        assert np.abs(y - ref).max() < 1e-5, cfg


@pytest.mark.parametrize("n", [21, 3])        # whole vectors and a tail in a row; rows shorter than a vector
def test_swiglu_of_extreme_inputs_is_the_float64_result_in_float(backend, cache_dir, tmp_path, n):
    """cann-bench's [-inf, inf] swi_glu case draws over the whole float range. silu(a) * b is then
    -0 for a very negative a and inf where the product overflows: the kernel computed a * b first
    (inf, then inf / inf = NaN in the scalar tail) and its vector exp stopped at 2.4e38 (silu(-3e38)
    read -1.25). Every value, in whole vectors and in the tail, is the float64 result cast to float."""
    import numpy as np

    from forge.ops.base import overflows_to

    p = get_op("swiglu").problem(dict(M=5, N=n))
    # no a in about [-180, -88.4]: there e^-a passes what float's exp holds (silu(a) reads -0), yet
    # a * e^a times b = 3e38 is not negligible (a = -100: 1.1e-3)
    a_vals = np.array([-3e38, -1e30, -40.0, -1.0, 0.0, 2.0, 88.8, 1e30, 3e38], np.float32)
    b_vals = np.array([3e38, -3e38, 1e-30, -2.0, 1.0], np.float32)
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.choice(a_vals, (5, n)), rng.choice(b_vals, (5, n))], axis=1).astype(np.float32)
    op = get_op("swiglu")
    ref = op.reference_rows(p, {"x": x}, np.arange(5))
    inf_ref = overflows_to(ref, "float32")
    finite = ~np.isinf(inf_ref)
    assert np.isinf(inf_ref).any() and finite.any()
    for cfg in backend.space(p).enumerate().configs()[:4]:
        y = _run_on(backend, cache_dir, tmp_path, p, cfg, x)
        assert not np.isnan(y).any(), cfg
        assert np.array_equal(y[~finite], inf_ref[~finite]), cfg
        assert np.allclose(y[finite], ref[finite], rtol=1e-5, atol=1e-30), cfg
