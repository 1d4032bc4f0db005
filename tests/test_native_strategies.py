"""What every population strategy of forge's own (`ga`, `greywolf`) must do, on the replayed
synthetic space of conftest.py: repeat itself for a seed, propose only valid, distinct points
until the space is spent, keep a batch full, and beat random search."""
from __future__ import annotations

import numpy as np
import pytest

from forge.search.random_baseline import expected_best_random
from forge.search.replay_run import run_replay
from forge.search.strategies import get_strategy, sampler_choices, strategy_names

# options that keep each strategy's population small against the 512-point space
STRATEGIES = {"ga": {"pop_size": 10}, "greywolf": {}}


@pytest.mark.parametrize("name", STRATEGIES)
def test_registered_and_deterministic(synthetic_space, name):
    assert name in strategy_names()
    r1 = run_replay(synthetic_space, name, 60, seed=4)
    r2 = run_replay(synthetic_space, name, 60, seed=4)
    assert r1.proposals == r2.proposals and np.array_equal(r1.trace, r2.trace)
    assert r1.proposals != run_replay(synthetic_space, name, 60, seed=5).proposals


@pytest.mark.parametrize("name", STRATEGIES)
def test_valid_distinct_until_the_space_is_spent(synthetic_space, name):
    r = run_replay(synthetic_space, name, 10_000, seed=0, **STRATEGIES[name])
    assert r.infeasible == 0 and r.failures > 0            # the space's failing points were met and ranked
    assert r.evaluations == len(synthetic_space.enumeration)
    assert len({tuple(c.values()) for c in r.proposals}) == r.evaluations


@pytest.mark.parametrize("name", STRATEGIES)
def test_batches_keep_the_executor_full(synthetic_space, name):
    """Asked for more than a generation (or pack) before any result is back, it still fills the batch."""
    s = get_strategy(name, synthetic_space.enumeration, seed=0, **STRATEGIES[name])
    batch = s.ask(20)
    assert len(batch) == 20 and len({tuple(c.values()) for c in batch}) == 20


@pytest.mark.parametrize("name", STRATEGIES)
def test_better_than_random_search(synthetic_space, name):
    budget = 40
    best = np.mean([run_replay(synthetic_space, name, budget, seed=s, **STRATEGIES[name]).best_s
                    for s in range(12)])
    assert best < expected_best_random(synthetic_space.time_s, 0, budget)


def test_the_flags_help_names_every_strategy_a_user_can_type():
    """--sampler / --strategy help lists forge's own strategies as well as Optuna's, and only
    names the registry accepts."""
    shown = sampler_choices().split(" | ")
    assert set(STRATEGIES) <= set(shown) and "forge" in shown
    assert set(shown) <= set(strategy_names()) | {"random"}
    assert {n for n in strategy_names() if not n.startswith("optuna-")} <= set(shown)
