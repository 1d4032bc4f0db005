"""The grey-wolf strategy (`greywolf`), and the pack inside forge's default, on the replayed
synthetic space of conftest.py."""
from __future__ import annotations

import numpy as np
import pytest

from forge.errors import ForgeInputError
from forge.search.replay_run import run_replay
from forge.search.strategies import get_strategy


def _value(space, cfg):
    row = space.row_of_config(cfg)
    return float(space.time_s[row]) if space.status[row] == "ok" else None


def _tell_all(space, strategy, configs):
    for cfg in configs:
        strategy.tell(cfg, _value(space, cfg))


def test_leaders_survive_and_children_recombine_the_pack(synthetic_space):
    """After the first pack, one iteration proposes a child for each of the pack_size - 3
    non-leaders; unshaken, a child is made of values the pack holds (or repaired next to one)."""
    s = get_strategy("greywolf", synthetic_space.enumeration, seed=3, shake_rate=0.0)
    pack = s.ask(8)
    _tell_all(synthetic_space, s, pack)
    leaders = sorted(pack, key=lambda c: _value(synthetic_space, c) or np.inf)[:3]
    children = s.ask(5)
    assert len(children) == 5
    assert not any(c in pack for c in children)
    held = [all(v in {p[k] for p in pack} for k, v in c.items()) for c in children]
    assert sum(held) >= 3
    _tell_all(synthetic_space, s, children)
    members = [s.config(r) for r, _ in s._pack]
    assert all(c in members for c in leaders)           # the leaders are never replaced


def test_a_worse_child_is_accepted_only_by_annealing(synthetic_space):
    """Acceptance is simulated annealing on the time difference in time_unit_s units: at a tiny
    unit only the children no slower than their parent join the pack, at a huge one every child
    (a failed one only in place of a failed parent)."""
    def joined(unit: float, seed: int) -> tuple[set[int], set[int], set[int]]:
        """Over 30 evaluations: the children that joined the pack, those no slower than their
        parent, and those that could join (a failed one only in place of a failed parent)."""
        s = get_strategy("greywolf", synthetic_space.enumeration, seed=seed, time_unit_s=unit)
        new, improving, fit = set(), set(), set()
        finish = s._finish_step

        def watched() -> None:
            children = dict(s._children) if s._iterating else {}
            parent = {i: s._pack[i][1] for i in children}
            old = {r for r, _ in s._pack}
            finish()
            new.update({r for r, _ in s._pack} - old)
            improving.update({r for i, r in children.items() if s._value(r) <= parent[i]} - old)
            fit.update({r for i, r in children.items()
                        if np.isfinite(s._value(r)) or not np.isfinite(parent[i])} - old)
        s._finish_step = watched
        run_replay(synthetic_space, s, 30)
        return new, improving, fit
    rejected = 0
    for seed in range(6):
        new, improving, every = joined(1e-12, seed)
        assert new == improving
        rejected += len(every - improving)
        new, _, every = joined(1e12, seed)
        assert new == every
    assert rejected > 0                                  # some children were slower than their parent


def test_start_from_measured_points(synthetic_space):
    """start="measured": the first pack is the best points already measured, and the first ask
    is already an iteration's children."""
    s = get_strategy("greywolf", synthetic_space.enumeration, seed=0, start="measured")
    rng = np.random.default_rng(0)
    rows = rng.choice(len(synthetic_space.enumeration), 12, replace=False)
    known = [s.config(int(r)) for r in rows]
    s.warm_start([(c, _value(synthetic_space, c)) for c in known])
    children = s.ask(5)
    best8 = sorted(known, key=lambda c: _value(synthetic_space, c) or np.inf)[:8]
    assert sorted(s.config(r) == c for r, _ in s._pack for c in best8).count(True) == 8
    assert all(c not in known for c in children)


def test_options_are_checked(synthetic_space):
    with pytest.raises(ForgeInputError, match="sampler_options.packsize: not an option of greywolf"):
        get_strategy("greywolf", synthetic_space.enumeration, packsize=8)
    with pytest.raises(ForgeInputError, match="sampler_options.repair"):
        get_strategy("greywolf", synthetic_space.enumeration, repair="first")


def test_forge_gives_every_second_slot_after_its_start_to_the_pack(synthetic_space):
    s = get_strategy("forge", synthetic_space.enumeration, seed=2, pack_every=2)
    _tell_all(synthetic_space, s, s.ask(s.options.n_init))
    assert s._pack is not None and not s._pack._pack                 # no pack before the start is measured
    start = [s.config(r) for r in s.observed]
    after = []
    for _ in range(6):
        cfg = s.ask(1)
        after.append(s.row(cfg[0]))
        _tell_all(synthetic_space, s, cfg)
    assert all(r in s._pred for r in after[0::2])                    # the model's slots
    assert all(r in s._pack._tabu and r not in s._pred for r in after[1::2])   # the pack's
    best3 = sorted(start, key=lambda c: _value(synthetic_space, c) or np.inf)[:3]
    members = [s.config(r) for r, _ in s._pack._pack]
    assert all(c in members for c in best3)        # the pack started from the start's best points
    assert get_strategy("forge", synthetic_space.enumeration, seed=2, pack_every=0)._pack is None
