"""Exporters to SOL-ExecBench: the best CUDA variant as `solution.json` and trace lines.

solution.json (benchmark-formats.md §1.4): language cuda_cpp, torch binding, destination-passing
style `run(*inputs, *outputs)` in the definition's order; sources = the generated kernel files plus
`sol_entry.cu`, which launches the kernels exactly as forge's plan says (grid, block, smem, args).
Trace lines (§1.5 "Trace output"): one per case; a modeled latency is never given as measured —
such lines say so in `log` and carry `forge.time_kind`.
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from forge.bench.board import NOT_CHECKED_STATUS
from forge.errors import ForgeInputError
from forge.ops import get_op
from forge.variant import Variant

# SOL tensor names per forge op, in forge's input order then output (the FIB layouts, §1.7).
SOL_NAMES = {"rmsnorm": ["hidden_states", "weight", "output"],
             "rmsnorm+residual": ["hidden_states", "residual", "weight", "output"],
             "matmul": ["A", "B", "C"], "softmax": ["input", "output"]}


def _names(case: dict[str, Any]) -> list[str]:
    op = case["op"]
    if op == "rmsnorm" and case["attrs"].get("residual"):
        raise ForgeInputError("export", "fused_add_rmsnorm updates the residual in place; forge's kernel does "
                                        "not, so it cannot be submitted as that definition")
    if op not in SOL_NAMES:
        raise ForgeInputError("export", f"no SOL tensor layout for forge op {op!r} (attention layouts differ)")
    return SOL_NAMES[op]


def entry_source(case: dict[str, Any], plan: Any, main: str, smem_default: int) -> str:
    """A torch-extension `run` that launches forge's kernels on the caller's tensors. A kernel
    that takes more dynamic shared memory than `smem_default` (the 48 KB a launch gets without
    opting in) is given its most, once per device, as forge's harness does (cuda.md §1.1:
    "Above 48 KB you need dynamic smem plus cudaFuncAttributeMaxDynamicSharedMemorySize"):
    without it the launch is refused. Every launch is checked, so a refused one raises."""
    problem = get_op(case["op"]).problem(case["shape"], case["dtype"], case["attrs"])
    forge_names = [s.name for s in get_op(case["op"]).inputs(problem)] + [get_op(case["op"]).output(problem).name]
    sol = _names(case)
    tensor = dict(zip(forge_names, sol))
    params = ", ".join(f"torch::Tensor {n}" for n in sol)
    lines = [f"// forge export for SOL-ExecBench: {case['source_name']} case {case['case_id']}",
             f"// config: {' '.join(f'{k}={v}' for k, v in (case.get('config') or {}).items())}",
             "#include <torch/extension.h>", "#include <c10/cuda/CUDAException.h>",
             "#include <c10/cuda/CUDAStream.h>", f'#include "{main}"', "",
             f"void run({params}) {{", "  auto stream = c10::cuda::getCurrentCUDAStream();"]
    optin: dict[str, int] = {}
    for ln in plan.launches:
        if ln.smem > smem_default:
            optin[ln.kernel] = max(ln.smem, optin.get(ln.kernel, 0))
    if optin:
        lines += ["  // more than the default 48 KB of dynamic shared memory: opted into once per device (the",
                  "  // attribute is the current device's)",
                  "  static bool smem_opted_in[64] = {};",
                  "  int device = 0;",
                  "  C10_CUDA_CHECK(cudaGetDevice(&device));",
                  "  if (device >= 64 || !smem_opted_in[device]) {"]
        lines += [f"    C10_CUDA_CHECK(cudaFuncSetAttribute({k}, cudaFuncAttributeMaxDynamicSharedMemorySize, {n}));"
                  for k, n in optin.items()]
        lines += ["    if (device < 64) smem_opted_in[device] = true;", "  }"]
    for b in plan.buffers:
        if b.kind == "scratch":
            lines.append(f"  auto {b.name} = torch::zeros({{{b.nbytes}}}, torch::dtype(torch::kUInt8)"
                         f".device({sol[0]}.device()));   // scratch, zeroed")
    for ln in plan.launches:
        args = []
        for a in ln.args:
            kind, _, val = a.partition(":")
            if kind == "buf":
                name = tensor.get(val, val)
                args.append(f"reinterpret_cast<elem_t*>({name}.data_ptr())" if val in tensor
                            else f"reinterpret_cast<float*>({name}.data_ptr())")
            elif kind == "null":
                args.append("nullptr")
            elif kind == "i32":
                args.append(f"int({val})")
            elif kind == "f32":
                args.append(f"float({val})")
        lines.append(f"  {ln.kernel}<<<dim3({', '.join(map(str, ln.grid))}), dim3({', '.join(map(str, ln.block))}), "
                     f"{ln.smem}, stream>>>({', '.join(args)});")
        lines.append("  C10_CUDA_KERNEL_LAUNCH_CHECK();")
    lines += ["}", "", "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"run\", &run); }", ""]
    return "\n".join(lines)


def solution_json(case: dict[str, Any], target: str, author: str = "forge") -> dict[str, Any]:
    """SOL `solution.json` for a leaderboard case row whose best variant ran on a CUDA target."""
    from forge.backends import get_backend
    from forge.targets import get_target

    t = get_target(target)
    if t.kind != "cuda":
        raise ForgeInputError("target", f"{target} is a {t.kind} target; SOL solutions are CUDA (cuda_cpp)")
    if case.get("status") != "PASSED" or not case.get("config"):
        raise ForgeInputError("export", f"case {case['key']} has no passing variant to export")
    problem = get_op(case["op"]).problem(case["shape"], case["dtype"], case["attrs"])
    backend = get_backend(t)
    variant = Variant(problem, t.name, case["config"])
    src = backend.generate(variant)
    plan = backend.plan(variant)
    files = dict(src.files)
    files["sol_entry.cu"] = entry_source(case, plan, src.main, backend.arch.limits.smem_per_block_default)
    return {"name": re.sub(r"[^A-Za-z0-9_.-]+", "_", f"forge_{case['source_name']}_{case['case_id']}"),   # a file name
            "definition": case["source_name"], "author": author,
            "description": f"forge autotuned variant for {problem.short()} on {t.name}; "
                           f"time {case['time']:.4g} s ({case['time_kind']}); the kernel is specialised for "
                           f"this workload's shape ({case.get('axes')})",
            "spec": {"languages": ["cuda_cpp"], "target_hardware": ["LOCAL"], "entry_point": "sol_entry.cu::run",
                     "destination_passing_style": True, "binding": "torch", "dependencies": [],
                     "compile_options": {"cflags": [], "cuda_cflags": list(backend.flags()), "ld_flags": []}},
            "sources": [{"path": p, "content": c} for p, c in sorted(files.items())]}


def trace_line(case: dict[str, Any], solution: str | None, hardware: str) -> dict[str, Any]:
    """One SOL trace line for a leaderboard case row (status in SOL vocabulary)."""
    # a case forge refused to tune (no valid variant, too big for the device) failed on forge's side,
    # as a runtime error; one the suite could not map to a forge problem has no usable reference
    status = ("RUNTIME_ERROR" if case.get("refused") else "INVALID_REFERENCE" if case["status"] == "UNSUPPORTED"
              else case["status"])
    ev: dict[str, Any] = {"status": status, "log": case.get("reason") or "",
                          "environment": {"hardware": hardware, "libs": {"forge": "0.1.0"}},
                          "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S")}
    if status in ("PASSED", "INCORRECT_NUMERICAL"):
        err = case.get("errors") or {}
        ev["correctness"] = {"max_relative_error": err.get("max_rel"), "max_absolute_error": err.get("max_abs"),
                             "has_nan": bool(err.get("nan_count")), "has_inf": bool(err.get("inf_count")),
                             # what forge checked: its own bound, and this workload's tolerance spec
                             # where the case's run applied it
                             "extra": {"forge_checked": case.get("tolerance_applied"),
                                       "workload_tolerance_applied": bool(case.get("benchmark_criterion_applied")),
                                       # the share of checked values within the workload's tolerance
                                       "matched_ratio": (err.get("criterion") or {}).get("matched_ratio")}}
    if status == "PASSED":
        ev["performance"] = {"latency_ms": case["time"] * 1e3,
                             "reference_latency_ms": case["t_b"] * 1e3 if case.get("t_b") else None,
                             "speedup_factor": case.get("speedup")}
        if case.get("time_kind") == "modeled":
            ev["log"] = "forge: latency_ms is MODELED (forge's performance model), not measured"
    ev["forge"] = {"time_kind": case.get("time_kind"), "t_sol_ms": (case.get("t_sol") or 0) * 1e3,
                   "sol_score": case.get("sol_score"), "baseline": case.get("baseline_kind")}
    return {"definition": case["source_name"], "solution": solution,
            "workload": {"uuid": str(case["case_id"]), "axes": case.get("axes") or {}, "inputs": {}},
            "evaluation": ev}


def export_sol(board: dict[str, Any], out: str | Path) -> dict[str, Any]:
    """Write solutions/<name>.json for each exportable passed SOL case, and traces.jsonl for all."""
    out = Path(out)
    (out / "solutions").mkdir(parents=True, exist_ok=True)
    written, skipped, lines = [], {}, []
    for case in board["cases"]:
        if case["source"] != "sol_execbench" or case["status"] in ("NOT_RUN", NOT_CHECKED_STATUS):
            if case["source"] == "sol_execbench" and case["status"] == NOT_CHECKED_STATUS:
                skipped[case["key"]] = "no variant's output was checked: nothing to trace or submit"
            continue                                         # not run (or not checked): nothing to trace
        name = None
        if case["status"] == "PASSED" and board["target_kind"] == "cuda":
            try:
                sol = solution_json(case, board["target"])
                name = sol["name"]
                (out / "solutions" / f"{name}.json").write_text(json.dumps(sol, indent=1))
                written.append(name)
            except ForgeInputError as exc:
                skipped[case["key"]] = str(exc)
        lines.append(trace_line(case, name, board["target"]))
    (out / "traces.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return {"solutions": written, "skipped": skipped, "traces": len(lines)}
