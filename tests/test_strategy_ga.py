"""The genetic algorithm strategy (`ga`), on the replayed synthetic space of conftest.py."""
from __future__ import annotations

import numpy as np
import pytest

from forge.errors import ForgeInputError
from forge.search.strategies import get_strategy


def _value(space, cfg):
    row = space.row_of_config(cfg)
    return float(space.time_s[row]) if space.status[row] == "ok" else None


def test_children_recombine_parents_drawn_best_first(synthetic_space):
    """Generation 0 is pop_size random points; generation 1 is bred from them: with mutation off,
    most children are made only of values generation 0 holds (the rest were repaired), and
    parents are drawn by rank, the best far more often than the worst."""
    s = get_strategy("ga", synthetic_space.enumeration, seed=2, pop_size=12, mutation_chance=10**9)
    gen0 = s.ask(12)
    for cfg in gen0:
        s.tell(cfg, _value(synthetic_space, cfg))
    s._next_generation()
    children = [s.config(r) for r in s._generation]
    made_of_gen0 = [all(v in {g[k] for g in gen0} for k, v in c.items()) for c in children]
    assert len(children) == 12 and sum(made_of_gen0) >= 9
    ranked = list(range(12))
    drawn = [i for _ in range(2000) for i in s._select(ranked)]
    assert all(a != b for a, b in zip(drawn[::2], drawn[1::2]))             # two distinct parents
    assert drawn.count(0) > 10 * drawn.count(11)                            # best far more than worst
    assert 1.5 < np.mean(drawn) < 12 / 3                                    # uniform draws would average 5.5


def test_options_are_checked(synthetic_space):
    with pytest.raises(ForgeInputError, match="sampler_options.popsize: not an option of ga; did you mean 'pop_size'\\? allowed: crossover, mutation_chance, pop_size"):
        get_strategy("ga", synthetic_space.enumeration, popsize=8)
    with pytest.raises(ForgeInputError, match="sampler_options.crossover"):
        get_strategy("ga", synthetic_space.enumeration, crossover="two_point")
