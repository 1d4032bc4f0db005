"""Hard-constraint arithmetic on known cases, targets as data, and sync by construction."""
from __future__ import annotations

import difflib
import re

import numpy as np
import pytest

from forge.backends import get_backend
from forge.backends.ascend.constraints import Resources, hard_constraints
from forge.backends.ascend.hw import AscendHW
from forge.backends.ascend.pipeline import Buffer
from forge.errors import ForgeInputError
from forge.generators.ascendc.base import TEMPLATES, get_plan
from forge.ops import get_op
from forge.space import Space, choice
from forge.targets import get_target
from forge.variant import Variant

ATT = {"B": 4, "Hq": 32, "Hkv": 8, "S": 1024, "D": 128}


@pytest.fixture(scope="module")
def hw() -> AscendHW:
    return AscendHW(get_target("ascend910b2"))


@pytest.fixture(scope="module")
def att(hw):
    return get_plan(get_op("attention").problem(ATT, "float16", {"causal": True}), hw)


def test_targets_have_sourced_numbers():
    for name in ("ascend910", "ascend910b1", "ascend910b2", "ascend910b3", "ascend910b4", "ascend910_93", "ascend950pr"):
        t = get_target(name)
        assert t.kind == "ascend" and t.sources and t.details["ub_bytes"] > 0
    assert get_target("ascend910b2").details["aic"] == 24 and get_target("ascend910b3").details["aiv"] == 40
    assert get_target("ascend950pr").partial and get_target("ascend910").partial
    assert get_target("ascend910").details["event_ids"] == 4
    # ascend.md §1.4: 24 x 8192 x 1.8 GHz
    assert get_target("ascend910b2").peak_flops["float16"] == pytest.approx(24 * 8192 * 1.8e9, rel=1e-3)


CFG = dict(s1=64, s2=128, preload=2, l1_bufs=2, l0_db=2, base_k=64, ub_bufs=2)


def test_attention_ub_and_l1_explained_with_numbers(att):
    r = att.space().check(dict(s1=128, s2=512, preload=2, l1_bufs=2, l0_db=2, base_k=128, ub_bufs=2))
    # h = 64 rows per AIV: sIn 2x(64x512x4) + pOut 2x(64x512x2) + oIn 64x128x4 + oOut 64x128x2 + oAcc 64x128x4
    # + stat 64x4x(4 + 2x3 ring) + bc 64x32 + col 512x4 + bits 64 B
    assert r[0] == ("UB: 470.6 KiB > 191.8 KiB: sIn 2×128 KiB, pOut 2×64 KiB, oIn 1×32 KiB, oOut 1×16 KiB, "
                    "oAcc 1×32 KiB, stat 1×2.5 KiB, bc 1×2 KiB, col 1×2 KiB, bits 1×0.1 KiB")
    # Q resident 128x128x2, P 2x(128x512x2), K and V 2x(512x128x2) each
    assert r[1] == "L1: 800 KiB > 512 KiB: qL1 1×32 KiB, pL1 2×128 KiB, kL1 2×128 KiB, vL1 2×128 KiB"
    assert len(r) == 2                                   # L0 blocks (128 x 128 x 128, double) always fit
    assert att.space().check(dict(s1=128, s2=256, preload=2, l1_bufs=2, l0_db=2, base_k=128, ub_bufs=1)) == []


def test_attention_valid_point_and_enumeration_agree(att):
    sp = att.space()
    en = sp.enumerate()
    assert len(en) > 0 and en.reason_counts["UB"] > 0 and en.reason_counts["L1"] > 0
    for i in range(0, len(en), max(1, len(en) // 20)):
        assert sp.check(en.config(i)) == []
    assert sp.check(CFG) == []


def test_synthetic_limits(hw):
    def res(c):
        n = np.asarray(c["n"])
        return Resources([Buffer("x", "VECIN", c["len"], n), Buffer("k", "B2", 1000, 1)], c["bd"], "aiv",
                         events=c["ev"], flags=c["fl"], pending=c["pend"])
    sp = Space([choice("n", (2, 9)), choice("len", (1024, 1000)), choice("bd", (48, 49)), choice("ev", (1, 7)),
                choice("fl", (3, 12)), choice("pend", (4, 16))], hard_constraints(hw, res))
    good = dict(n=2, len=1024, bd=48, ev=1, fl=3, pend=4)
    reasons = sp.check(dict(good, k=1))
    assert reasons == ["alignment: k 1000 B in L0B is not a multiple of 512 B"]
    bad = sp.check(dict(n=9, len=1000, bd=49, ev=7, fl=12, pend=16))
    text = "\n".join(bad)
    assert "x 1000 B in UB is not a multiple of 32 B" in text
    assert "queue buffers per position: 9 > 8: VECIN 9" in text
    assert "event ids: 9 > 8: 7 by hand + 2 reserved" in text
    assert "cross-core flag ids: 12 > 11" in text
    assert "cross-core pending sets: 16 > 15" in text
    assert "blockDim: 49 > 48 AIV cores" in text
    en = sp.enumerate()
    assert len(en) == 1 or all(not sp.check(c) for c in en.configs())


def test_buffers_per_kernel_count_tbufs_too(hw):
    """"The sum of all buffers in a kernel must be <= 64" (ascend.md §2.3): 60 queue blocks and
    five TBufs are 65, as the emulator counts them."""
    def res(c):
        return Resources([Buffer("x", "VECIN", 1024, 30), Buffer("y", "VECOUT", 1024, 30)]
                         + [Buffer(f"t{i}", "VECCALC", 32, 1, queue=False) for i in range(c["tbufs"])], 1, "aiv")
    sp = Space([choice("tbufs", (4, 5))], hard_constraints(hw, res))
    assert not any(r.startswith("buffers per kernel") for r in sp.check({"tbufs": 4}))
    assert any(r.startswith("buffers per kernel: 65 > 64") for r in sp.check({"tbufs": 5}))


def test_matmul_blockdim_and_tcube_limits(hw):
    plan = get_plan(get_op("matmul").problem({"M": 4096, "N": 4096, "K": 4096}, "float16"), hw)
    r = plan.space().check(dict(baseM=256, baseN=256, baseK=128, stepK=4, dbL1=2, dbL0C=2, coreM=1, coreN=1))
    text = "\n".join(r)
    assert "blockDim: 256 > 24 AIC cores" in text
    assert "L0C: 512 KiB > 128 KiB" in text            # 256x256x4 B x 2 (ascend.md §2.6)
    assert "L1: 1024 KiB > 512 KiB" in text           # (256 + 256) x 128 x 4 x 2 B x 2


@pytest.mark.parametrize("op,shape", [("softmax_axis", {"B": 1, "K": 512, "I": 2049}),   # cann-bench softmax 16
                                      ("rmsnorm", {"M": 2431, "N": 67}), ("swiglu", {"M": 143, "N": 536})])
def test_no_two_valid_configs_launch_the_same_vector_kernel(hw, op, shape):
    """Core counts above a kernel's work units launch it on min(cores, units) cores: such configs
    used to be valid side by side (81 of 312 in cann-bench softmax case 16) and a trial could
    measure the same kernel twice."""
    plan = get_plan(get_op(op).problem(shape, "float16"), hw)
    space = plan.space()
    kernels = [(tuple(sorted((k, v) for k, v in c.items() if k != "cores")), int(plan.block_dim(c)))
               for c in space.enumerate().configs()]
    assert kernels and len(set(kernels)) == len(kernels)
    if op == "softmax_axis":      # 3 units of 1024 columns: 12 cores cover them, 24 and 48 repeat it
        cfg = dict(cols=1024, rows=8, buffer_num=2, cores=24)
        assert any("the same kernel as cores 12: it has only 3 work units" in r for r in space.check(cfg))
        assert space.check(dict(cfg, cores=12)) == []


def test_no_template_places_sync_by_hand():
    for f in TEMPLATES.glob("*.j2"):
        text = f.read_text()
        calls = re.findall(r"\b(AllocTensor|EnQue|DeQue|FreeTensor|SetFlag|WaitFlag|CrossCoreSetFlag|"
                           r"CrossCoreWaitFlag|PipeBarrier)\s*[<(]", text)
        assert not calls, f"{f.name} writes {calls} by hand"


def test_sync_comes_from_description(att):
    cfg = CFG
    src = att.render(cfg).text
    pl = att.pipeline(cfg)
    assert src.count("if (sig) CrossCoreSetFlag<2, PIPE_FIX>(FLAG_QK);") == 1
    assert src.count("CrossCoreWaitFlag(FLAG_P)") == 1 and "constexpr uint16_t FLAG_PV = 2" in src
    for b in pl.buffers:
        if b.queue:
            assert f"pipe.InitBuffer({b.member}, {b.num}, {b.nbytes});" in src
    # tensors held across stage executions: acquired / released under the description's conditions
    assert "if (qAcq) qL1 = queQL1.DeQue<half>();" in src and "if (qRel) queQL1.FreeTensor(qL1);" in src
    assert "if (cAcq) cL0 = queCL0.AllocTensor<float>();" in src and "if (cRel) queCL0.EnQue(cL0);" in src
    assert "LocalTensor<half> qL1;" in src
    # vectorised softmax: no scalar read-back of vector results, no per-row reduction loop
    assert "GetValue" not in src and "HardEvent::V_S" not in src
    assert "WholeReduceMax(" in src and "Brcb(" in src


def test_one_parameter_changes_source_locally(att):
    a = att.render(dict(CFG, preload=1)).text.splitlines()
    b = att.render(dict(CFG, preload=2)).text.splitlines()
    changed = [l for l in difflib.unified_diff(a, b, lineterm="", n=0) if l[:1] in "+-" and l[:3] not in ("+++", "---")]
    # config comment, L and R, and the UB ring of per-slot alpha/l (InitBuffer + its declaration)
    assert 0 < len(changed) <= 10, changed


def test_backend_contract(tmp_path):
    import pickle

    be = get_backend("ascend910b2", measure="model")
    assert be.measure_available()[0] is False
    assert pickle.loads(pickle.dumps(be)).hw.aic == 24        # executors ship backends to workers
    with pytest.raises(ForgeInputError):
        get_backend("ascend910b2", measure="nope")
    p = get_op("attention").problem(ATT, "float16", {"causal": True})
    assert "coupled" in get_backend("ascend910").supports(p)
    v = Variant(p, "ascend910b2", CFG)
    ver = be.check(v)
    assert ver.ok and ver.resources["block_dim"] == 24 and ver.resources["cross_flags"] == 3
    src = be.generate(v)
    assert set(src.files) == {"kernel.cpp", "main.cpp", "CMakeLists.txt", "run.sh"}
    assert "aclrtEventElapsedTime" in src.files["main.cpp"] and "ascendc_library" in src.files["CMakeLists.txt"]
    assert re.search(r"//\s+s1 = 64", src.text)


def test_the_launcher_refuses_an_npu_of_another_soc_and_names_the_matching_target():
    """A kernel built for SOC_VERSION Ascend910B2 is not timed on another SoC under ascend910b2's
    name: the launcher compares aclrtGetSocName() first, and the backend turns its refusal into a
    reason that names the target for that NPU."""
    from forge.backends.ascend.backend import other_soc_hint

    be = get_backend("ascend910b2", measure="model")
    main = be.generate(Variant(get_op("attention").problem(ATT, "float16", {"causal": True}), "ascend910b2",
                               CFG)).files["main.cpp"]
    assert 'std::strcmp(soc, "Ascend910B2") != 0' in main
    assert main.index("aclrtGetSocName()") < main.index("aclInit(nullptr)")
    said = "forge: this NPU is Ascend910B3, the kernel was built for Ascend910B2\n"
    assert other_soc_hint(said) == ("this NPU is Ascend910B3, the kernel was built for Ascend910B2: tune for it "
                                    "with --target ascend910b3")
    assert other_soc_hint("forge: this NPU is Ascend310P3, the kernel was built for Ascend910B2").endswith(
        "no target describes Ascend310P3 (add one under forge/targets/data)")
    assert other_soc_hint("aclrtMalloc failed: 207001") == "aclrtMalloc failed: 207001"
