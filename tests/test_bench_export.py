"""SOL-ExecBench exporters: solution.json from a CUDA variant, and trace lines."""
import json

import pytest

from forge.bench.exporters import export_sol, solution_json, trace_line
from forge.errors import ForgeInputError
from forge.backends import get_backend
from forge.ops import get_op


def passed_case(op="rmsnorm", shape=None, attrs=None, dtype="bfloat16", target="h100", kind="modeled"):
    shape = shape or {"M": 7, "N": 4096}
    attrs = attrs if attrs is not None else {"eps": 1e-5, "residual": False}
    p = get_op(op).problem(shape, dtype, attrs)
    enum = get_backend(target).space(p).enumerate()
    config = enum.space.config_from_indices(enum.valid[0])
    return dict(key="k", source="sol_execbench", source_name="rmsnorm_h4096", case_id="u-1", op=op, shape=p.shape,
                dtype=dtype, attrs=p.attrs, axes={"batch_size": 7}, status="PASSED", config=config, time=2e-6,
                time_kind=kind, t_b=4e-6, speedup=2.0, t_sol=1e-6, sol_score=0.75, baseline_kind="vendor",
                errors={"max_abs": 1e-3, "max_rel": 2e-3, "nan_count": 0})


def test_solution_json_follows_the_sol_schema():
    sol = solution_json(passed_case(), "h100")
    spec = sol["spec"]
    assert spec["languages"] == ["cuda_cpp"] and spec["binding"] == "torch" and spec["destination_passing_style"]
    file, _, func = spec["entry_point"].partition("::")
    paths = [s["path"] for s in sol["sources"]]
    assert file in paths and func == "run" and len(set(paths)) == len(paths)
    assert all(not p.startswith("/") and ".." not in p for p in paths)
    entry = next(s["content"] for s in sol["sources"] if s["path"] == file)
    # DPS: inputs then outputs, in the definition's order, and the kernel launched as forge planned it.
    assert "void run(torch::Tensor hidden_states, torch::Tensor weight, torch::Tensor output)" in entry
    assert "forge_rmsnorm<<<" in entry and '#include "kernel.cu"' in entry
    assert sol["definition"] == "rmsnorm_h4096"


def test_exports_refuse_what_sol_cannot_take():
    with pytest.raises(ForgeInputError, match="cuda"):
        solution_json(passed_case(), "cpu")
    with pytest.raises(ForgeInputError, match="residual in place"):
        solution_json(passed_case(attrs={"eps": 1e-5, "residual": True}), "h100")


def test_trace_lines_never_present_modeled_as_measured(tmp_path):
    line = trace_line(passed_case(), "sol1", "h100")
    ev = line["evaluation"]
    assert ev["status"] == "PASSED" and ev["performance"]["latency_ms"] == pytest.approx(2e-3)
    assert ev["performance"]["speedup_factor"] == 2.0 and "MODELED" in ev["log"]
    assert ev["forge"]["time_kind"] == "modeled" and ev["correctness"]["max_absolute_error"] == 1e-3
    failed = trace_line({**passed_case(), "status": "COMPILE_ERROR", "reason": "nvcc failed"}, None, "h100")
    assert "performance" not in failed["evaluation"] and "correctness" not in failed["evaluation"]
    board = {"target": "h100", "target_kind": "cuda", "cases": [passed_case(), {**passed_case(), "source": "cannbench"}]}
    res = export_sol(board, tmp_path)
    assert res["traces"] == 1 and len(res["solutions"]) == 1
    assert json.loads((tmp_path / "traces.jsonl").read_text().splitlines()[0])["solution"] == res["solutions"][0]
