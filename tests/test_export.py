"""`forge show --export` for the device: beside the source, what builds, runs and checks the variant on the
inputs forge checks it on. CUDA: the harness, its spec with every launch (grid, block, dynamic
shared memory) in order, and the inputs at the sizes the plan's buffers say; Ascend: the in_<name>.bin
files its launcher reads. (The CPU export is built and run in tests/test_tuner.py.)"""
from __future__ import annotations

import numpy as np
import pytest

from forge.backends import get_backend
from forge.ops import get_op
from forge.ops.base import DTYPE_BYTES
from forge.variant import Variant


def first_valid(backend, problem):
    enum = backend.space(problem).enumerate()
    return Variant(problem, backend.target.name, enum.config(0))


def test_a_cuda_export_holds_the_harness_its_launches_and_inputs_of_the_plans_sizes():
    backend = get_backend("h100")
    p = get_op("matmul").problem({"M": 128, "N": 128, "K": 512}, "float16")
    v = first_valid(backend, p)
    files = backend.export_files(v, seed=0)
    plan = backend.plan(v)
    spec = files["spec.txt"].splitlines()
    launches = [line.split() for line in spec if line.startswith("launch ")]
    assert [(l[1], tuple(map(int, l[2:5])), tuple(map(int, l[5:8])), int(l[8])) for l in launches] == [
        (l.kernel, tuple(l.grid), tuple(l.block), l.smem) for l in plan.launches]
    for b in plan.buffers:
        if b.kind == "in":
            assert len(files[f"{b.name}.bin"]) == b.nbytes and f"buffer {b.name} in {b.nbytes} {b.name}.bin" in spec
    assert "harness.cu" in files and "./forge_harness spec.txt" in files["run.sh"]
    assert " ".join(backend.flags()) in files["run.sh"]


@pytest.mark.parametrize("target", ["cpu", "h100", "ascend910b2"])
def test_every_exported_run_sh_runs_from_its_own_folder(target):
    """forge show says "on the device: <folder>/run.sh": run from anywhere, it finds its files."""
    backend = get_backend(target)
    p = get_op("rmsnorm").problem({"M": 64, "N": 1024}, "float16" if target != "cpu" else "float32")
    v = first_valid(backend, p)
    run = {**backend.generate(v).files, **backend.export_files(v, seed=0)}["run.sh"]
    assert run.splitlines()[1:].index('cd "$(dirname "$0")"') < 5, run


def test_an_ascend_run_sh_without_the_cann_environment_says_what_to_source(tmp_path):
    """Without ASCEND_HOME_PATH the build cannot find CANN: run.sh stops at once and says why,
    rather than going on to a CMake error."""
    import os
    import subprocess

    backend = get_backend("ascend910b2")
    v = first_valid(backend, get_op("rmsnorm").problem({"M": 64, "N": 1024}, "float16"))
    (tmp_path / "run.sh").write_text({**backend.generate(v).files, **backend.export_files(v, seed=0)}["run.sh"])
    env = {k: val for k, val in os.environ.items() if k != "ASCEND_HOME_PATH"}
    res = subprocess.run(["bash", str(tmp_path / "run.sh")], capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 2 and "ASCEND_HOME_PATH is not set; source <CANN install>/set_env.sh" in res.stderr


def test_an_ascend_export_holds_the_inputs_its_launcher_reads():
    backend = get_backend("ascend910b2")
    p = get_op("rmsnorm").problem({"M": 64, "N": 1024}, "float16")
    files = backend.export_files(first_valid(backend, p), seed=3)
    op = get_op("rmsnorm")
    for spec in op.inputs(p):
        data = files[f"in_{spec.name}.bin"]
        assert len(data) == int(np.prod(spec.shape)) * DTYPE_BYTES["float16"]
        want = op.make_inputs(p, 3)[spec.name].ravel()
        assert np.array_equal(np.frombuffer(data, "<f2").astype(np.float32), want)   # the values forge checks on


def test_check_py_reads_the_device_output_in_the_problem_dtype(tmp_path):
    """check.py decodes float16 and bfloat16 outputs as the launchers write them: the reference
    itself, rounded to the dtype, passes; shifted by far more than the tolerance, it fails."""
    import subprocess
    import sys

    from forge.commands.show import _check_files
    from forge.ops.base import TOLERANCES

    backend = get_backend("ascend910b2")
    for dtype in ("float16", "bfloat16"):
        p = get_op("rmsnorm").problem({"M": 8, "N": 256}, dtype)
        v = first_valid(backend, p)
        want = (np.arange(8 * 256, dtype=np.float32) / 512 - 1).astype(np.float32)
        files = _check_files(v, backend, {"expected_y.f32": want.tobytes()}, "#!/bin/bash\n./run\n")
        assert files["run.sh"].endswith("./run\npython3 check.py\n")
        (tmp_path / "check.py").write_text(files["check.py"])
        want.tofile(tmp_path / "expected_y.f32")
        out, enc = backend.export_output(v)
        (tmp_path / out).unlink(missing_ok=True)          # the kernel never wrote its output: FAIL, said
        res = subprocess.run([sys.executable, str(tmp_path / "check.py")], capture_output=True, text=True)
        assert res.returncode == 1 and f"FAIL: no {out} here" in res.stderr and "Traceback" not in res.stderr
        for shift, ok in ((0.0, True), (10 * sum(TOLERANCES[dtype]), False)):
            got = want + shift
            raw = (got.astype("<f2").tobytes() if enc == "float16"
                   else (got.view(np.uint32) >> 16).astype("<u2").tobytes())
            (tmp_path / out).write_bytes(raw)
            res = subprocess.run([sys.executable, "check.py"], cwd=tmp_path, capture_output=True, text=True)
            assert (res.returncode == 0) == ok, (dtype, shift, res.stdout, res.stderr)


def test_check_py_allows_a_long_float32_sum_its_rounding_as_forge_does(tmp_path):
    """A float32 matmul at K=4096 exported to a GPU: check.py accepts the rounding of a correct
    kernel's sums (forge's accumulation allowance) and still fails a value a product off."""
    import subprocess
    import sys

    from forge.commands.show import _check_files

    backend = get_backend("h200", measure="model")
    op = get_op("matmul")
    p = op.problem({"M": 4, "N": 512, "K": 4096}, "float32")
    v = first_valid(backend, p)
    x = op.make_inputs(p, 0)
    want = op.reference(p, x).astype(np.float32)
    files = _check_files(v, backend, {"expected_c.f32": want.tobytes()}, "#!/bin/bash\n./run\n")
    (tmp_path / "check.py").write_text(files["check.py"])
    want.tofile(tmp_path / "expected_c.f32")
    out, _ = backend.export_output(v)
    rms = float(np.sqrt(np.mean(want[2].astype(np.float64) ** 2)))
    j = int(np.argmin(np.abs(want[2])))
    for shift, ok in ((4 * 2.0 ** -24 * 64 * rms, True), (0.05, False)):
        got = want.copy()
        got[2, j] += shift
        got.tofile(tmp_path / out)
        res = subprocess.run([sys.executable, "check.py"], cwd=tmp_path, capture_output=True, text=True)
        assert (res.returncode == 0) == ok, (shift, res.stdout, res.stderr)
        assert "rms(expected)" in res.stdout + res.stderr


def test_check_py_holds_a_softmax_to_sums_of_one_as_forge_does(tmp_path):
    """Every value 0.04 % too large is within the value-by-value float32 bound; the exported check,
    like forge's, fails it on the sums to 1 and passes the reference."""
    import subprocess
    import sys

    from forge.commands.show import _check_files

    backend = get_backend("h200", measure="model")
    op = get_op("softmax")
    p = op.problem({"M": 8, "N": 4097}, "float32")
    v = first_valid(backend, p)
    want = op.reference(p, op.make_inputs(p, 0)).astype(np.float32)
    files = _check_files(v, backend, {"expected_y.f32": want.tobytes()}, "#!/bin/bash\n./run\n")
    (tmp_path / "check.py").write_text(files["check.py"])
    want.tofile(tmp_path / "expected_y.f32")
    out, _ = backend.export_output(v)
    for scale, ok in ((1.0, True), (1.0004, False)):
        (want * np.float32(scale)).astype(np.float32).tofile(tmp_path / out)
        res = subprocess.run([sys.executable, "check.py"], cwd=tmp_path, capture_output=True, text=True)
        assert (res.returncode == 0) == ok, (scale, res.stdout, res.stderr)
    assert "sums along axis 1 are not 1 within 0.0002" in res.stderr


def test_an_export_says_where_forge_checked_the_variant():
    """An emulated check at the problem's own shape is not called "the smaller shape"."""
    from types import SimpleNamespace

    from forge.commands.show import _how_forge_checked

    row = lambda shape: SimpleNamespace(extra={"emulated_shape": shape}, time_kind="modeled")  # noqa: E731
    assert _how_forge_checked(row({"M": 4, "N": 8}), {"M": 4, "N": 8}) == "on the CPU emulator at this shape (M=4,N=8)"
    assert _how_forge_checked(row({"M": 4, "N": 8}), {"M": 4096, "N": 8}) == \
        "on the CPU emulator at the smaller shape M=4,N=8, same config"
