"""Strategy registry: `get_strategy(name, enumeration, seed, **opts)`.

- `forge`  — forge's default (surrogate over the whole enumerated valid space, forge_strategy.py)
- `random` — exact uniform random search without replacement (random_strategy.py)
- `optuna-<sampler>` — Optuna samplers through the lead's `forge.search.optuna_strategy.OptunaStrategy`
  (which repairs invalid/duplicate proposals to the nearest valid unproposed point);
  the short names `tpe`, `tpe-multivariate`, `cmaes`, `gp`, `qmc`, `qmc-scrambled`, `grid` mean the same.
"""
from __future__ import annotations

import importlib
from typing import Any

from forge.errors import ForgeInputError
from forge.search.strategy import Strategy
from forge.space import Enumeration

OPTUNA_SAMPLERS = ("tpe", "tpe-multivariate", "cmaes", "gp", "qmc", "qmc-scrambled", "random", "grid")
NATIVE = {
    "forge": "forge.search.forge_strategy:ForgeStrategy",
    "random": "forge.search.random_strategy:RandomStrategy",
}


def strategy_names() -> list[str]:
    return list(NATIVE) + [f"optuna-{s}" for s in OPTUNA_SAMPLERS] + [s for s in OPTUNA_SAMPLERS if s != "random"]


def _optuna_sampler(name: str) -> str | None:
    if name.startswith("optuna-") and name[len("optuna-"):] in OPTUNA_SAMPLERS:
        return name[len("optuna-"):]
    if name in OPTUNA_SAMPLERS and name not in NATIVE:
        return name
    return None


def get_strategy(name: str, enumeration: Enumeration, seed: int = 0, **opts: Any) -> Strategy:
    """Instantiate a strategy by name over an enumerated valid space."""
    if name in NATIVE:
        module, cls = NATIVE[name].split(":")
        return getattr(importlib.import_module(module), cls)(enumeration, seed, **opts)
    sampler = _optuna_sampler(name)
    if sampler is None:
        raise ForgeInputError("strategy", f"unknown strategy {name!r}; allowed: {', '.join(strategy_names())}")
    try:
        from forge.search.optuna_strategy import OptunaStrategy
    except ImportError as exc:
        raise ForgeInputError("strategy", f"{name!r} needs forge.search.optuna_strategy, which is not "
                              f"available here ({exc})") from None
    return OptunaStrategy(enumeration, seed, sampler=sampler, **opts)
