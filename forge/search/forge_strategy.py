"""forge's default search strategy: a tree-ensemble surrogate over the whole enumerated valid space.

What forge knows that a generic black-box sampler does not, and how this strategy uses it:
- the complete list of valid points (the enumeration): the acquisition is evaluated on *every*
  valid unmeasured point, so a proposal is never infeasible, never repaired, never repeated;
- the parameter structure: ordered parameters (sizes, powers of two — whose value lists are
  already geometric, so the value *index* is the log-scale position) are encoded by their index
  normalised to [0, 1], unordered ones one-hot; this gives the trees meaningful split points and
  gives "neighbour" a meaning for local moves;
- the executor batch: `ask(n)` returns n points chosen at once, diversified so a batch does not
  spend n evaluations on near-duplicates.

Algorithm
1. Space-filling start: `n_init` points by greedy max-min distance in the encoded space
   (first point uniform at random), over a seeded pool of candidates: the first model then sees
   every parameter near both ends of its range, including the extremes (smallest/largest tiles,
   both settings of a switch) where kernel optima often sit. (A uniform start was tried and
   was worse; see benchmarks/search_design_log.md, first pass.) Where a small budget shortens the
   start (`start`, below), its points are drawn around the centre of the space instead.
2. Then every ask: fit an extremely-randomised-trees ensemble on log(time) of what was measured
   (failures imputed as the worst log-time seen: they cost budget, so the model should steer away
   from their region, but they are not "infinitely slow"), clipped from above at the median of the
   measured log-times (`cap`), predict mean and spread (standard deviation across trees) for all
   valid unmeasured points, and rank them by the probability (normal approximation from mean and
   spread) that their log-time falls below the lower quartile of the measured ones
   (`acquisition="good"`, seventh pass). One slot in every `local_every` is instead given to the
   best-predicted (lowest mean) unmeasured neighbour of the incumbent — a point differing in
   exactly one parameter, any value of it: a surrogate-ranked coordinate move, exploiting the
   typical structure of kernel spaces (a few settings decide the region, then one size at a time
   is polished) when the model is still coarse.
3. A batch takes the top points by that score, damping the score of a chosen point's neighbours
   (`batch_damping`) so one batch covers several promising regions. Points still in flight
   (proposed, not yet told) are damped the same way when the model is fitted — the role a constant
   liar plays for a model that must be refitted to learn of a pending point — so forge tune's
   asynchronous loop, which refills each freed slot with `ask(1)` right after telling the result
   that freed it, spreads its points in flight as one batch would. The model and its damped scores
   are kept until the next tell, and a point reserved in the meantime damps its neighbours in
   them: asks with nothing told between them give the points one ask of their total size would
   (not so before the first model, nor with `pack_every`, nor once a `max_rank` subset runs out,
   where one large ask ranks a fresh subset before using up the last points of the old one).
4. Reliability check (second pass, for noisy and flat spaces): the model's prediction for every
   point it chose is kept; before each batch, the rank correlation (Spearman) between those
   predictions and the measured values of the last `rho_window` chosen points is computed. When it
   is below `rho_min`, the model cannot rank even the points it prefers — on a flat top with
   measurement noise it is fitting noise — so the batch's global (non-local) slots go to the
   valid point farthest from everything already proposed (space filling) instead of to the
   model. The local slots continue. When the model regains skill, its ranking resumes. This
   costs no extra fit.
5. Optionally (`pack_every`, off by default), a grey-wolf pack beside the model: after the
   start, one slot in every `pack_every` goes to Kernel Tuner's adaptive tabu grey-wolf search
   (greywolf_strategy.py), whose pack starts from the best points of the space-filling start and
   shares everything measured with the model (neither proposes what the other has). The model
   ranks what it has learnt; the pack recombines the best points parameter by parameter and keeps
   eight trajectories that each accept a slower step now and then, so it reaches corners a model
   fitted to the points measured so far ranks low. The model's local and global slots alternate
   among its own slots as before.

Hyperparameters (set by reasoning; where a choice was compared on the shipped tuning spaces,
its entry says so and benchmarks/search_design_log.md has the comparison; its tenth pass moves
each one on its own, on all three shipped spaces). Each is a field of `ForgeOptions`,
set by `sampler_options` in a tune config, `--sampler-options` of `forge tune` or `--options` of
`forge replay`; an unknown name or a value out of range is an input error naming it.
- `n_init=10`: enough points for the first trees to split on the strongest few parameters of a
  10–15-parameter space, while leaving 60 %+ of even a 25-evaluation budget to the model. It is
  about half of Kernel Tuner bayes_opt's 20-point LHS, because trees need fewer points than a GP.
  Where the caller says its budget (`forge tune`'s trials, `forge replay`'s budget) and `n_init`
  is not set, the start is at most 40 % of it, the share 10 is of 25, and at least 3 points: a
  budget below 25 would otherwise be mostly or wholly start, and a max-min start reaches for the
  extremes, which on kernel spaces are slow more often than not — on the ten brute-forced spaces
  of benchmarks/search_design_log.md ("Small budgets") 8 evaluations of start only were worse
  than random search. Budgets of 25 and more are unchanged.
- `start="auto"`: max-min where the start has its full `n_init` points, and where the budget
  shortened it (budgets below 25), points drawn around the centre of the space: each ordered
  parameter's value index from a normal distribution at the middle of its range with a sixth of
  the range as its standard deviation (rounded, clipped to the range), each unordered one
  uniformly, and the unproposed valid point nearest that draw in the encoded space. That is the
  distribution Optuna's CMA-ES draws its first generation from (x0 the middle of each range,
  sigma0 = range / 6, the CmaEsSampler docs), which read 0.146 at 8 evaluations where forge's
  max-min start read 0.005 (search_design_log.md, "Small budgets"). The max-min start is there to
  show the first model both ends of every range; a search of 8–20 evaluations has a model for a
  handful of steps at most, so its start points are most of its answer, and the middle of a
  kernel space (mid-sized tiles, mid vector widths) is slow less often than its extremes. The
  price is a space whose optimum sits at the extremes (pnpoly: 0.344 → -0.114 at 8); the
  design log's "Small budgets, a centred start" pass has the ten spaces on two seed sets.
  `start="maxmin"` or `"centre"` fixes the start's kind at every budget.
- `n_trees=24`: spread across trees is the uncertainty estimate; two dozen trees give a usable
  standard deviation, and the fit + prediction over ~18k points stays at ~10-20 ms per step
  (a 200-evaluation run on the 17,956-point gemm space in a few seconds).
- `min_samples_leaf=1`, `max_features=1.0`: the data is exact (medians of many repetitions) and
  small; leaves of one point keep the fit interpolating, and all features are considered because
  in kernel spaces one or two parameters typically dominate.
- `acquisition="good"`, `good_quantile=0.25` (seventh pass): the global slots ask which point is
  most likely to land in the best quarter of what was measured (TPE's and BORE's question), not
  which is most likely to beat the single best point (expected improvement, `acquisition="ei"`,
  the default until the seventh pass). With a confident model, EI's answer is the incumbent's
  region again, which the local slots already polish; the quartile question is close to 1 for
  every region the model is confident is good, so the global slots spread over all of them, as a
  genetic algorithm's rank selection does. A quarter is TPE's usual split of the observations
  into good and bad (it uses 10–25 %). Found on the dev spaces (a small gain on convolution on two
  seed sets, gemm level) and adopted by a rule written down before a third hold-out
  (`spaces/cpu_matmul_bt`) was run, which it passed (benchmarks/search_design_log.md, seventh pass).
- `xi=0.0` (with `acquisition="ei"` only): plain EI; exploration comes from the tree spread, the
  local slots and the damping.
- `local_every=2`: half of the evaluations go to the incumbent's one-parameter neighbourhood,
  the other half to the global ranking: an even split between polishing the best region
  and looking for a better one, with no prior reason to favour either. (A first version used
  one in four and a neighbourhood of +-1 index steps only; coordinate moves to any value
  reached isolated optima more often — that comparison was made on the shipped spaces, so it
  is reported as such in benchmarks/search_design_log.md.)
- `batch_damping=0.5`: a neighbour of an already-chosen batch point, or of a point in flight,
  needs twice the score to be chosen too.
- `pack_every=0` (no pack). `pack_every=2` (an even split between the model and the pack) was
  the sixteenth pass's candidate: on the shipped GPU files, seeds 0–99, it reads convolution 1.384
  / 1.244 at 50 / 100 evaluations (default 1.403 / 1.327), gemm 1.072 / 1.019 (1.113 / 1.020),
  pnpoly 1.004 / 1.001 (1.010 / 1.005); but on the pass's hold-out, a CPU matmul brute-forced
  for it and committed with the decision rule before any strategy ran, it was worse at 50 and 100
  by more than a standard error of the paired difference (1.079 / 1.025 against 1.030 / 1.015),
  so by that rule it is an option and not the default (benchmarks/search_design_log.md, sixteenth
  pass; part of its gain on gemm is the pack's repair order, see greywolf_strategy.py).
- `rho_min=0.2`, `rho_window=16`: under "no skill" the Spearman correlation of 16 pairs has a
  standard deviation of 1/sqrt(15) = 0.26, so 0.2 means "less than one standard deviation of
  evidence that the model ranks better than chance"; the test is one-sided and loose on purpose,
  because wrongly exploring costs only part of one batch while trusting a model that fits noise
  costs the rest of the budget. 16 points are 8 global + 8 local choices at `local_every=2`: the
  fewest for which a rank correlation means something, few enough to react within a 50-evaluation
  budget. `rho_min=None` switches the check off (the first-pass behaviour). These two values were
  set once (0.4 and 0.6 were measured in the seventh pass, not kept); whether to switch the check
  on at all was decided by comparing on the dev spaces (the shipped GPU files and the CPU matmul),
  while the CPU conv2d space was held out (benchmarks/search_design_log.md, second pass).
- Options kept for comparison, off by default (all compared on the dev spaces, see
  benchmarks/search_design_log.md): `acquisition="ei"` (expected improvement over the best
  log-time, the default of the first six passes); `path_floor=0.75` (every second global slot goes
  to the top-scored point of the code path — combination of switch values — sampled least relative
  to its size, when that path holds less than 3/4 of the overall sampled share: a few early points
  of a path that read badly make the model write the whole path off; on convolution it lifts 1.32
  to 1.21 at 100, but gemm misses its 1.03, and `good_quantile=0.1`, which buys gemm back, puts
  the CPU blocked matmul below random search); `acquisition="thompson"` (each global slot takes
  the argmin of one randomly drawn tree) or `"mixed"` (half Thompson, half EI); `n_elite=3` (local
  moves rotate around the best three points, the incumbent half of the time); `min_leaf=2`
  (smoother trees); `explore="uniform"` (the reliability fallback draws uniformly instead of
  max-min); `niches=True` (every second local move is centred on the best point on the other side
  of one switch — an unordered or two-valued parameter — and stays there: switches select code
  paths, and the best path need not be the one that is better on average).
- `cap=0.5` (third pass): log-times above the median of the measured ones are clipped to the
  median before the fit. The model is there to rank the good points; how much slower a bad point
  is says nothing about where the optimum is, yet in squared-error splits a 20x-slower point
  outweighs every difference among the top ones. TPE's split of the observations at a quantile
  into "good" and "bad" is the same idea. Found on the dev spaces and adopted by a rule written
  down before a hold-out was run, which it passed; a second fresh hold-out then favoured
  `cap=None` (the raw log-times of the second pass), so its effect is not demonstrated
  (benchmarks/search_design_log.md, third pass).
- `max_rank=50000`: ranking is exact up to this many unmeasured points; beyond it a seeded
  random subset plus all incumbent neighbours is ranked, keeping one step in milliseconds.
Deterministic for a fixed seed: every random draw comes from the seeded generator.
"""
from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from forge.search.greywolf_strategy import GreyWolfStrategy
from forge.search.strategy import Strategy


class ForgeOptions(BaseModel):
    """ForgeStrategy's options (`sampler_options` in a tune config, `--options` of `forge replay`);
    the module docstring says why each default is what it is."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_init: int = Field(10, ge=1, description="space-filling points before the first model (unset: at most "
                                              "40 % of a stated budget, at least 3)")
    n_trees: int = Field(24, ge=2, description="trees in the ensemble (their spread is the uncertainty)")
    local_every: int = Field(2, ge=0, description="one slot in this many is a local move; 0: none")
    xi: float = Field(0.0, ge=0, description="EI's exploration margin (acquisition='ei' only)")
    batch_damping: float = Field(0.5, gt=0, le=1, description="score factor for neighbours of a chosen point")
    max_rank: int = Field(50000, ge=1, description="unmeasured points ranked exactly per step")
    acquisition: Literal["good", "ei", "thompson", "mixed"] = "good"
    n_elite: int = Field(1, ge=1, description="best points local moves rotate around")
    rho_min: float | None = Field(0.2, ge=-1, le=1, description="model-skill floor (Spearman); None: off")
    rho_window: int = Field(16, ge=3, description="recent model choices the skill check uses")
    min_leaf: int = Field(1, ge=1, description="smallest tree leaf")
    explore: Literal["maxmin", "uniform"] = "maxmin"
    niches: bool = False
    cap: float | None = Field(0.5, gt=0, le=1, description="clip log-times at this quantile; None: off")
    good_quantile: float = Field(0.25, gt=0, lt=1, description="'good' acquisition: the best share asked for")
    path_floor: float | None = Field(None, gt=0, description="code-path sampling floor; None: off")
    pack_every: int = Field(0, ge=0, description="one slot in this many after the start goes to the "
                                                  "grey-wolf pack; 0: none")
    start: Literal["auto", "maxmin", "centre"] = Field(
        "auto", description="the start's points: max-min spread, or drawn around the centre; auto: "
                            "centre where the budget shortened the start")


def start_size(options: ForgeOptions, budget: int | None) -> int:
    """Points of the space-filling start: `n_init`, but where the budget is known and `n_init` was
    not set, at most 40 % of it and at least 3 (see `n_init` in the module docstring). The budget
    changes nothing else, so runs whose start sizes agree propose the same points."""
    if budget is None or "n_init" in options.model_fields_set:
        return options.n_init
    return min(options.n_init, max(3, int(0.4 * budget)))


def start_kind(options: ForgeOptions, budget: int | None) -> str:
    """How the start's points are drawn: `options.start`, and for "auto" around the centre exactly
    where the budget shortened the start below `n_init` (see `start` in the module docstring)."""
    if options.start != "auto":
        return options.start
    return "centre" if start_size(options, budget) < options.n_init else "maxmin"


class ForgeStrategy(Strategy):
    name = "forge"
    Options = ForgeOptions
    options: ForgeOptions

    def __init__(self, enumeration, seed: int = 0, **options: Any):
        super().__init__(enumeration, seed, **options)
        self._switches = switch_params(self.space)
        # code path of every valid row: its combination of switch values (one path when none)
        sw = self.valid[:, self._switches] if self._switches else np.zeros((len(self.valid), 1), np.int64)
        self._path = np.unique(sw, axis=0, return_inverse=True)[1].ravel()
        self._path_size = np.bincount(self._path)
        self._n_global = 0
        self._pred: dict[int, float] = {}     # row -> predicted log-time when the model chose it
        self._n_local = 0
        self.X = self._encode(self.valid)
        self._asked = 0
        self._slot = 0                        # slots after the start (model or pack)
        self._tells = 0                       # results told so far: the fitted model's version
        self._fit: tuple[int, tuple[np.ndarray, ...]] | None = None
        self._pack = None
        if self.options.pack_every:
            self._pack = GreyWolfStrategy(enumeration, seed, start="measured")
            self._pack.rng = np.random.default_rng([seed, 1])   # its own stream of the same seed
            self._pack.proposed, self._pack.observed = self.proposed, self.observed

    # -- encoding ------------------------------------------------------------------------------
    def _encode(self, idx: np.ndarray) -> np.ndarray:
        cols = []
        for j, p in enumerate(self.space.params):
            n = len(p.values)
            if n == 1:
                continue
            if p.ordered:
                cols.append(idx[:, j:j + 1] / (n - 1))
            else:
                cols.append((idx[:, j:j + 1] == np.arange(n)).astype(float))
        return np.hstack(cols).astype(np.float32) if cols else np.zeros((len(idx), 1), np.float32)

    # -- the contract --------------------------------------------------------------------------
    def ask(self, n: int) -> list[dict[str, Any]]:
        rows: list[int] = []
        for _ in range(n):
            free = ~self.proposed
            if not free.any():
                break
            if self._n_measured() < self.n_init:
                row = self._space_filling()
            else:
                row = None
            if row is None:
                break
            self._take(row, rows)
        rest = n - len(rows)
        if rest > 0 and (~self.proposed).any():
            to_pack = 0
            for _ in range(rest):
                self._slot += 1
                to_pack += bool(self._pack is not None and self._slot % self.options.pack_every == 0)
            if rest - to_pack:
                rows += self._model_batch(rest - to_pack)
            if to_pack:
                packed = [self.row(c) for c in self._pack.ask(to_pack)]
                for row in packed:
                    self._damp_in_flight(row)
                rows += packed
            while len(rows) < n and (~self.proposed).any():   # a ranked subset (max_rank) ran out
                more = self._model_batch(n - len(rows))
                if not more:
                    break
                rows += more
        return [self.config(r) for r in rows]

    def reserve(self, config: dict[str, Any]) -> None:
        row = self.row(config)
        fresh = not self.proposed[row]
        super().reserve(config)
        if fresh:
            self._damp_in_flight(row)

    def _damp_in_flight(self, row: int) -> None:
        """A point put in flight after the model was fitted (reserved, or the pack's) damps its
        neighbours in the kept scores, as one in flight at the fit does."""
        if self._fit is not None and self._fit[0] == self._tells:
            _, _, cand, _, _, acq = self._fit[1]
            self._damp(row, cand, acq)

    def tell(self, config: dict[str, Any], value: float | None) -> None:
        self._tells += 1
        if self._pack is not None:
            self._pack.tell(config, value)     # shares proposed/observed: records it for both
        else:
            super().tell(config, value)

    def _n_measured(self) -> int:
        return int(np.count_nonzero(self.proposed))

    def _take(self, row: int, rows: list[int]) -> None:
        self.proposed[row] = True
        rows.append(row)
        self._asked += 1

    # -- phase 1: space filling ------------------------------------------------------------------
    @property
    def n_init(self) -> int:
        """Points of the space-filling start (`start_size`)."""
        return start_size(self.options, self.budget)

    def _space_filling(self) -> int | None:
        if self._n_measured() >= self.n_init:
            return None
        free = np.flatnonzero(~self.proposed)
        if start_kind(self.options, self.budget) == "centre":
            return self._near_centre(free)
        if not self.proposed.any():
            return int(free[self.rng.integers(len(free))])
        return int(free[self._farthest(free, 4096)])

    def _near_centre(self, free: np.ndarray) -> int:
        """The free row nearest (in the encoded space, ties drawn) a point drawn around the centre:
        an ordered parameter's index ~ N(middle, range / 6), rounded and clipped; an unordered
        parameter's value uniform (one-hot, as `_encode` writes it). The draw is encoded here in
        float64 rather than by `_encode` (float32), whose rounding ties more candidates and so
        changes which are drawn: the runs in benchmarks/search_design_log.md are of this one."""
        target = []
        for p in self.space.params:
            n = len(p.values)
            if n == 1:
                continue
            if p.ordered:
                k = np.clip(np.rint(self.rng.normal((n - 1) / 2, (n - 1) / 6)), 0, n - 1)
                target.append(np.array([k / (n - 1)]))
            else:
                target.append((np.arange(n) == self.rng.integers(n)).astype(float))
        if not target:
            return int(free[self.rng.integers(len(free))])
        d = ((self.X[free] - np.concatenate(target)) ** 2).sum(1)
        nearest = np.flatnonzero(d == d.min())
        return int(free[nearest[self.rng.integers(len(nearest))]])

    def _farthest(self, rows: np.ndarray, pool_size: int) -> int:
        """Index (into `rows`) of the row farthest, in the encoded space, from every proposed point,
        searched over a seeded pool of at most `pool_size` of them."""
        n = len(rows)
        pool = np.arange(n) if n <= pool_size else self.rng.choice(n, pool_size, replace=False)
        taken = np.flatnonzero(self.proposed)
        d = np.min(((self.X[rows[pool], None, :] - self.X[None, taken, :]) ** 2).sum(-1), axis=1)
        return int(pool[int(np.argmax(d))])

    # -- phase 2: surrogate ------------------------------------------------------------------------
    def _training(self) -> tuple[np.ndarray, np.ndarray]:
        rows = np.array([r for r in self.observed], dtype=np.int64)
        vals = [self.observed[int(r)] for r in rows]
        ok = np.array([v is not None and np.isfinite(v) and v > 0 for v in vals])
        y = np.zeros(len(rows))
        if ok.any():
            y[ok] = np.log([vals[i] for i in np.flatnonzero(ok)])
            y[~ok] = y[ok].max()
            if self.options.cap is not None:
                y = np.minimum(y, np.quantile(y, self.options.cap))
        return rows, y

    def _model_batch(self, n: int) -> list[int]:
        fit = self._fitted()
        if fit is not None and np.count_nonzero(~self.proposed[fit[2]]) < min(n, self.remaining()):
            fit = self._fitted(again=True)   # a ranked subset (max_rank) spent: rank a fresh one
        if fit is None:
            free = np.flatnonzero(~self.proposed)
            pick = self.rng.choice(free, min(n, len(free)), replace=False)
            for r in pick:
                self.proposed[int(r)] = True
            return [int(r) for r in pick]
        rows_obs, y, cand, mu, per_tree, acq = fit
        alive = ~self.proposed[cand]
        elite = self._elite(rows_obs, y)
        explore = self._unreliable()
        out: list[int] = []
        for _ in range(min(n, int(np.count_nonzero(alive)))):
            self._asked += 1
            choice = None
            if self.options.local_every and self._asked % self.options.local_every == 0:
                centre, keep = self._local_centre(elite, rows_obs)
                self._n_local += 1
                nb = np.intersect1d(self.neighbours(centre), cand[alive])
                if keep is not None:
                    nb = nb[self.valid[nb, keep] == self.valid[centre, keep]]
                if len(nb):
                    pos = np.searchsorted(cand, nb)
                    choice = int(pos[np.argmin(mu[pos])])
            if choice is None and explore:
                choice = self._far_point(cand, alive)
            if choice is None and (self.options.acquisition == "thompson" or
                                   (self.options.acquisition == "mixed" and self._asked % 4 != 1)):
                t = per_tree[int(self.rng.integers(len(per_tree)))]
                score = np.where(alive, t, np.inf)
                top = np.flatnonzero(score == score.min())
                choice = int(top[self.rng.integers(len(top))])
            if choice is None and self.options.path_floor is not None and len(self._path_size) > 1:
                self._n_global += 1
                if self._n_global % 2 == 0:
                    choice = self._floor_choice(cand, alive, acq)
            if choice is None:
                score = np.where(alive, acq, -np.inf)
                top = np.flatnonzero(score == score.max())
                choice = int(top[self.rng.integers(len(top))]) if len(top) > 1 else int(top[0])
            alive[choice] = False
            row = int(cand[choice])
            self._pred[row] = float(mu[choice])
            self.proposed[row] = True
            out.append(row)
            self._damp(row, cand, acq)
        return out

    def _fitted(self, again: bool = False) -> tuple[np.ndarray, ...] | None:
        """The surrogate's view of the unmeasured points — (observed rows, their training values,
        candidate rows, predicted mean, per-tree predictions, acquisition) — or None while there is
        too little to fit. Fitted once per set of observations (unless `again`): an ask before
        anything new was told (a slot freed while others still run) ranks with the same model and
        the same damped scores, so asking twice answers as one batch would.

        Points in flight (proposed, not yet told) count as chosen earlier in the batch: their
        neighbours' scores are damped when the model is fitted, as a batch's own choices damp
        theirs — the role a constant liar plays for a model that must be refitted to learn of a
        pending point."""
        if self._fit is not None and self._fit[0] == self._tells and not again:
            return self._fit[1]
        rows_obs, y = self._training()
        if len(rows_obs) < 2 or not np.isfinite(y).all() or np.ptp(y) == 0:
            return None
        # Imported here, not with the module: scikit-learn (and the scipy.stats it loads) take
        # seconds to import, which every `forge tune` would pay before checking its first flag.
        from scipy.stats import norm
        from sklearn.ensemble import ExtraTreesRegressor

        model = ExtraTreesRegressor(n_estimators=self.options.n_trees, min_samples_leaf=self.options.min_leaf,
                                    max_features=1.0, random_state=int(self.rng.integers(2**31 - 1)), n_jobs=1)
        model.fit(self.X[rows_obs], y)
        best_row = int(rows_obs[np.argmin(y)])
        free = np.flatnonzero(~self.proposed)
        cand = free
        if len(cand) > self.options.max_rank:
            cand = np.union1d(self.rng.choice(free, self.options.max_rank, replace=False),
                              np.intersect1d(self.neighbours(best_row), free))
        Xc = np.ascontiguousarray(self.X[cand])
        # tree_.predict skips sklearn's per-call input validation (same numbers, ~2x faster here)
        per_tree = np.stack([t.tree_.predict(Xc).reshape(len(Xc), -1)[:, 0] for t in model.estimators_])
        mu, sd = per_tree.mean(0), per_tree.std(0)
        if self.options.acquisition == "good":
            # probability of landing in the best `good_quantile` of what was measured (TPE's and
            # BORE's question) instead of the expected gain over the single best point
            acq = norm.cdf((np.quantile(y, self.options.good_quantile) - mu) / np.maximum(sd, 1e-12))
        else:
            acq = _expected_improvement(mu, sd, y.min() - self.options.xi)
        for row in self.pending():
            self._damp(row, cand, acq)
        fit = (rows_obs, y, cand, mu, per_tree, acq)
        self._fit = (self._tells, fit)
        return fit

    def _damp(self, row: int, cand: np.ndarray, acq: np.ndarray) -> None:
        """Damp the score of `row`'s one-parameter neighbours among the candidates (`batch_damping`);
        the damped scores are kept with the fit, so they carry over to the next ask before a tell."""
        near = np.count_nonzero(self.valid[cand] != self.valid[row], axis=1) == 1
        acq[near] *= self.options.batch_damping

    def _floor_choice(self, cand: np.ndarray, alive: np.ndarray, score: np.ndarray) -> int | None:
        """Position (in cand) of the top-scored alive point of the code path sampled least relative
        to its size, when that path holds less than `path_floor` of the overall sampled share; else
        None. A few early points of a path that read badly make the model write the whole path off,
        and a path's best points are not predicted by the average of a few others."""
        share = np.bincount(self._path[self.proposed], minlength=len(self._path_size)) / self._path_size
        on_path = self._path[cand]
        open_paths = np.unique(on_path[alive])
        p = open_paths[np.argmin(share[open_paths])]
        if share[p] >= self.options.path_floor * self.proposed.mean():
            return None
        s = np.where(alive & (on_path == p), score, -np.inf)
        top = np.flatnonzero(s == s.max())
        return int(top[self.rng.integers(len(top))])

    def _elite(self, rows_obs: np.ndarray, y: np.ndarray) -> list[int]:
        """Centres for local moves: the best `n_elite` observed points."""
        order = np.argsort(y, kind="stable")[: max(1, self.options.n_elite)]
        return [int(rows_obs[i]) for i in order]

    def _local_centre(self, elite: list[int], rows_obs: np.ndarray) -> tuple[int, int | None]:
        """Centre of the next local move, and the switch it must keep (None: any move).

        With `niches`, every second local move is centred on the best point found on the other
        side of one switch (rotating over the switches), and stays on that side: a switch selects
        a different code path, and the best path is not always the one that is better on average,
        which is what both the surrogate and the incumbent's neighbourhood follow."""
        k = self._n_local
        if not self.options.niches or k % 2 == 0 or not self._switches:
            return elite[_ROTATION[k % len(_ROTATION)] % len(elite)], None
        inc = elite[0]
        j = self._switches[(k // 2) % len(self._switches)]
        ok = np.array([self.observed.get(int(r)) is not None for r in rows_obs])
        other = ok & (self.valid[rows_obs, j] != self.valid[inc, j])
        if not other.any():
            return inc, None
        vals = np.array([self.observed[int(r)] if o else np.inf for r, o in zip(rows_obs, other)])
        return int(rows_obs[int(np.argmin(vals))]), j

    def _unreliable(self) -> bool:
        """Prequential check: rank correlation between what the model predicted for its last
        `rho_window` choices and what they measured. Below `rho_min` the ranking is no better than
        chance among the points it prefers, so global slots go to coverage instead."""
        if self.options.rho_min is None:
            return False
        pts = [(self._pred[r], v) for r, v in self.observed.items() if r in self._pred and v is not None]
        pts = pts[-self.options.rho_window:]
        if len(pts) < self.options.rho_window:
            return False
        p, v = np.array(pts).T
        if np.ptp(p) == 0 or np.ptp(v) == 0:
            return True
        rho = np.corrcoef(np.argsort(np.argsort(p)), np.argsort(np.argsort(v)))[0, 1]
        return bool(rho < self.options.rho_min)

    def _far_point(self, cand: np.ndarray, alive: np.ndarray) -> int | None:
        """Position (in cand) of the alive candidate farthest from every proposed point, over a
        seeded pool of 2048."""
        pos = np.flatnonzero(alive)
        if not len(pos):
            return None
        if self.options.explore == "uniform":
            return int(pos[self.rng.integers(len(pos))])
        return int(pos[self._farthest(cand[pos], 2048)])


def switch_params(space) -> list[int]:
    """Indices of the parameters that select a code path: unordered ones, or exactly two values."""
    return [j for j, p in enumerate(space.params) if len(p.values) > 1 and (not p.ordered or len(p.values) == 2)]


_ROTATION = (0, 1, 0, 2)   # local-move centres: incumbent half the time, 2nd and 3rd best a quarter each


def _expected_improvement(mu: np.ndarray, sd: np.ndarray, best: float) -> np.ndarray:
    """EI for minimisation; where the spread is zero, EI is the plain improvement."""
    from scipy.stats import norm

    sd = np.maximum(sd, 1e-12)
    z = (best - mu) / sd
    return (best - mu) * norm.cdf(z) + sd * norm.pdf(z)
