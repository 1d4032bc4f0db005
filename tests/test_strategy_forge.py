"""forge's default strategy and the registry, on replayed spaces (fast, deterministic)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.ensemble import ExtraTreesRegressor

from forge.errors import ForgeInputError
from forge.search.random_baseline import expected_best_random
from forge.search.replay_run import run_replay
from forge.search.strategies import get_strategy


@pytest.fixture(scope="module")
def space(synthetic_space):
    return synthetic_space


def test_deterministic_for_fixed_seed(space):
    r1 = run_replay(space, "forge", 40, seed=7, batch=4)
    r2 = run_replay(space, "forge", 40, seed=7, batch=4)
    r3 = run_replay(space, "forge", 40, seed=8, batch=4)
    assert r1.proposals == r2.proposals and np.array_equal(r1.trace, r2.trace)
    assert r1.proposals != r3.proposals


def _after_start(space, seed: int):
    """The default strategy with its 14-point space-filling start measured: the next ask fits."""
    s = get_strategy("forge", space.enumeration, seed=seed)
    for cfg in s.ask(14):
        row = space.row_of_config(cfg)
        s.tell(cfg, float(space.time_s[row]) if space.status[row] == "ok" else None)
    return s


def test_asking_one_point_at_a_time_while_others_run_answers_as_one_batch(space):
    """forge tune refills each freed slot with ask(1) while the other points still run. With nothing
    told in between, the points in flight count as chosen in the same batch (their neighbours
    damped) and the model is not refitted, so the answers are those of one ask of the same size."""
    for seed in (0, 1, 2):
        at_once, one_by_one = _after_start(space, seed), _after_start(space, seed)
        assert at_once.ask(5) == [c for _ in range(5) for c in one_by_one.ask(1)]


def test_a_point_reserved_after_the_model_is_fitted_damps_its_neighbours_in_the_kept_scores(space):
    """forge tune reserves warm-start configs mid-run (a failed bank hit). The model's ranking is
    kept until the next tell, so a point reserved meanwhile must damp its neighbours' scores there,
    as a point in flight at the fit damps them; the other scores stay as they were."""
    s = _after_start(space, 0)
    s.ask(1)                                          # fits the model; its scores are kept
    _, _, cand, _, _, acq = s._fit[1]
    kept = acq.copy()
    row = next(int(r) for r in cand if not s.proposed[r] and np.isin(s.neighbours(int(r)), cand).any())
    near = np.isin(cand, s.neighbours(row))
    s.reserve(s.config(row))
    assert np.allclose(acq[near], kept[near] * s.options.batch_damping) and (acq[~near] == kept[~near]).all()


def test_asks_with_nothing_told_between_them_never_run_out_of_a_ranked_subset(space):
    """With max_rank below the space, the model ranks a subset; asks that spend it before the next
    tell rank a fresh one rather than answering nothing while points remain."""
    def after_start():
        s = get_strategy("forge", space.enumeration, seed=0, max_rank=1, n_init=3)
        for cfg in s.ask(3):
            row = space.row_of_config(cfg)
            s.tell(cfg, float(space.time_s[row]) if space.status[row] == "ok" else None)
        return s

    one_by_one = after_start()
    assert all(len(one_by_one.ask(1)) == 1 for _ in range(60))
    assert len(after_start().ask(60)) == 60


def test_proposals_valid_distinct_and_failures_handled(space):
    s = get_strategy("forge", space.enumeration, seed=1)
    seen = set()
    fails = 0
    while len(seen) < 120:
        batch = s.ask(5)
        assert batch, "space not exhausted yet"
        for cfg in batch:
            key = tuple(cfg.values())
            assert key not in seen and space.space.check(cfg) == []
            seen.add(key)
            row = space.row_of_config(cfg)
            value = float(space.time_s[row]) if space.status[row] == "ok" else None
            fails += value is None
            s.tell(cfg, value)
    assert s.best() is not None
    # the model was fitted with failures among the data (imputed, not crashing)
    assert fails >= 0 and s.remaining() == len(space.enumeration) - 120


@pytest.mark.slow
def test_exhausts_small_space_without_repeats(space):
    r = run_replay(space, "forge", 10_000, seed=0, batch=16)
    assert r.evaluations == len(space.enumeration)
    assert len({tuple(c.values()) for c in r.proposals}) == r.evaluations


def test_beats_random_on_structured_space(space):
    budget = 30
    best = np.mean([run_replay(space, "forge", budget, seed=s).best_s for s in range(6)])
    rnd = expected_best_random(space.time_s, 0, budget)          # 1.82 x optimum here
    assert best / space.optimum_s < 1.25
    assert (rnd - best) / (rnd - space.optimum_s) > 0.6           # methodology score


def test_registry(space):
    with pytest.raises(ForgeInputError, match="unknown strategy"):
        get_strategy("nope", space.enumeration)
    r = run_replay(space, "random", 20, seed=0)
    assert r.evaluations == 20 and r.infeasible == 0


def test_optuna_strategies_delegate(space):
    r = run_replay(space, "optuna-random", 15, seed=0)
    assert r.evaluations == 15 and r.infeasible == 0
    assert len({tuple(c.values()) for c in r.proposals}) == 15


def _told(space, seed, **options):
    """A forge strategy that has seen 30 of the synthetic space's points (its own proposals)."""
    s = get_strategy("forge", space.enumeration, seed=seed, **options)
    for _ in range(6):
        for cfg in s.ask(5):
            row = space.row_of_config(cfg)
            s.tell(cfg, float(space.time_s[row]) if space.status[row] == "ok" else None)
    return s


def test_niches_centre_local_moves_on_the_other_side_of_a_switch(space):
    s = _told(space, 3, niches=True)
    assert [s.space.params[j].name for j in s._switches] == ["d"]   # the only two-valued parameter
    rows = np.array(list(s.observed), dtype=np.int64)
    incumbent = min((r for r in rows if s.observed[int(r)] is not None), key=lambda r: s.observed[int(r)])
    s._n_local = 1                                                  # odd: a niche move
    centre, keep = s._local_centre([int(incumbent)], rows)
    j = s._switches[0]
    assert keep == j and s.valid[centre, j] != s.valid[incumbent, j]
    other = [s.observed[int(r)] for r in rows if s.valid[r, j] == s.valid[centre, j] and s.observed[int(r)] is not None]
    assert s.observed[centre] == min(other)
    s._n_local = 2                                                  # even: the incumbent, any move
    assert s._local_centre([int(incumbent)], rows) == (int(incumbent), None)


def test_cap_clips_training_targets_at_the_quantile(space):
    s = _told(space, 4, cap=None)
    _, y_raw = s._training()
    s.options = s.options.model_copy(update={"cap": 0.5})
    _, y = s._training()
    assert y.max() == pytest.approx(np.quantile(y_raw, 0.5)) and y.min() == y_raw.min()


@pytest.mark.parametrize("opts,needle", [
    ({"acquisition": "pi"}, "sampler_options.acquisition: Input should be 'good', 'ei', 'thompson' or 'mixed' (got 'pi')"),
    ({"good_quantile": 1.0}, "sampler_options.good_quantile: Input should be less than 1 (got 1.0)"),
    ({"path_floor": -1}, "sampler_options.path_floor: Input should be greater than 0 (got -1)"),
    ({"path_flor": 0.75}, "sampler_options.path_flor: not an option of forge; did you mean 'path_floor'? allowed: acquisition, "),
])
def test_bad_or_unknown_option_is_rejected_by_name(space, opts, needle):
    """A misspelt option must not run the whole search on the default silently."""
    with pytest.raises(ForgeInputError) as exc:
        get_strategy("forge", space.enumeration, **opts)
    assert needle in str(exc.value)


def test_strategies_without_options_reject_any(space):
    for name in ("random", "optuna-tpe"):
        with pytest.raises(ForgeInputError, match="sampler_options.cap: not an option of .*; allowed: none"):
            get_strategy(name, space.enumeration, cap=0.5)
    get_strategy("optuna-tpe", space.enumeration, storage=None, study_name="s")   # where a study lives is not an option


def test_options_reach_the_strategy(space):
    """An option given by name changes the proposals exactly as the constructor argument does."""
    ei = run_replay(space, "forge", 40, seed=3, acquisition="ei").proposals
    assert ei != run_replay(space, "forge", 40, seed=3).proposals
    assert get_strategy("forge", space.enumeration, acquisition="ei").options.acquisition == "ei"


def test_good_acquisition_takes_the_point_most_likely_in_the_best_quantile(space):
    """With `acquisition="good"` and no local slots, a global pick is the unmeasured point the
    model gives the highest probability of beating the `good_quantile` of the measured log-times."""
    s = _told(space, 5, acquisition="good", local_every=0, rho_min=None, path_floor=None)
    rows_obs, y = s._training()
    threshold = np.quantile(y, s.options.good_quantile)
    state = s.rng.bit_generator.state
    model_seed = int(s.rng.integers(2**31 - 1))                    # the draw ask() makes first
    s.rng.bit_generator.state = state
    model = ExtraTreesRegressor(n_estimators=s.options.n_trees, min_samples_leaf=1, max_features=1.0,
                                random_state=model_seed, n_jobs=1).fit(s.X[rows_obs], y)
    free = np.flatnonzero(~s.proposed)
    per_tree = np.stack([t.predict(s.X[free]) for t in model.estimators_])
    p = norm.cdf((threshold - per_tree.mean(0)) / np.maximum(per_tree.std(0), 1e-12))
    [cfg] = s.ask(1)
    assert p[list(free).index(s.row(cfg))] == pytest.approx(p.max())


def test_path_floor_sends_a_global_slot_to_the_least_sampled_code_path(space):
    """The synthetic space's one switch `d` makes two code paths. Once one of them holds less than
    `path_floor` of the overall sampled share, the next floor slot takes that path's top-scored point;
    while every path holds its share, the floor gives the slot back (None)."""
    s = _told(space, 6, path_floor=0.75)
    starved = int(np.argmin(np.bincount(s._path[s.proposed], minlength=2) / s._path_size))
    # starve that path: forget every measured point on it but one
    on = [r for r in np.flatnonzero(s.proposed) if s._path[r] == starved][1:]
    s.proposed[on] = False
    cand = np.flatnonzero(~s.proposed)
    alive = np.ones(len(cand), dtype=bool)
    score = np.linspace(0.0, 1.0, len(cand))                      # any score; the floor takes its max
    pos = s._floor_choice(cand, alive, score)
    path_rows = np.flatnonzero(s._path[cand] == starved)
    assert pos == path_rows[-1]                                    # the starved path's top score
    s.options = s.options.model_copy(update={"path_floor": 1e-9})   # every path above a tiny floor
    assert s._floor_choice(cand, alive, score) is None


def test_a_small_budget_leaves_the_model_all_but_40_percent_of_it(space):
    """With a budget of 8 the start is 3 points (40 %, at least 3) and the model chooses the other
    5; an n_init the caller set, or a budget no caller stated, keeps the start at n_init."""
    def model_choices(**opts) -> int:
        s = get_strategy("forge", space.enumeration, seed=3, **opts)
        run_replay(space, s, 8)                # run_replay states its budget
        return len(s._pred)

    assert model_choices() == 5
    assert model_choices(n_init=10) == 0
    s = get_strategy("forge", space.enumeration, seed=3)
    assert s.budget is None and s.n_init == 10
    for budget, start in [(5, 3), (8, 3), (12, 4), (16, 6), (25, 10), (200, 10)]:
        s.budget = budget
        assert s.n_init == start, budget


def test_a_start_the_budget_shortened_is_drawn_around_the_centre(space):
    """Below 25 evaluations the start's points are drawn around the middle of every ordered range
    (CMA-ES's first distribution), not spread to its ends; a full start, a start size the caller
    set, and `start="maxmin"` keep the max-min spread, so budgets of 25 and more propose what they
    did before."""
    ordered = [j for j, p in enumerate(space.enumeration.space.params) if p.ordered and len(p.values) > 2]

    def start(budget: int, **opts) -> float:
        """Mean distance of the start's ordered value indices from the middle of their ranges,
        over 20 seeds (normalised: 0 at the middle, 0.5 at either end)."""
        far = []
        for seed in range(20):
            s = get_strategy("forge", space.enumeration, seed=seed, **opts)
            s.budget = budget
            rows = [s.row(c) for c in s.ask(s.n_init)]
            idx = s.valid[rows][:, ordered]
            n = np.array([len(space.enumeration.space.params[j].values) for j in ordered])
            far.append(np.abs(idx / (n - 1) - 0.5).mean())
        return float(np.mean(far))

    assert start(8) < 0.7 * start(8, start="maxmin")
    assert start(12) < 0.7 * start(25)
    assert start(8, n_init=3) == start(8, start="maxmin")
    for seed in (0, 1):
        auto, maxmin = (run_replay(space, get_strategy("forge", space.enumeration, seed=seed, **o), 25, seed)
                        for o in ({}, {"start": "maxmin"}))
        assert auto.proposals == maxmin.proposals
    small = [run_replay(space, get_strategy("forge", space.enumeration, seed=4), 8, 4).proposals for _ in range(2)]
    assert small[0] == small[1]


def test_forge_tune_tells_its_strategy_the_trials_as_its_budget(space):
    from forge.config import TuneSettings
    from forge.tuner import make_strategy

    s = make_strategy(TuneSettings(op="softmax", shape={"rows": 4, "cols": 8}, trials=12), space.enumeration, None)
    assert s.budget == 12 and s.n_init == 4
