"""Baseline labels say what the baseline is: a matmul's 'unfused sequence' is the op alone (so its
× unfused reads against one kernel), and a step named in the sequence is one the problem has."""
from __future__ import annotations

from pathlib import Path

import pytest

from forge.backends import get_backend
from forge.ops import get_op


@pytest.mark.parametrize("target", ["h100", "ascend910b2"])
def test_a_matmul_unfused_baseline_says_it_is_the_op_alone_and_what_it_is(target, tmp_path):
    """An engineer must tell what the variants are set against: on CUDA an ideal kernel (so the
    ratio is a fraction of the roofline), on Ascend forge's own kernel at vendor-like tiles."""
    p = get_op("matmul").problem({"M": 256, "N": 256, "K": 256}, "float16")
    (base,) = [b for b in get_backend(target).baselines(p, Path(tmp_path), seed=0, reps=1, timeout=10)
               if b.name == "unfused"]
    assert "the op alone, nothing to fuse" in base.label and "sequence" not in base.label
    said = {"h100": "ideal kernel at the achievable roofline", "ascend910b2": "vendor-like tiles (baseM=128"}
    assert said[target] in base.label


def test_ascend_attention_names_the_mask_step_only_when_causal(tmp_path):
    backend = get_backend("ascend910b2")
    for causal in (False, True):
        p = get_op("attention").problem({"B": 1, "H": 2, "S": 128, "D": 64}, "float16", {"causal": causal})
        (base,) = backend.baselines(p, Path(tmp_path), seed=0, reps=1, timeout=10)
        assert "S = S·scale" in base.label and ("S = S·scale + mask" in base.label) == causal
