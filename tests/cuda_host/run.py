"""The tests' entry to forge's host emulation of CUDA plans (forge/backends/cuda/host.py)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from forge.backends.cuda import host
from forge.generators.cuda import Plan


def available() -> bool:
    return host.available()[0]


def run_on_host(plan: Plan, inputs: dict[str, np.ndarray], dtype: str, work: Path) -> np.ndarray:
    """The output buffer, as float32, after the plan's launches run on the CPU."""
    built = host.build(plan, work / "build")
    assert built.ok, built.error
    res = host.run(built.exe, plan, inputs, dtype, work / "run", timeout=300)
    assert res.ok, res.error
    return res.output


def covering_configs(configs: list[dict]) -> list[dict]:
    """Few valid configs that together hold every value every parameter takes in `configs`:
    greedily the one holding the most values not yet held (first in order on ties)."""
    want = {(k, v) for c in configs for k, v in c.items()}
    picked: list[dict] = []
    while want:
        best = max(configs, key=lambda c: len(want & set(c.items())))
        picked.append(best)
        want -= set(best.items())
    return picked
