"""The timing harness builds here (static cudart) and, with no GPU, reports a clean JSON error."""
import shutil
from pathlib import Path

import numpy as np
import pytest

from forge.backends.cuda import harness as hx
from forge.generators.cuda.plan import Buffer, Launch, Plan

nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    path, err = hx.build_harness(tmp_path_factory.mktemp("h"))
    assert path is not None, err
    return path


@nvcc
def test_harness_reports_no_gpu_cleanly(exe, tmp_path):
    out = hx.run_harness(exe, ["--probe"], timeout=60)
    if out.get("ok"):
        pytest.skip(f"a GPU is visible here: {out.get('device')}")
    assert out["stage"] == "set_device" and out["error"] and out["returncode"] != 0
    spec = tmp_path / "spec.txt"
    spec.write_text("cubin /nonexistent.cubin\n")
    out = hx.run_harness(exe, [str(spec)], timeout=60)
    assert out["ok"] is False and out["stage"] == "set_device"


@nvcc
def test_backend_measure_device_without_gpu_is_runtime_error(tmp_path):
    from forge.backends import get_backend
    from forge.ops import get_op
    from forge.variant import Variant
    be = get_backend("h100", measure="device")
    ok, why = be.measure_available()
    if ok:
        pytest.skip("GPU visible")
    p = get_op("softmax").problem(dict(M=4, N=256), "float32")
    v = Variant(p, "h100", be.space(p).enumerate().config(0))
    a = be.build(v, tmp_path)
    m = be.run(a, v, seed=0, warmup=1, reps=1, timeout=30)
    assert m.status == "runtime_error" and "measure=device" in m.reason


def test_dtype_round_trip():
    x = np.array([1.0, -2.5, 0.333251953125, 65504.0], dtype=np.float32)
    for dt in ("float32", "float16", "bfloat16"):
        from forge.ops.base import round_to_dtype
        xr = round_to_dtype(x, dt)
        raw = hx.to_bytes(xr, dt)
        assert len(raw) == x.size * (4 if dt == "float32" else 2)
        assert np.array_equal(hx.from_bytes(raw, dt, (4,)), xr)


def test_spec_lists_buffers_and_launches_in_order(tmp_path):
    plan = Plan({}, "kernel.cu",
                [Buffer("x", "in", 16), Buffer("y", "out", 16), Buffer("ws", "scratch", 64)],
                [Launch("k1", (2, 1, 1), (128, 1, 1), 1024, ["buf:x", "buf:ws"]),
                 Launch("k2", (1, 1, 1), (32, 1, 1), 0, ["buf:ws", "buf:y", "null"])])
    spec = hx.write_spec(plan, Path("/c.cubin"), tmp_path, {"x": np.ones(4, np.float32)}, "float32",
                         warmup=3, iters=7, trials=2)
    lines = spec.read_text().splitlines()
    assert lines[:6] == ["cubin /c.cubin", "warmup 3", "iters 7", "trials 2", "flush 0", f"flush_min {256 << 20}"]
    assert lines[6] == f"buffer x in 16 {tmp_path / 'x.bin'}" and lines[8] == "buffer ws scratch 64"
    assert lines[9] == "launch k1 2 1 1 128 1 1 1024 buf:x buf:ws"
    assert (tmp_path / "x.bin").read_bytes() == np.ones(4, np.float32).tobytes()
    with pytest.raises(ValueError):
        hx.write_spec(plan, Path("/c.cubin"), tmp_path, {"x": np.ones(3, np.float32)}, "float32",
                      warmup=1, iters=1, trials=1)
