"""Importers: every shipped benchmark sample, and SOL/cann-bench schema edge cases in tmp dirs."""
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from forge.bench.axes import evaluate, resolve_axes
from forge.bench.importers import import_cann_folder, import_folder, import_sol_folder, synthesize_input
from forge.bench.suites import load_suite
from forge.errors import ForgeInputError

BENCHDATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "benchdata"
if not BENCHDATA.is_dir():
    BENCHDATA = Path("/work/shared/data/benchdata")
needs_data = pytest.mark.skipif(not BENCHDATA.is_dir(), reason="shared/data/benchdata not present")


@needs_data
@pytest.mark.parametrize("folder", sorted(p.parent.name for p in (BENCHDATA / "sol-execbench").glob("*/definition.json")))
def test_every_sol_sample_imports_or_says_why(folder):
    d = BENCHDATA / "sol-execbench" / folder
    suite = import_sol_folder(d)
    n_workloads = sum(1 for line in (d / "workload.jsonl").read_text().splitlines() if line.strip())
    assert len(suite.cases) + len(suite.unsupported) == n_workloads      # nothing dropped
    assert all(u.reason for u in suite.unsupported)
    for c in suite.cases:
        p = c.problem()
        assert p.op == c.op and c.case_id and c.tolerance["required_matched_ratio"] == 0.99


@needs_data
def test_sol_samples_map_exactly():
    rms = import_sol_folder(BENCHDATA / "sol-execbench" / "rmsnorm")
    assert [c.shape for c in rms.cases][:2] == [{"M": 7, "N": 4096}, {"M": 1, "N": 4096}]
    assert rms.cases[0].attrs == {"eps": 1e-5, "residual": False}          # EPS from the reference
    gemm = import_sol_folder(BENCHDATA / "sol-execbench" / "gemm")
    assert gemm.cases[2].shape == {"M": 2048, "N": 4096, "K": 4096} and gemm.cases[2].attrs["transpose_b"] is False
    sm = import_sol_folder(BENCHDATA / "sol-execbench" / "softmax")
    assert [c.shape["M"] for c in sm.cases] == [1, 32, 1024] and sm.cases[0].dtype == "float32"
    gqa = import_sol_folder(BENCHDATA / "sol-execbench" / "gqa_paged_decode")
    c = gqa.cases[0]
    assert c.shape == {"B": 1, "Hq": 32, "Hkv": 8, "Sq": 1, "Skv": 73, "D": 128}
    assert c.attrs["scale"] == pytest.approx(0.08838834764831843)          # scalar input -> attr
    assert set(c.synthesized) == {"kv_indptr", "kv_indices"}               # safetensors synthesized
    assert c.tolerance["allow_negative_inf"] is True
    assert any("lse" in n for n in c.notes)


@needs_data
@pytest.mark.parametrize("task", ["gqa", "rms_norm"])
def test_every_cann_sample_imports(task):
    suite = import_cann_folder(BENCHDATA / "cann-bench" / task)
    assert len(suite.cases) + len(suite.unsupported) == 20
    assert not suite.unsupported
    by_id = {c.case_id: c for c in suite.cases}
    if task == "gqa":
        assert by_id["11"].shape == {"B": 16, "Hq": 32, "Hkv": 8, "Sq": 1, "Skv": 2048, "D": 128}
        assert by_id["1"].attrs == {"causal": True, "scale": None}          # scaleValue <= 0 -> 1/sqrt(D)
        assert by_id["20"].attrs["scale"] == pytest.approx(0.08838)
    else:
        assert by_id["1"].shape == {"M": 32 * 128, "N": 768} and by_id["6"].attrs["eps"] == pytest.approx(1e-5)


@needs_data
def test_import_folder_of_folders():
    suite = import_folder(BENCHDATA)
    assert {c.source for c in suite.cases} == {"sol_execbench", "cannbench"}


# ---- SOL schema edge cases ------------------------------------------------------------------
def write_sol(tmp: Path, defn: dict, workloads: list[dict]) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "definition.json").write_text(json.dumps(defn))
    (tmp / "workload.jsonl").write_text("\n".join(json.dumps(w) for w in workloads) + "\n")
    return tmp


def rms_def(**over):
    d = {"name": "rmsnorm_h64", "op_type": "rmsnorm",
         "axes": {"b": {"type": "var"}, "s": {"type": "var"}, "tokens": {"type": "expr", "expression": "b * s"},
                  "hidden_size": {"type": "const", "value": 64}},
         "inputs": {"hidden_states": {"shape": ["tokens", "hidden_size"], "dtype": "float16"},
                    "weight": {"shape": ["hidden_size"], "dtype": "float16"}},
         "outputs": {"output": {"shape": ["tokens", "hidden_size"], "dtype": "float16"}},
         "reference": "def run(hidden_states, weight):\n    eps = 1e-6\n"}
    d.update(over)
    return d


RANDOM2 = {"hidden_states": {"type": "random"}, "weight": {"type": "random"}}


def test_expr_axes_and_tolerance(tmp_path):
    d = write_sol(tmp_path / "p", rms_def(), [
        {"uuid": "u1", "axes": {"b": 3, "s": 5}, "inputs": RANDOM2, "tolerance": {"max_atol": 1e-3}},
        {"uuid": "u2", "axes": {"b": 2, "s": 2}, "inputs": RANDOM2, "tolerance": {"required_match_ratio": 0.98}}])
    s = import_sol_folder(d)
    assert [c.shape for c in s.cases] == [{"M": 15, "N": 64}, {"M": 4, "N": 64}]
    assert s.cases[0].tolerance["max_atol"] == 1e-3 and s.cases[0].tolerance["max_rtol"] == 1e-2
    # L2's misspelt key is ignored by SOL (benchmark-formats §1.3): the 0.99 default applies and we say so.
    assert s.cases[1].tolerance["required_matched_ratio"] == 0.99
    assert any("required_match_ratio" in n for n in s.cases[1].notes)
    assert s.cases[0].dtype == "float16" and s.cases[0].attrs["eps"] == 1e-6


def test_sol_softmax_along_another_axis_maps_to_softmax_axis(tmp_path):
    defn = {"name": "softmax_cols", "op_type": "softmax",
            "axes": {"b": {"type": "var"}, "k": {"type": "const", "value": 6}, "i": {"type": "const", "value": 5}},
            "inputs": {"x": {"shape": ["b", "k", "i"], "dtype": "float32"}},
            "outputs": {"y": {"shape": ["b", "k", "i"], "dtype": "float32"}}}
    work = [{"uuid": "w", "axes": {"b": 3}, "inputs": {"x": {"type": "random"}}}]
    cases = {}
    for dim in (1, -1, 0, 3):
        s = import_sol_folder(write_sol(tmp_path / str(dim), dict(defn, reference=f"def run(x):\n    return torch.softmax(x, dim={dim})\n"), work))
        cases[dim] = (s.cases[0].op, s.cases[0].shape) if s.cases else s.unsupported[0].reason
    assert cases[1] == ("softmax_axis", {"B": 3, "K": 6, "I": 5})
    assert cases[-1] == ("softmax", {"M": 18, "N": 5}) and cases[0] == ("softmax_axis", {"B": 1, "K": 3, "I": 30})
    assert "no such axis" in cases[3]


def test_expr_evaluator():
    assert evaluate("(a + 1) * b // 2 - -c ** 2", {"a": 3, "b": 5, "c": 2}) == 14
    assert resolve_axes({"x": {"type": "const", "value": 4}, "y": {"type": "expr", "expression": "z % 3"},
                         "z": {"type": "expr", "expression": "x * 2"}}, {}, "d") == {"x": 4, "z": 8, "y": 2}
    with pytest.raises(ForgeInputError, match="unsupported syntax"):
        evaluate("__import__('os')", {})
    with pytest.raises(ForgeInputError, match="unknown axis"):
        resolve_axes({"y": {"type": "expr", "expression": "q + 1"}}, {}, "d")
    with pytest.raises(ForgeInputError, match="allowed: const, var, expr"):
        resolve_axes({"y": {"type": "weird"}}, {}, "d")
    with pytest.raises(ForgeInputError, match="no value in the workload"):
        resolve_axes({"y": {"type": "var"}}, {}, "d")


def test_custom_inputs_and_unknown_kind_are_listed(tmp_path):
    d = write_sol(tmp_path / "c", rms_def(), [{"uuid": "c1", "axes": {"b": 1, "s": 1},
                                               "inputs": {"hidden_states": {"type": "custom"}, "weight": {"type": "custom"}}}])
    s = import_sol_folder(d)
    assert not s.cases and "custom_inputs_entrypoint" in s.unsupported[0].reason
    d2 = write_sol(tmp_path / "k", rms_def(name="rope_x", op_type="rope"), [{"uuid": "r", "axes": {"b": 1, "s": 1}, "inputs": RANDOM2}])
    s2 = import_sol_folder(d2)
    assert "no forge operator" in s2.unsupported[0].reason
    d3 = write_sol(tmp_path / "f8", rms_def(inputs={"hidden_states": {"shape": ["tokens", "hidden_size"], "dtype": "float8_e4m3fn"},
                                                  "weight": {"shape": ["hidden_size"], "dtype": "float8_e4m3fn"}}),
                   [{"uuid": "f", "axes": {"b": 1, "s": 1}, "inputs": RANDOM2}])
    assert "float8_e4m3fn is not supported" in import_sol_folder(d3).unsupported[0].reason


def test_bad_schema_names_the_field(tmp_path):
    with pytest.raises(ForgeInputError, match="inputs.weight.dtype"):
        import_sol_folder(write_sol(tmp_path / "a", rms_def(inputs={"hidden_states": {"shape": ["tokens", "hidden_size"], "dtype": "float16"},
                                                                    "weight": {"shape": ["hidden_size"], "dtype": "half"}}), []))
    with pytest.raises(ForgeInputError, match="inputs.weight.type"):
        import_sol_folder(write_sol(tmp_path / "b", rms_def(), [{"uuid": "x", "axes": {"b": 1, "s": 1},
                                                                 "inputs": {"hidden_states": {"type": "random"}, "weight": {"type": "zeros"}}}]))
    with pytest.raises(ForgeInputError, match="custom input must make all"):
        import_sol_folder(write_sol(tmp_path / "c", rms_def(), [{"uuid": "x", "axes": {"b": 1, "s": 1},
                                                                 "inputs": {"hidden_states": {"type": "custom"}, "weight": {"type": "random"}}}]))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "definition.json").write_text("{nope")
    (tmp_path / "d" / "workload.jsonl").write_text("")
    with pytest.raises(ForgeInputError, match="not valid JSON"):
        import_sol_folder(tmp_path / "d")


def gqa_def(name="gqa_paged_decode_h4_kv2_d16_ps1"):
    return {"name": name,
            "axes": {"batch_size": {"type": "var"}, "num_qo_heads": {"type": "const", "value": 4},
                     "num_kv_heads": {"type": "const", "value": 2}, "head_dim": {"type": "const", "value": 16},
                     "num_pages": {"type": "var"}, "page_size": {"type": "const", "value": 1},
                     "len_indptr": {"type": "var"}, "num_kv_indices": {"type": "var"}},
            "constraints": ["len_indptr == batch_size + 1", "num_kv_indices == kv_indptr[-1].item()"],
            "inputs": {"q": {"shape": ["batch_size", "num_qo_heads", "head_dim"], "dtype": "bfloat16"},
                       "k_cache": {"shape": ["num_pages", "page_size", "num_kv_heads", "head_dim"], "dtype": "bfloat16"},
                       "v_cache": {"shape": ["num_pages", "page_size", "num_kv_heads", "head_dim"], "dtype": "bfloat16"},
                       "kv_indptr": {"shape": ["len_indptr"], "dtype": "int32"},
                       "kv_indices": {"shape": ["num_kv_indices"], "dtype": "int32"},
                       "sm_scale": {"shape": None, "dtype": "float32"}},
            "outputs": {"output": {"shape": ["batch_size", "num_qo_heads", "head_dim"], "dtype": "bfloat16"},
                        "lse": {"shape": ["batch_size", "num_qo_heads"], "dtype": "float32"}}}


def gqa_wl(uuid, **axes):
    blob = {"type": "safetensors", "path": "blob.safetensors"}
    return {"uuid": uuid, "axes": axes, "inputs": {"q": {"type": "random"}, "k_cache": {"type": "random"},
            "v_cache": {"type": "random"}, "kv_indptr": {**blob, "tensor_key": "kv_indptr"},
            "kv_indices": {**blob, "tensor_key": "kv_indices"}, "sm_scale": {"type": "scalar", "value": 0.25}}}


def test_safetensors_synthesis_and_ragged_reasons(tmp_path):
    d = write_sol(tmp_path / "g", gqa_def(), [
        gqa_wl("even", batch_size=4, num_pages=100, len_indptr=5, num_kv_indices=40),
        gqa_wl("ragged", batch_size=3, num_pages=100, len_indptr=4, num_kv_indices=40),
        gqa_wl("bad", batch_size=3, num_pages=100, len_indptr=7, num_kv_indices=40),
        gqa_wl("toolong", batch_size=1, num_pages=10, len_indptr=2, num_kv_indices=40)])
    s = import_sol_folder(d)
    assert [c.case_id for c in s.cases] == ["even"]
    assert s.cases[0].shape == {"B": 4, "Hq": 4, "Hkv": 2, "Sq": 1, "Skv": 10, "D": 16}
    assert s.cases[0].attrs == {"causal": False, "scale": 0.25}
    reasons = {u.case_id: u.reason for u in s.unsupported}
    assert "unequal lengths" in reasons["ragged"]
    assert "len_indptr == batch_size + 1" in reasons["bad"]
    assert "exceeds" in reasons["toolong"]
    axes = {"len_indptr": 4, "num_kv_indices": 10, "num_pages": 50, "page_size": 1}
    indptr = synthesize_input("kv_indptr", axes)
    assert indptr.tolist() == [0, 4, 7, 10] and indptr.dtype == np.int32        # valid: monotone, ends at total
    idx = synthesize_input("kv_indices", axes)
    assert len(idx) == 10 and idx.max() < 50


# ---- cann-bench edge cases ------------------------------------------------------------------
def test_cann_task_edge_cases(tmp_path):
    t = tmp_path / "softmax"
    t.mkdir()
    (t / "proto.yaml").write_text(yaml.safe_dump({"operator": {"name": "Softmax", "attrs": [{"name": "dim", "default": -1}]}}))
    (t / "cases.yaml").write_text(yaml.safe_dump({"cases": [
        {"case_id": 1, "input_shape": [[4, 8, 16]], "dtype": ["float16"]},
        {"case_id": 2, "input_shape": [[4, 8]], "dtype": ["float16"], "attrs": {"dim": 0}},
        {"case_id": 3, "input_shape": [[4, 8]], "dtype": ["int8"]},
        {"case_id": 4, "input_shape": [[4, 8], None], "dtype": ["float32", None]}]}))
    s = import_cann_folder(t)
    assert {c.case_id: (c.op, c.shape) for c in s.cases} == {
        "1": ("softmax", {"M": 32, "N": 16}), "2": ("softmax_axis", {"B": 1, "K": 4, "I": 8}),
        "4": ("softmax", {"M": 4, "N": 8})}
    reasons = {u.case_id: u.reason for u in s.unsupported}
    assert set(reasons) == {"3"} and "int8" in reasons["3"]
    (t / "cases.yaml").write_text(yaml.safe_dump({"cases": [{"case_id": 1, "dtype": ["float16"]}]}))
    with pytest.raises(ForgeInputError, match="input_shape"):
        import_cann_folder(t)


def test_cann_attention_scale_written_as_an_exponent_is_a_number(tmp_path):
    """`scaleValue: 1e-1` is a number (YAML 1.2, as forge reads its YAML); a scale that is no number
    makes the case unsupported with the reason, not a traceback."""
    t = tmp_path / "mha"
    t.mkdir()
    (t / "proto.yaml").write_text("operator:\n  name: MHA\n  attrs:\n    - {name: scaleValue, default: 1e-1}\n")
    (t / "cases.yaml").write_text("cases:\n"
                                  "  - {case_id: 1, input_shape: [[1, 64, 4, 64], [1, 64, 4, 64], [1, 64, 4, 64]], "
                                  "dtype: [float16, float16, float16]}\n"
                                  "  - {case_id: 2, input_shape: [[1, 64, 4, 64], [1, 64, 4, 64], [1, 64, 4, 64]], "
                                  "dtype: [float16, float16, float16], attrs: {scaleValue: abc}}\n")
    s = import_cann_folder(t)
    (case,) = s.cases
    assert case.attrs["scale"] == pytest.approx(0.1)
    assert [u.reason for u in s.unsupported] == ["scaleValue must be a number, got 'abc'"]


def test_cann_swiglu_along_any_axis_is_the_last_axis_op_on_a_reshape(tmp_path):
    """swi_glu along axis d of [outer, K, inner] maps to forge's last-axis op on [outer, K*inner];
    the op's float64 reference on that view equals swi_glu computed along axis d (chunk in halves
    along d, silu of the first times the second), so a wrong mapping fails here."""
    from forge.ops import get_op

    t = tmp_path / "swi_glu"
    t.mkdir()
    shapes = {1: ([6, 5], 0), 2: ([3, 4, 5], 1), 3: ([3, 4, 6], -1), 4: ([2, 3, 4, 2], -2), 5: ([3, 5], 0)}
    (t / "cases.yaml").write_text(yaml.safe_dump({"cases": [
        {"case_id": i, "input_shape": [x], "dtype": ["float32"], "attrs": {"dim": d}} for i, (x, d) in shapes.items()]}))
    s = import_cann_folder(t)
    assert {c.case_id: c.shape for c in s.cases} == {
        "1": {"M": 1, "N": 15}, "2": {"M": 3, "N": 10}, "3": {"M": 12, "N": 3}, "4": {"M": 6, "N": 4}}
    assert "axis 0 in halves; its length 3 is odd" in {u.case_id: u.reason for u in s.unsupported}["5"]
    rng = np.random.default_rng(0)
    for case in s.cases:
        shape, dim = shapes[int(case.case_id)]
        x = rng.standard_normal(shape)
        a, b = np.split(x, 2, axis=dim)
        expected = a / (1.0 + np.exp(-a)) * b
        p = case.problem()
        got = get_op("swiglu").reference_rows(p, {"x": x.reshape(p.shape["M"], -1)}, np.arange(p.shape["M"]))
        np.testing.assert_allclose(got.reshape(expected.shape), expected, rtol=1e-12)


def test_cann_softmax_along_a_middle_axis_is_softmax_axis_on_a_view(tmp_path):
    """softmax along axis d of [outer, K, inner] maps to softmax_axis [B=outer, K, I=inner] (the
    last axis stays forge's softmax); the op's float64 reference on that view equals softmax along
    axis d, so a wrong mapping fails here."""
    from forge.ops import get_op

    t = tmp_path / "softmax"
    t.mkdir()
    shapes = {1: ([6, 5], 0), 2: ([3, 4, 5], 1), 3: ([2, 3, 4, 2], -2), 4: ([2, 3, 4, 5, 3], 3), 5: ([4, 3], 2)}
    (t / "cases.yaml").write_text(yaml.safe_dump({"cases": [
        {"case_id": i, "input_shape": [x], "dtype": ["float32"], "attrs": {"dim": d}} for i, (x, d) in shapes.items()]}))
    s = import_cann_folder(t)
    assert {c.case_id: c.shape for c in s.cases} == {
        "1": {"B": 1, "K": 6, "I": 5}, "2": {"B": 3, "K": 4, "I": 5}, "3": {"B": 6, "K": 4, "I": 2},
        "4": {"B": 24, "K": 5, "I": 3}}
    assert "no such axis" in {u.case_id: u.reason for u in s.unsupported}["5"]
    rng = np.random.default_rng(0)
    for case in s.cases:
        shape, dim = shapes[int(case.case_id)]
        x = rng.standard_normal(shape)
        e = np.exp(x - x.max(axis=dim, keepdims=True))
        expected = e / e.sum(axis=dim, keepdims=True)
        p = case.problem()
        op = get_op("softmax_axis")
        rows = np.arange(p.shape["B"] * p.shape["K"])
        got = op.reference_rows(p, {"x": x.reshape(op.inputs(p)[0].shape)}, rows)
        np.testing.assert_allclose(got.reshape(expected.shape), expected, rtol=1e-12)


def test_suites_load_with_ids_and_reasons():
    sol = load_suite("sol_execbench")
    assert {c.source_id for c in sol.cases} >= {"210", "230", "235", "examples/cudnn/softmax"}
    rms = [c for c in sol.cases if c.source_name == "021_rmsnorm_h128"]
    assert [c.shape["M"] for c in rms][:3] == [192, 24, 32] and rms[0].attrs["eps"] == 1e-6
    gemm = [c for c in sol.cases if c.source_name == "011_gemm_n28672_k4096"]
    assert len(gemm) == 43 and gemm[0].shape == {"M": 256, "N": 28672, "K": 4096} and gemm[0].attrs["transpose_b"]
    assert any(u.source_name.startswith("012_gqa_paged_decode") for u in sol.unsupported)
    cann = load_suite("cannbench")
    assert len(cann.cases) == 100 and not cann.unsupported         # every case maps (swi_glu/softmax along any axis)
    assert {c.op for c in cann.select(["softmax"]).cases} == {"softmax", "softmax_axis"}
    assert len(cann.select(["gqa"]).cases) == 20 and {c.source_name for c in cann.select(["gqa"]).cases} == {"gqa"}


def test_unknown_suite_is_a_clear_error(tmp_path):
    with pytest.raises(ForgeInputError, match="neither a suite name"):
        load_suite("no_such_suite")
    bad = tmp_path / "bad.yaml"
    bad.write_text("source: sol_execbench\nproblems:\n  - {id: 1, name: x, kind: nope, dtype: float16, var: {M: [1]}}\n")
    with pytest.raises(ForgeInputError, match="kind"):
        load_suite(bad)


@pytest.mark.parametrize("suite,target", [("cannbench", "ascend910b2"), ("sol_execbench", "h100")])
def test_every_supported_suite_case_has_a_valid_variant(suite, target):
    """A case the backend accepts must have at least one variant inside the hardware's limits, or
    `forge bench` can only report it as failed (cann-bench rms_norm case 5, float32 N = 8192, had
    none on the 910B until float32 rows were normalised in place)."""
    from forge.backends import get_backend
    from forge.targets import get_target

    backend = get_backend(get_target(target), measure="model")
    empty = []
    for case in load_suite(suite).cases:
        problem = case.problem()
        if backend.supports(problem) is None and len(backend.space(problem).enumerate()) == 0:
            empty.append(problem.short())
    assert not empty
