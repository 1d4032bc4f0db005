"""Strategy registry: `get_strategy(name, enumeration, seed, **opts)`.

- `forge`  — forge's default (surrogate over the whole enumerated valid space, forge_strategy.py)
- `random` — exact uniform random search without replacement (random_strategy.py)
- `greywolf` — Kernel Tuner 1.5's adaptive tabu grey-wolf search (greywolf_strategy.py); forge's
  default can run it beside its model (`pack_every`)
- `ga`     — a generational genetic algorithm, Kernel Tuner 1.5's (ga_strategy.py): for spaces whose
  optimum hides in a small corner of one code path
- `optuna-<sampler>` — Optuna samplers through `forge.search.optuna_strategy.OptunaStrategy`
  (which repairs invalid/duplicate proposals to the nearest valid unproposed point);
  the short names `tpe`, `tpe-multivariate`, `cmaes`, `gp`, `qmc`, `qmc-scrambled`, `grid` mean the same.
  `tpe` is independent TPE (one density per parameter), `tpe-multivariate` joint TPE, whichever
  of the two the installed Optuna uses by default.
"""
from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from forge.errors import ForgeInputError, allowed_list
from forge.search.strategy import Strategy, parse_options
from forge.space import Enumeration

OPTUNA_SAMPLERS = ("tpe", "tpe-multivariate", "cmaes", "gp", "qmc", "qmc-scrambled", "random", "grid")
# Optuna samplers that import a package of their own only once their search starts (GPSampler after
# its random start), named with the forge extra that installs it.
NEEDS = {"gp": ("torch", "torch")}
NATIVE = {
    "forge": "forge.search.forge_strategy:ForgeStrategy",
    "random": "forge.search.random_strategy:RandomStrategy",
    "ga": "forge.search.ga_strategy:GeneticStrategy",
    "greywolf": "forge.search.greywolf_strategy:GreyWolfStrategy",
}


def strategy_names() -> list[str]:
    return list(NATIVE) + [f"optuna-{s}" for s in OPTUNA_SAMPLERS] + [s for s in OPTUNA_SAMPLERS if s != "random"]


def sampler_choices() -> str:
    """The short names a user types, for a flag's help: forge's own strategies, then Optuna's."""
    return " | ".join([*NATIVE, *(s for s in OPTUNA_SAMPLERS if s not in NATIVE)])


def _optuna_sampler(name: str) -> str | None:
    if name.startswith("optuna-") and name[len("optuna-"):] in OPTUNA_SAMPLERS:
        return name[len("optuna-"):]
    if name in OPTUNA_SAMPLERS and name not in NATIVE:
        return name
    return None


def strategy_unavailable(name: str) -> str | None:
    """Why a known strategy cannot run here (a package it needs is not installed), or None. Asked
    before a run starts: Optuna's GP sampler would otherwise fail only after its random start."""
    sampler = _optuna_sampler(name)
    if sampler in NEEDS:
        module, extra = NEEDS[sampler]
        if importlib.util.find_spec(module) is None:
            return (f"{name} needs {module}, which is not installed: pip install 'forge[{extra}]' "
                    "(or choose another sampler)")
    return None


def strategy_class(name: str) -> tuple[type[Strategy], dict[str, Any]]:
    """The class behind a registry name, and the fixed arguments the name stands for."""
    if name in NATIVE:
        module, cls = NATIVE[name].split(":")
        return getattr(importlib.import_module(module), cls), {}
    sampler = _optuna_sampler(name)
    if sampler is None:
        raise ForgeInputError("strategy", f"unknown strategy {name!r}; {allowed_list(name, strategy_names())}")
    why = strategy_unavailable(name)
    if why:
        raise ForgeInputError("strategy", why)
    from forge.search.optuna_strategy import OptunaStrategy

    return OptunaStrategy, {"sampler": sampler}


def check_strategy_options(name: str, options: dict[str, Any], field: str = "sampler_options") -> None:
    """Checks a strategy's options before anything is measured or written (a ForgeInputError
    naming `field.<option>` and what is allowed)."""
    cls, _ = strategy_class(name)
    parse_options(cls.Options, options, name, field)


def get_strategy(name: str, enumeration: Enumeration, seed: int = 0, *, storage: str | None = None,
                 study_name: str | None = None, **opts: Any) -> Strategy:
    """Instantiate a strategy by name over an enumerated valid space. `storage`/`study_name` are
    where an Optuna study persists (resume); strategies that keep no study ignore them."""
    cls, fixed = strategy_class(name)
    if "sampler" in fixed:
        fixed = {**fixed, "storage": storage, "study_name": study_name}
    return cls(enumeration, seed, **fixed, **opts)
