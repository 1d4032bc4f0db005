"""SOL-ExecBench exporters: solution.json from a CUDA variant, and trace lines."""
import json
from pathlib import Path

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


BIG_SMEM = {"block_m": 128, "block_n": 128, "block_k": 32, "warp_m": 64, "warp_n": 64, "stages": 3, "split_k": 1,
            "group_m": 1, "min_blocks": 1}      # 56,832 B of dynamic shared memory


def big_smem_case() -> dict:
    case = passed_case(op="matmul", shape={"M": 4096, "N": 4096, "K": 4096}, attrs={}, dtype="float16")
    case.update(source_name="gemm_n128_k256", config=dict(BIG_SMEM))
    return case


def test_a_kernel_over_48_kb_of_shared_memory_is_opted_in_before_its_launch():
    """Without the opt-in a launch asking more than 48 KB of dynamic shared memory is refused, and
    unchecked the refusal is silent: SOL would time a kernel that never ran."""
    sol = solution_json(big_smem_case(), "h100")
    entry = next(s["content"] for s in sol["sources"] if s["path"] == "sol_entry.cu")
    optin = "C10_CUDA_CHECK(cudaFuncSetAttribute(forge_gemm, cudaFuncAttributeMaxDynamicSharedMemorySize, 56832));"
    assert optin in entry and entry.index(optin) < entry.index("forge_gemm<<<") and entry.count(optin) == 1
    assert entry.count("C10_CUDA_KERNEL_LAUNCH_CHECK();") == entry.count("<<<")
    small = next(s["content"] for s in solution_json(passed_case(), "h100")["sources"] if s["path"] == "sol_entry.cu")
    assert "cudaFuncSetAttribute" not in small and "C10_CUDA_KERNEL_LAUNCH_CHECK();" in small


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
    assert ev["correctness"]["extra"]["matched_ratio"] is None         # a run without the workload's criterion
    measured = {**passed_case(), "errors": {"max_abs": 1e-3, "criterion": {"matched_ratio": 0.995, "max_error": 1e-3}}}
    assert trace_line(measured, "sol1", "h100")["evaluation"]["correctness"]["extra"]["matched_ratio"] == 0.995
    failed = trace_line({**passed_case(), "status": "COMPILE_ERROR", "reason": "nvcc failed"}, None, "h100")
    assert "performance" not in failed["evaluation"] and "correctness" not in failed["evaluation"]
    board = {"target": "h100", "target_kind": "cuda", "cases": [passed_case(), {**passed_case(), "source": "cannbench"}]}
    res = export_sol(board, tmp_path)
    assert res["traces"] == 1 and len(res["solutions"]) == 1
    assert json.loads((tmp_path / "traces.jsonl").read_text().splitlines()[0])["solution"] == res["solutions"][0]


@pytest.mark.slow   # torch's extension headers: about a minute of one core
def test_sol_entry_compiles_against_torch_headers(tmp_path):
    """The exported solution builds as SOL-ExecBench's torch binding would build it (nvcc -c of
    sol_entry.cu with torch's extension headers). A CPU-only torch wheel lacks one generated CUDA
    build header, c10/cuda/impl/cuda_cmake_macros.h (it only says the library is shared); the
    test supplies that line, nothing else. One case runs here, a GEMM whose kernel is opted into
    more than 48 KB of shared memory (the entry is the same code for every op, and the compile
    costs a minute)."""
    import shutil
    import subprocess
    import sysconfig

    torch = pytest.importorskip("torch")
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed")
    inc = Path(torch.__file__).parent / "include"
    sol = solution_json(big_smem_case(), "h100")
    for s in sol["sources"]:
        (tmp_path / s["path"]).write_text(s["content"])
    stub = tmp_path / "stub" / "c10" / "cuda" / "impl"
    if not (inc / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h").exists():
        stub.mkdir(parents=True)
        (stub / "cuda_cmake_macros.h").write_text("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
    flags = [f for f in sol["spec"]["compile_options"]["cuda_cflags"] if f not in ("-Xptxas", "-v")]
    cmd = ["nvcc", *flags, "-c", "sol_entry.cu", "-o", "sol_entry.o", "-Istub", f"-I{inc}",
           f"-I{inc / 'torch' / 'csrc' / 'api' / 'include'}", f"-I{sysconfig.get_paths()['include']}",
           "-DTORCH_EXTENSION_NAME=forge_sol", "-diag-suppress", "3306"]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900)   # 2.5 min alone, 5+ on a loaded machine
    assert res.returncode == 0, res.stderr[-3000:]


def test_solution_names_are_file_names(tmp_path):
    """SOL case ids can hold '/' (examples/cuda_cpp/rmsnorm_0); the solution's name is its file name."""
    case = passed_case()
    case["case_id"] = "examples/cuda_cpp/rmsnorm_0"
    name = solution_json(case, "h100")["name"]
    assert "/" not in name and name == "forge_rmsnorm_h4096_examples_cuda_cpp_rmsnorm_0"
    board = {"cases": [case], "target": "h100", "target_kind": "cuda"}
    export_sol(board, tmp_path)
    assert (tmp_path / "solutions" / f"{name}.json").is_file()


def test_cases_whose_variants_never_ran_are_not_passed_and_not_traced(tmp_path):
    """A CUDA variant ranked by the model without a GPU compiled and met every limit but never ran:
    its case is NOT_CHECKED, not PASSED (no pass rate, score or trace claims it correct), the suite
    line counts it apart, and the SOL export leaves it out, saying why."""
    from forge.bench.board import summarize
    from forge.bench.render import total_line

    ran, unrun = passed_case(), {**passed_case(), "status": "NOT_CHECKED", "key": "unrun"}
    total = summarize([ran, unrun])
    assert total["passed"] == 1 and total["unchecked"] == 1
    line = total_line({"total": {**total, "cann_total_score": None}})
    assert "1 case not passed: no variant ran where its output could be checked" in line
    assert "not passed" not in total_line({"total": {**summarize([ran]), "cann_total_score": None}})
    out = export_sol({"target": "h100", "target_kind": "cuda", "cases": [unrun]}, tmp_path)
    assert out["traces"] == 0 and "no variant's output was checked" in out["skipped"]["unrun"]


def test_trace_lines_speak_sol_statuses_only(tmp_path):
    """A case forge refused is a RUNTIME_ERROR on forge's side (its reference is fine); a case the
    suite could not map has no usable reference; a case never run has no trace line."""
    refused = {**passed_case(), "status": "UNSUPPORTED", "refused": True, "reason": "no valid variant"}
    assert trace_line(refused, None, "h100")["evaluation"]["status"] == "RUNTIME_ERROR"
    unmapped = {**passed_case(), "status": "UNSUPPORTED", "reason": "axis 0"}
    assert trace_line(unmapped, None, "h100")["evaluation"]["status"] == "INVALID_REFERENCE"
    board = {"target": "h100", "target_kind": "cuda", "cases": [{**passed_case(), "status": "NOT_RUN"}, refused]}
    assert export_sol(board, tmp_path)["traces"] == 1
