"""Optuna samplers as forge strategies, restricted to forge's enumerated valid space.

Optuna's own constraints are soft (evaluated after a trial), so an unrestricted sampler spends
evaluations on infeasible points. Here every Optuna proposal that is infeasible, or that repeats a
point already proposed, is *repaired* to the nearest valid unproposed point; the raw proposal is
closed as FAIL (tagged `repaired_to`) and the repaired point is enqueued and asked as a real trial,
so the sampler learns from exactly the points that are measured. Parameters are exposed to Optuna
as value indices: ordered parameters as integer ranges (so TPE/CMA-ES/GP see their order),
unordered ones as categoricals.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution
from optuna.trial import TrialState

from forge.errors import ForgeInputError, allowed_list
from forge.search.strategies import OPTUNA_SAMPLERS as SAMPLERS
from forge.search.strategy import Strategy
from forge.space import Enumeration

# A value told for a failed variant: worse than anything measured, so samplers move away from it
# without the failure dominating a log-scale model. Applied as a multiple of the worst success.
FAIL_PENALTY = 3.0


def make_sampler(name: str, seed: int, distributions: dict[str, BaseDistribution]) -> optuna.samplers.BaseSampler:
    # Both TPE variants are spelt out: Optuna's default switched from independent (one density
    # per parameter, Optuna < 5) to joint (multivariate, Optuna >= 5) sampling, and a name must mean
    # the same algorithm whichever version is installed. "tpe" is TPE as published (independent);
    # "tpe-multivariate" models the parameters jointly, so it can see interactions.
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, constant_liar=True, multivariate=False)
    if name == "tpe-multivariate":
        return optuna.samplers.TPESampler(seed=seed, constant_liar=True, multivariate=True)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed, with_margin=True, warn_independent_sampling=False)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed)
    if name == "qmc":
        return optuna.samplers.QMCSampler(seed=seed, warn_independent_sampling=False)
    # Optuna's QMC default is an unscrambled Sobol sequence: the seed only reaches the first
    # (independent) trial, so every seed walks the same sequence. Scrambling makes each seed an
    # independent low-discrepancy sequence (Owen scrambling, scipy.stats.qmc.Sobol).
    if name == "qmc-scrambled":
        return optuna.samplers.QMCSampler(seed=seed, scramble=True, warn_independent_sampling=False)
    if name == "grid":
        grid = {k: list(range(d.high + 1)) if isinstance(d, IntDistribution) else list(d.choices)
                for k, d in distributions.items()}
        return optuna.samplers.GridSampler(grid, seed=seed)
    raise ForgeInputError("sampler", f"unknown sampler {name!r}; {allowed_list(name, SAMPLERS)}")


class OptunaStrategy(Strategy):
    def __init__(self, enumeration: Enumeration, seed: int = 0, sampler: str = "tpe",
                 storage: str | None = None, study_name: str | None = None, **options: Any):
        self.name = sampler
        super().__init__(enumeration, seed, **options)
        self.distributions: dict[str, BaseDistribution] = {}
        for p in self.space.params:
            n = len(p.values)
            self.distributions[p.name] = (IntDistribution(0, n - 1) if p.ordered and n > 1
                                          else CategoricalDistribution(list(range(n))))
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        self.study = optuna.create_study(
            study_name=study_name or "forge", storage=storage, direction="minimize",
            sampler=make_sampler(sampler, seed, self.distributions), load_if_exists=True)
        self.running: dict[int, optuna.trial.Trial] = {}   # valid row -> its trial, until told
        self.worst = 0.0
        self._resync()

    def _resync(self) -> None:
        """Rebuild what was proposed from the study (resume): close trials a killed run left open."""
        for t in self.study.get_trials(deepcopy=False):
            if t.state == TrialState.RUNNING:
                self.study.tell(t.number, state=TrialState.FAIL)
            elif t.state == TrialState.COMPLETE and "row" in t.user_attrs:
                row = int(t.user_attrs["row"])
                self.proposed[row] = True
                self.worst = max(self.worst, t.value if not t.user_attrs.get("failed") else 0.0)
                self.observed[row] = None if t.user_attrs.get("failed") else t.value

    def _indices(self, params: dict[str, int]) -> np.ndarray:
        return np.array([int(params[p.name]) for p in self.space.params], dtype=np.int64)

    def ask(self, n: int) -> list[dict[str, Any]]:
        out = []
        for _ in range(n):
            if self.remaining() == 0:
                break
            trial = self.study.ask(self.distributions)
            idx = self._indices(trial.params)
            row = self.row_of.get(int(self._flat(idx[None, :])[0]))
            if row is None or self.proposed[row]:
                repaired = self.nearest_unproposed(idx)
                if repaired is None:
                    self.study.tell(trial, state=TrialState.FAIL)
                    break
                trial.set_user_attr("repaired_to", int(repaired))
                self.study.tell(trial, state=TrialState.FAIL)
                self.study.enqueue_trial({p.name: int(i) for p, i in zip(self.space.params, self.valid[repaired])})
                trial = self.study.ask(self.distributions)
                row = repaired
            trial.set_user_attr("row", int(row))
            self.proposed[row] = True
            self.running[row] = trial
            out.append(self.config(row))
        return out

    def tell(self, config: dict[str, Any], value: float | None) -> None:
        row = self.row(config)
        super().tell(config, value)
        trial = self.running.pop(row, None)
        if value is not None:
            self.worst = max(self.worst, value)
        told = value if value is not None else (self.worst * FAIL_PENALTY if self.worst else 1.0)
        if trial is None:
            # Known from elsewhere (warm start): add it as a finished trial the sampler can use.
            params = {p.name: int(i) for p, i in zip(self.space.params, self.valid[row])}
            self.study.add_trial(optuna.trial.create_trial(
                params=params, distributions=self.distributions, value=told,
                user_attrs={"row": int(row), "failed": value is None}))
            return
        trial.set_user_attr("failed", value is None)
        self.study.tell(trial, told)
