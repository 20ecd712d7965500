"""Robustness of agent rankings across generative models (paper 000 Sec. 6, Figs. 10, 11, 16, 17).

The study runs the same agents on several generative models (families such as
"relu-w50", "tanh-w50", "relu-w10", named by a string column `model`) and asks
whether the agents' scores under one model predict their scores under another.

Pipeline, all pure (randomness from an explicit seed or numpy Generator):

1. `agent_scores(results, metric)` -> [agent x model] mean scores.
2. `model_correlations(scores, method)` -> [model x model] correlations of the
   agents' score vectors, Pearson on log scores or Spearman on ranks (Figs. 10, 11).
3. `bootstrap_model_correlations(results, metric, method, ...)` -> the same with
   percentile-bootstrap intervals over seeds, and the mean off-diagonal
   correlation with its interval.
4. `regret_kl_correlation_by_dimension(testbed, bandit, ...)` -> per bandit input
   dimension, the correlation across agents of final regret with d_KL^10 and
   d_KL^1 (Figs. 16, 17).
5. `heatmap(matrix, title, path)` -> one annotated PNG heat map.

Metric names are those of decision_bench.analysis.join.METRICS ("dkl_1",
"dkl_10", "dkl_10_kappa2") plus "regret"; the spellings "kl1", "kl10" and
"kl10_dyadic" are accepted as aliases of the first three.

How a score is averaged (the same for every metric): a *cell* is one (agent,
model, setting, seed), with value the mean of its rows (kl) or its run's final
regret. The score of (agent, model) is the mean over its settings of the
per-setting mean over seeds. On a balanced grid (every setting has the same
seeds) this equals the plain mean of all its rows; on an unbalanced one it
weights settings equally, so a setting that happened to run more seeds does not
dominate. Settings are the columns prior, input_dim, num_train, temperature
(testbed) or env, input_dim, num_actions, temperature (bandit) that the table
has; without any, all rows of a model are one setting.
"""

from __future__ import annotations

import dataclasses
import numbers
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from decision_bench._src.files import atomic_write
from decision_bench.analysis.correlation import (
    MIN_POINTS,
    pearson_rows,
    check_num_resamples,
    correlate,
    percentile_interval,
    positive_points,
)
from decision_bench.analysis.inputs import (
    BANDIT_REQUIRED,
    BANDIT_SETTING_COLUMNS,
    TESTBED_REQUIRED,
    TESTBED_SETTING_COLUMNS,
    failed_rows,
)
from decision_bench.analysis.join import (
    METRICS,
    finite_kl_rows,
    agent_level_points,
    drop_nonfinite,
    drop_nonfinite_kl,
    join_regret,
    metric_rows,
    present,
    run_final_regret,
)

__all__ = [
    "BY_DIMENSION_COLUMNS",
    "CORRELATION_METHODS",
    "METRIC_ALIASES",
    "ModelCorrelations",
    "SCORE_METRICS",
    "agent_scores",
    "bootstrap_model_correlations",
    "heatmap",
    "model_correlations",
    "regret_kl_correlation_by_dimension",
]

SCORE_METRICS = (*METRICS, "regret")
METRIC_ALIASES = {"kl1": "dkl_1", "kl10": "dkl_10", "kl10_dyadic": "dkl_10_kappa2"}
CORRELATION_METHODS = ("pearson_log", "spearman")
# prior first: a testbed table may hold several prior families under one model name.
KL_SETTING_COLUMNS = ("prior", *TESTBED_SETTING_COLUMNS)
BY_DIMENSION_COLUMNS = (
    "input_dim", "metric", "pearson_log", "pearson_ci_low", "pearson_ci_high",
    "spearman", "spearman_ci_low", "spearman_ci_high", "n", "points", "ci_level",
)  # fmt: skip


def _canonical_metric(metric: str) -> str:
    name = METRIC_ALIASES.get(metric, metric)
    if name not in SCORE_METRICS:
        accepted = sorted([*SCORE_METRICS, *METRIC_ALIASES])
        raise ValueError(f"unknown metric {metric!r}; expected one of {accepted}")
    return name


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{what} must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} is missing column {missing[0]!r} (needs {list(columns)})")


def _check_level(level: float) -> None:
    if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0 < level < 1:
        raise ValueError(f"level must be a number strictly between 0 and 1, got {level!r}")


def _check_num_resamples(num_resamples: int, level: float) -> None:
    """Enough resamples for a `level` percentile interval (correlation.min_resamples:
    10 beyond each bound, 200 at level 0.90). `level` is checked first."""
    _check_level(level)
    check_num_resamples(num_resamples, (100.0 * (1 - level) / 2, 100.0 * (1 + level) / 2))


# ---------------------------------------------------------------------------
# Cells: one value per (agent, model, setting, seed)


def _kl_cells(results: pd.DataFrame, metric: str) -> pd.DataFrame:
    _require(results, (*TESTBED_REQUIRED, "model"), f"results for metric {metric!r}")
    rows = finite_kl_rows(metric_rows(results, metric), metric)
    if rows.empty:
        tau, kappa = METRICS[metric]
        raise ValueError(f"results have no finite rows for {metric} (tau == {tau}, kappa {kappa!r})")
    settings = present(rows, KL_SETTING_COLUMNS)
    return _cells(rows, settings, "kl")


def _regret_cells(results: pd.DataFrame) -> pd.DataFrame:
    _require(results, (*BANDIT_REQUIRED, "model"), "results for metric 'regret'")
    failed = failed_rows(results)
    if failed.any():
        warnings.warn(
            f"regret: dropping {int(failed.sum())} rows of failed bandit runs (non-empty error)",
            RuntimeWarning,
            stacklevel=4,
        )
        results = results.loc[~failed]
    # run_final_regret's run keys do not include `model`; one call per model keeps
    # runs of different models with equal (agent, seed, setting) apart.
    runs = [
        run_final_regret(rows).assign(model=model)
        for model, rows in results.groupby(results["model"].astype(str), sort=False)
    ]
    if not runs:
        raise ValueError("results have no successful bandit runs for metric 'regret'")
    runs = pd.concat(runs, ignore_index=True)
    runs = drop_nonfinite(
        runs, "final_regret",
        lambda bad: f"regret: dropping {len(bad)} bandit runs with non-finite final regret", stacklevel=4,
    )
    return _cells(runs, present(runs, BANDIT_SETTING_COLUMNS), "final_regret")


def _cells(rows: pd.DataFrame, settings: list[str], value: str) -> pd.DataFrame:
    """Columns agent, model, setting (an integer id), seed, value; one row per cell."""
    if rows["seed"].isna().any():
        raise ValueError(f"{int(rows['seed'].isna().sum())} rows have no seed; every row needs one")
    rows = rows.assign(agent=rows["agent"].astype(str), model=rows["model"].astype(str))
    if settings:
        setting = rows.groupby(settings, dropna=False, sort=True).ngroup().to_numpy()
    else:
        setting = np.zeros(len(rows), dtype=int)
    rows = rows.assign(_setting=setting, _value=pd.to_numeric(rows[value], errors="coerce"))
    cells = rows.groupby(["agent", "model", "_setting", "seed"], sort=False, dropna=False)["_value"].mean()
    cells = cells.reset_index().rename(columns={"_setting": "setting", "_value": "value"})
    _warn_unbalanced(cells, settings)
    return cells


def _warn_unbalanced(cells: pd.DataFrame, settings: list[str]) -> None:
    # Agents scored on different settings (or seeds) of one model are compared on
    # different problems; the correlations across models would partly reflect that.
    per_model = cells.groupby(["model", "agent"])["setting"].agg(lambda s: frozenset(s.tolist()))
    uneven = [m for m, sets in per_model.groupby(level="model") if sets.nunique() > 1]
    if uneven:
        warnings.warn(
            f"models {uneven}: agents were scored on different settings ({settings}); "
            "their scores are not comparable within those models",
            RuntimeWarning,
            stacklevel=6,
        )
    seed_sets = cells.groupby(["agent", "model", "setting"])["seed"].agg(lambda s: frozenset(s.tolist()))
    if seed_sets.nunique() > 1:
        warnings.warn(
            f"(agent, model, setting) cells have different seed sets ({seed_sets.nunique()} distinct); "
            "seeds are not fully paired across agents and models",
            RuntimeWarning,
            stacklevel=6,
        )


@dataclasses.dataclass(frozen=True, eq=False)
class _Grid:
    values: np.ndarray  # [A, M, K, S] cell values, 0 where absent
    present: np.ndarray  # [A, M, K, S] 1.0 where the cell exists
    agents: list[str]
    models: list[str]
    seeds: list


def _grid(results: pd.DataFrame, metric: str) -> _Grid:
    cells = _regret_cells(results) if metric == "regret" else _kl_cells(results, metric)
    agents = sorted(cells["agent"].unique())
    # Models keep their order of first appearance so that a sweep written in a
    # meaningful order (widths 5, 10, 20, ...) keeps it on the heat map's axes.
    models = list(pd.unique(cells["model"]))
    seed_codes, seeds = pd.factorize(cells["seed"], sort=True)
    settings = int(cells["setting"].max()) + 1
    shape = (len(agents), len(models), settings, len(seeds))
    values = np.zeros(shape)
    mask = np.zeros(shape)
    index = (
        pd.Index(agents).get_indexer(cells["agent"]),
        pd.Index(models).get_indexer(cells["model"]),
        cells["setting"].to_numpy(int),
        seed_codes,
    )
    values[index] = cells["value"].to_numpy(float)
    mask[index] = 1.0
    if len(agents) < 2 or len(models) < 2:
        raise ValueError(
            f"{metric}: need at least 2 agents and 2 models, got {len(agents)} agents {agents} "
            f"and {len(models)} models {models}"
        )
    return _Grid(values, mask, agents, models, list(seeds))


def _scores(grid: _Grid, counts: np.ndarray) -> np.ndarray:
    """Scores [B, A, M] for B seed multisets, `counts` [B, S] (times each seed is drawn).

    counts of all ones give the point estimate, so the point and the bootstrap
    replicates come from one formula. A setting none of whose drawn seeds exists
    for the cell is left out of that cell's mean over settings; a cell with none
    in any setting is NaN.
    """
    num = np.einsum("amks,bs->bamk", grid.values, counts)
    den = np.einsum("amks,bs->bamk", grid.present, counts)
    with np.errstate(invalid="ignore", divide="ignore"):
        seed_mean = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
        # nanmean warns on all-NaN slices; those are exactly the NaN cells wanted.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(seed_mean, axis=-1)


def agent_scores(results: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean score per agent and generative model.

    Args:
      results: a tidy results frame with a string column `model`.
        For metric "dkl_1", "dkl_10", "dkl_10_kappa2" (aliases "kl1", "kl10",
        "kl10_dyadic"): a testbed frame with columns agent, model, seed, tau,
        kappa (NaN for iid test inputs), kl; optional setting columns prior,
        input_dim, num_train, temperature. Rows with non-finite kl are dropped
        with a warning.
        For metric "regret": a bandit frame with columns agent, model, seed,
        step, cumulative_regret; optional final_regret, error (failed runs are
        dropped with a warning), env, input_dim, num_actions, temperature. A run
        (agent, model, setting, seed) scores its final cumulative regret.
      metric: see above.

    Returns:
      DataFrame [agent x model] (index named "agent", sorted; columns named
      "model", in order of first appearance): the mean over settings of the
      per-setting mean over seeds (module docstring). NaN where an agent has no
      rows for a model (with a warning).

    Raises:
      ValueError (one line) for an unknown metric, a missing column, no rows for
      the metric, or fewer than 2 agents or 2 models.
    """
    grid = _grid(results, _canonical_metric(metric))
    scores = _scores(grid, np.ones((1, len(grid.seeds))))[0]
    frame = pd.DataFrame(
        scores, index=pd.Index(grid.agents, name="agent"), columns=pd.Index(grid.models, name="model")
    )
    missing = [(a, m) for a, m in zip(*np.nonzero(~np.isfinite(scores)))]
    if missing:
        warnings.warn(
            f"{metric}: no score for (agent, model) {[(grid.agents[a], grid.models[m]) for a, m in missing][:10]}",
            RuntimeWarning,
            stacklevel=2,
        )
    return frame


# ---------------------------------------------------------------------------
# Correlations between models


def _correlation_stack(scores: np.ndarray, method: str) -> np.ndarray:
    """[B, A, M] scores -> [B, M, M] correlations across agents; NaN where undefined.

    A model column that is constant, or (pearson_log) has a score <= 0, or has a
    NaN score, gives NaN in its row and column, diagonal included.
    """
    if method == "pearson_log":
        with np.errstate(invalid="ignore", divide="ignore"):
            x = np.log(np.where(scores > 0, scores, np.nan))
    else:
        x = stats.rankdata(scores, axis=1)  # a slice with a NaN ranks to all NaN
    columns = np.moveaxis(x, 1, 2)  # [B, M, A]
    r = pearson_rows(columns[:, :, None, :], columns[:, None, :, :])
    diagonal = np.isfinite(np.diagonal(r, axis1=1, axis2=2))  # [B, M]
    m = r.shape[-1]
    r[:, np.arange(m), np.arange(m)] = np.where(diagonal, 1.0, np.nan)
    return r


def _check_method(method: str) -> None:
    if method not in CORRELATION_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {list(CORRELATION_METHODS)}")


def _complete_rows(scores: pd.DataFrame) -> pd.DataFrame:
    finite = np.isfinite(scores.to_numpy(dtype=float)).all(axis=1)
    if not finite.all():
        warnings.warn(
            f"leaving out agents without a score for every model: {list(scores.index[~finite])}",
            RuntimeWarning,
            stacklevel=3,
        )
    return scores.loc[finite]


def model_correlations(scores: pd.DataFrame, method: str) -> pd.DataFrame:
    """Correlation between models of the agents' score vectors (paper 000 Figs. 10, 11).

    Args:
      scores: DataFrame [agent x model], e.g. from agent_scores. Agents with a
        missing (NaN) score for some model are left out, with a warning.
      method: "pearson_log": Pearson's r of the log scores (the scale on which
        d_KL and regret of different agents differ by factors, as in
        analysis.correlation); "spearman": Spearman's rho (Pearson's r of the
        average ranks, as scipy.stats.spearmanr).

    Returns:
      DataFrame [model x model], symmetric, with unit diagonal; index and columns
      are scores' columns. An entry is NaN where a model's scores are all equal
      (no correlation is defined), diagonal included. With 2 agents every
      defined entry is +-1.

    Raises:
      ValueError for an unknown method, fewer than 2 models or 2 complete agents,
      an infinite score, or (pearson_log) a score <= 0. Non-positive scores are
      refused rather than clipped at a floor: log(floor) would be an arbitrary,
      extreme value (log 1e-12 = -28 against typical log d_KL of -5 to 0) that
      would set the Pearson coefficient by itself. A mean d_KL <= 0 means the
      estimate is at its noise level (the Monte Carlo estimate can dip below 0);
      use "spearman", which needs no logarithm, for such data.
    """
    _check_method(method)
    if not isinstance(scores, pd.DataFrame):
        raise ValueError(f"scores must be a pandas DataFrame [agent x model], got {type(scores).__name__}")
    if scores.shape[1] < 2:
        raise ValueError(f"need at least 2 models (columns) to correlate, got {scores.shape[1]}")
    values = scores.to_numpy(dtype=float)
    if np.isinf(values).any():
        raise ValueError("scores must be finite (or NaN for a missing score)")
    scores = _complete_rows(scores)
    if len(scores) < 2:
        raise ValueError(f"need at least 2 agents with a score for every model, got {len(scores)}")
    values = scores.to_numpy(dtype=float)
    if method == "pearson_log" and (values <= 0).any():
        bad = [(scores.index[a], scores.columns[m]) for a, m in zip(*np.nonzero(values <= 0))]
        raise ValueError(
            f"pearson_log needs scores > 0; (agent, model) {bad[:5]} are <= 0 (use method='spearman')"
        )
    r = _correlation_stack(values[None], method)[0]
    return pd.DataFrame(r, index=pd.Index(scores.columns, name="model"), columns=pd.Index(scores.columns, name="model"))


@dataclasses.dataclass(frozen=True, eq=False)
class ModelCorrelations:
    """Model-by-model correlations with percentile-bootstrap intervals over seeds.

    point, low, high: DataFrames [model x model]; low/high are the (1 - level)/2
      and (1 + level)/2 quantiles of each entry over the replicates where it is
      defined (diagonal 1).
    mean, mean_low, mean_high: the mean off-diagonal correlation (over the
      M (M - 1) / 2 model pairs) and the percentile interval of that mean over
      replicates; NaN if some pair has no point correlation.
    draws: [B, M, M] the replicates' matrices.
    num_valid: replicates whose every off-diagonal entry is defined (the mean's
      interval uses only these).
    """

    metric: str
    method: str
    level: float
    point: pd.DataFrame
    low: pd.DataFrame
    high: pd.DataFrame
    mean: float
    mean_low: float
    mean_high: float
    num_agents: int
    num_seeds: int
    num_resamples: int
    num_valid: int
    draws: np.ndarray

    def summary(self) -> dict[str, float | int | str]:
        """The scalar fields as a dict (one row of a summary table)."""
        return {
            "metric": self.metric,
            "method": self.method,
            "mean": self.mean,
            "mean_low": self.mean_low,
            "mean_high": self.mean_high,
            "level": self.level,
            "num_agents": self.num_agents,
            "num_models": self.point.shape[0],
            "num_seeds": self.num_seeds,
            "num_resamples": self.num_resamples,
            "num_valid": self.num_valid,
        }


def _off_diagonal_mean(r: np.ndarray) -> np.ndarray:
    """[..., M, M] -> [...]; NaN if any pair is NaN, so every replicate averages the same pairs."""
    upper = np.triu_indices(r.shape[-1], k=1)
    return r[..., upper[0], upper[1]].mean(axis=-1)


def bootstrap_model_correlations(
    results: pd.DataFrame,
    metric: str,
    method: str,
    num_resamples: int = 1000,
    seed: int | np.random.Generator | None = 0,
    level: float = 0.95,
) -> ModelCorrelations:
    """Model-by-model correlations of agent scores with bootstrap intervals over seeds.

    The point estimate is model_correlations(agent_scores(results, metric), method).
    Each replicate draws S seed ids with replacement from the S distinct seeds of
    the table, once, and uses that same multiset for every (agent, model,
    setting) cell: the cell's per-setting mean becomes the mean over the drawn
    seeds (with multiplicity), and scores and correlations are recomputed as for
    the point estimate.

    Why seeds are resampled jointly rather than independently per (agent, model):
    seed s is one sampled environment (testbed problem set or bandit instance)
    shared by all agents of a model, and with a shared PRNG key also related
    across models (e.g. "relu-w50" and "tanh-w50" draw the same weights). An easy
    environment lowers every agent's score together; resampling it for all
    agents at once keeps that shared effect a common shift, as it was in the
    experiment, whereas independent resampling would turn it into spurious
    differences between agents, widening the intervals and pulling the
    correlations toward 0. The seed is the experiment's unit of replication, so
    it is what the bootstrap resamples; agents and models are fixed.

    Args:
      results: as for agent_scores.
      metric: as for agent_scores.
      method: as for model_correlations.
      num_resamples: B, the number of replicates.
      seed: seed or numpy Generator for the draws.
      level: the intervals' coverage, in (0, 1).

    Returns:
      ModelCorrelations. Agents without a score for every model are left out
      (warning). A replicate in which a model's scores are constant, or (for
      pearson_log) not all > 0, has NaN for that model's entries; entry intervals
      use the replicates where the entry is defined, and the mean's interval the
      replicates where all are (num_valid; a warning says when some are not).

    Raises:
      ValueError as agent_scores and model_correlations, or for bad
      num_resamples or level.
    """
    metric = _canonical_metric(metric)
    _check_method(method)
    _check_num_resamples(num_resamples, level)
    grid = _grid(results, metric)
    num_seeds = len(grid.seeds)
    scores = pd.DataFrame(
        _scores(grid, np.ones((1, num_seeds)))[0],
        index=pd.Index(grid.agents, name="agent"),
        columns=pd.Index(grid.models, name="model"),
    )
    point = model_correlations(scores, method)
    keep = np.isfinite(scores.to_numpy(float)).all(axis=1)

    rng = np.random.default_rng(seed)
    draws = rng.integers(0, num_seeds, size=(int(num_resamples), num_seeds))
    counts = np.zeros((int(num_resamples), num_seeds))
    np.add.at(counts, (np.repeat(np.arange(int(num_resamples)), num_seeds), draws.ravel()), 1.0)
    replicate_scores = _scores(grid, counts)[:, keep, :]  # [B, A', M]
    stack = _correlation_stack(replicate_scores, method)  # [B, M, M]

    q = 100.0 * np.array([(1 - level) / 2, (1 + level) / 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN entries stay NaN
        low, high = np.nanpercentile(stack, q, axis=0)
    means = _off_diagonal_mean(stack)
    valid = np.isfinite(means)
    if not valid.all():
        warnings.warn(
            f"{metric} ({method}): {int((~valid).sum())} of {num_resamples} replicates have an undefined "
            "correlation (a model with constant or non-positive resampled scores); the mean's interval omits them",
            RuntimeWarning,
            stacklevel=2,
        )
    # NaN when too few replicates are defined for the interval (correlation.min_resamples).
    mean_low, mean_high = percentile_interval(means, (float(q[0]), float(q[1])))

    def frame(values: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame(values, index=point.index, columns=point.columns)

    return ModelCorrelations(
        metric=metric,
        method=method,
        level=float(level),
        point=point,
        low=frame(low),
        high=frame(high),
        mean=float(_off_diagonal_mean(point.to_numpy(float))),
        mean_low=float(mean_low),
        mean_high=float(mean_high),
        num_agents=int(keep.sum()),
        num_seeds=num_seeds,
        num_resamples=int(num_resamples),
        num_valid=int(valid.sum()),
        draws=stack,
    )


# ---------------------------------------------------------------------------
# Regret against d_KL per bandit input dimension (Figs. 16, 17)


def _single_model(frame: pd.DataFrame, name: str) -> None:
    if "model" in frame.columns and frame["model"].astype(str).nunique() > 1:
        models = sorted(frame["model"].astype(str).unique())
        raise ValueError(f"{name} mixes generative models {models}; select one model first")


def regret_kl_correlation_by_dimension(
    testbed: pd.DataFrame,
    bandit: pd.DataFrame,
    metrics: Sequence[str] = ("dkl_10", "dkl_1"),
    points: str = "agent",
    num_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.90,
    match_dimension: bool = True,
) -> pd.DataFrame:
    """Correlation of bandit final regret with testbed d_KL, per bandit input dimension.

    For each input_dim d of the bandit table, the bandit table is restricted to
    input_dim == d, and so is the testbed table with match_dimension=True (the
    default); with match_dimension=False every bandit dimension is correlated with
    all testbed rows, as paper 000's Figs. 16-17 set its one 2-D testbed against
    bandits of d = 2, 10 and 50. The two are joined as in decision_bench.analysis.join:
      points="agent" (default): one point per agent, its mean testbed d_KL over
        seeds and problems and its mean final regret over bandit seeds
        (join.agent_level_points); the bootstrap resamples agents.
      points="agent_seed": one point per (agent, seed), as paper 000 App. E.3
        (join.join_regret); the bootstrap resamples those points.
    Pearson (log scale) and Spearman coefficients and their percentile intervals
    come from analysis.correlation.correlate. Points with kl <= 0 or regret <= 0
    have no logarithm and are dropped with a warning.

    Args:
      testbed: columns agent, seed, tau, kappa, kl, input_dim (+ optional
        settings); at most one distinct `model`.
      bandit: columns agent, seed, step, cumulative_regret, input_dim (+ optional
        final_regret, error, settings); at most one distinct `model`.
      metrics: testbed metrics (names or aliases as for agent_scores; "regret"
        is not one).
      points: "agent" or "agent_seed".
      num_resamples: bootstrap resamples per (input_dim, metric).
      seed: the Generator of (input_dim d, metric i) is default_rng([seed, d, i]),
        so adding a dimension or metric does not change the other rows.
      level: interval coverage; the default 0.90 is the paper's 5th-95th
        percentile interval of Figs. 8, 9, 16, 17.
      match_dimension: see above.

    Returns:
      DataFrame with columns BY_DIMENSION_COLUMNS: input_dim, metric,
      pearson_log, pearson_ci_low, pearson_ci_high, spearman, spearman_ci_low,
      spearman_ci_high, n (points), points, ci_level; one row per (input_dim,
      metric), sorted by input_dim then the order of `metrics`. Dimensions
      without testbed rows are skipped with a warning.

    Raises:
      ValueError (one line) for a missing column, several models, an unknown
      metric or points, bad num_resamples or level, no shared dimension, or a
      (dimension, metric) with fewer than 3 points.
    """
    _require(testbed, (*TESTBED_REQUIRED, *(("input_dim",) if match_dimension else ())), "testbed")
    _require(bandit, (*BANDIT_REQUIRED, "input_dim"), "bandit")
    _single_model(testbed, "testbed")
    _single_model(bandit, "bandit")
    names = [_canonical_metric(m) for m in metrics]
    if not names or "regret" in names:
        raise ValueError(f"metrics must be testbed metrics {sorted(METRICS)} (or aliases), got {list(metrics)!r}")
    if points not in ("agent", "agent_seed"):
        raise ValueError(f"points must be 'agent' or 'agent_seed', got {points!r}")
    _check_num_resamples(num_resamples, level)
    percentiles = (100.0 * (1 - level) / 2, 100.0 * (1 + level) / 2)

    testbed = drop_nonfinite_kl(testbed)  # once here, so the warning is not repeated per dimension
    tb_dim = pd.to_numeric(testbed["input_dim"], errors="coerce") if match_dimension else None
    bd_dim = pd.to_numeric(bandit["input_dim"], errors="coerce")
    dims = sorted(bd_dim.dropna().unique().tolist())
    records = []
    for dim in dims:
        tb, bd = (testbed[tb_dim == dim] if match_dimension else testbed), bandit[bd_dim == dim]
        if tb.empty:
            warnings.warn(f"input_dim {dim:g}: no testbed rows; left out", RuntimeWarning, stacklevel=2)
            continue
        joined = join_regret(tb, bd, names)
        table = agent_level_points(tb, joined) if points == "agent" else joined
        for index, metric in enumerate(names):
            rows = table[table["metric"] == metric]
            kl, regret = positive_points(rows, f"input_dim {dim:g}, {metric}", stacklevel=2)
            if len(kl) < MIN_POINTS:
                raise ValueError(
                    f"input_dim {dim:g}, {metric}: {len(kl)} {points} points to correlate (need >= {MIN_POINTS})"
                )
            rng = np.random.default_rng([seed, int(dim), index])
            result = correlate(kl, regret, num_resamples, rng, percentiles)
            records.append(
                {"input_dim": dim, "metric": metric, **result.as_dict(), "points": points, "ci_level": level}
            )
    if not records:
        raise ValueError("no input_dim has both testbed and bandit rows")
    return pd.DataFrame(records, columns=list(BY_DIMENSION_COLUMNS))


# ---------------------------------------------------------------------------
# Figure


def heatmap(
    matrix: pd.DataFrame,
    title: str,
    path: str | Path,
    low: pd.DataFrame | None = None,
    high: pd.DataFrame | None = None,
) -> Path:
    """Saves one annotated heat map of a [model x model] correlation matrix as a PNG.

    Models label both axes in the matrix's order; each cell shows its value (and
    "[low, high]" below it when both interval matrices are given; NaN shows as
    "n/a"). The colormap is diverging (RdBu_r) and fixed to [-1, 1], so colours
    mean the same in every figure. Written atomically (see figures.py); the
    caller's pyplot state is not touched.

    Args:
      matrix: square DataFrame whose index and columns are the same labels.
      title: the axes' title.
      path: the file to write; must end in ".png".
      low, high: optional DataFrames shaped like `matrix`.

    Returns the path. Raises ImportError without matplotlib (the `plot` extra) and
    ValueError for a non-square matrix, mismatched labels or a non-.png path.
    """
    from decision_bench.analysis.figures import (
        new_figure,  # matplotlib is imported only when drawing
    )

    path = Path(path)
    if path.suffix.lower() != ".png":
        raise ValueError(f"heatmap writes PNG; path must end in .png, got {str(path)!r}")
    if not isinstance(matrix, pd.DataFrame) or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"matrix must be a square DataFrame, got {getattr(matrix, 'shape', type(matrix).__name__)}")
    if list(matrix.index) != list(matrix.columns):
        raise ValueError("matrix index and columns must be the same labels in the same order")
    for name, other in (("low", low), ("high", high)):
        if other is not None and (other.shape != matrix.shape or list(other.index) != list(matrix.index)):
            raise ValueError(f"{name} must have the same labels and shape as matrix")
    labels = [str(label) for label in matrix.columns]
    values = matrix.to_numpy(float)
    size = 1.0 + 0.9 * len(labels)
    fig, (ax,) = new_figure(max(4.0, size + 1.2), max(3.5, size))
    image = ax.imshow(values, cmap="RdBu_r", vmin=-1.0, vmax=1.0)
    ticks = np.arange(len(labels))
    ax.set_xticks(ticks, labels, rotation=45, ha="right")
    ax.set_yticks(ticks, labels)
    with_interval = low is not None and high is not None
    for i in range(len(labels)):
        for j in range(len(labels)):
            v = values[i, j]
            text = "n/a" if not np.isfinite(v) else f"{v:.2f}"
            if with_interval and np.isfinite(v) and i != j:
                text += f"\n[{low.iat[i, j]:.2f}, {high.iat[i, j]:.2f}]"
            # Dark cells at both ends of the colormap need light text to stay legible.
            color = "white" if np.isfinite(v) and abs(v) > 0.6 else "black"
            ax.text(j, i, text, ha="center", va="center", color=color, fontsize=7 if with_interval else 8)
    ax.set_title(title, fontsize=10)
    fig.colorbar(image, ax=ax, shrink=0.8)
    return atomic_write(path, lambda handle: fig.savefig(handle, format="png", dpi=150))
