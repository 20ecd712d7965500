"""Reading results tables and joining testbed quality with bandit regret.

The join (paper 000 Sec. 5.2 and App. E.3: "different points of an agent
correspond to different random seeds for the testbed and sequential problems"):

1. Testbed: for each metric, select its rows
     dkl_1          tau == 1                  (marginal)
     dkl_10         tau == 10, kappa is NaN   (joint, iid test inputs)
     dkl_10_kappa2  tau == 10, kappa == 2     (joint, dyadic test inputs)
   drop rows whose kl is not finite (with a warning), and average kl per
   (agent, seed) over the problems (input_dim, num_train, temperature).
2. Bandit: drop runs whose `error` is non-empty (with a warning), take one
   final_regret per run (agent, seed and those of env, input_dim, num_actions,
   temperature the table has; without a final_regret column, the
   cumulative_regret of the run's last step), and average it per (agent, seed)
   over bandit settings if there are several.
3. Join per (agent, seed): each bandit point takes the testbed average of the same
   agent and seed. If the testbed has no rows for that seed, it takes the agent's
   testbed average over all its seeds instead, and `seed_matched` is False.
   Agents missing from either table are dropped with a warning.

The result has one row per (metric, agent, seed): columns metric, agent, seed,
kl, regret, seed_matched.

Two further views of the same data (see decision_bench.analysis.pipeline for why):

- `agent_level_points`: one point per (metric, agent): kl = the agent's testbed
  mean over all its seeds and problems, regret = the agent's mean final regret
  over its bandit seeds (with the median and the mean of log regret over seeds
  beside it, and the share of the total regret on the agent's two worst seeds).
- `relative_points`: the (agent, seed) points with the environment effect of
  each seed divided out. Testbed seed s is one set of testbed problems and bandit
  seed s one bandit environment, each shared by every agent; so kl is divided by
  the mean kl of all agents on that testbed seed and regret by the mean regret of
  all agents on that bandit seed. Only seeds on which every agent has a point
  are kept (otherwise the per-seed means are over different agents).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from decision_bench._src.files import UNFINISHED_RUN
from decision_bench.analysis.inputs import (
    BANDIT_REQUIRED,
    BANDIT_SETTING_COLUMNS,
    TESTBED_REQUIRED,
    TESTBED_SETTING_COLUMNS,
    failed_rows,
    read_results_csv,
)

__all__ = [
    "BANDIT_COLUMNS",
    "METRICS",
    "TESTBED_COLUMNS",
    "agent_level_points",
    "bandit_final_regret",
    "drop_nonfinite",
    "drop_nonfinite_kl",
    "join_regret",
    "metric_rows",
    "read_table",
    "relative_points",
    "run_final_regret",
    "testbed_metric_by_seed",
    "top_seeds_share",
]

# Columns the analysis reads (the tables may have more); which of them are
# required and which optional: decision_bench.analysis.inputs.
TESTBED_COLUMNS = ("agent", "input_dim", "num_train", "temperature", "tau", "kappa", "seed", "kl")
BANDIT_COLUMNS = (
    "agent", "env", "input_dim", "num_actions", "temperature", "seed",
    "step", "cumulative_regret", "final_regret",
)  # fmt: skip
PROBLEM_COLUMNS = TESTBED_SETTING_COLUMNS
RUN_COLUMNS = ("agent", "env", "input_dim", "num_actions", "temperature", "seed")


def present(frame: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    """Those of `columns` that `frame` has, in their order (for optional columns)."""
    return [c for c in columns if c in frame.columns]


# metric name -> (tau, kappa); kappa None means "iid test inputs" (kappa NaN),
# "any" means the metric ignores kappa (marginals have no test-input structure).
METRICS: dict[str, tuple[int, float | None | str]] = {
    "dkl_1": (1, "any"),
    "dkl_10": (10, None),
    "dkl_10_kappa2": (10, 2.0),
}
METRIC_LABELS = {
    "dkl_1": r"$d_{KL}^{1}$",
    "dkl_10": r"$d_{KL}^{10}$",
    "dkl_10_kappa2": r"$d_{KL}^{10,\kappa=2}$",
}


def read_table(path: str | Path, required: Sequence[str]) -> pd.DataFrame:
    """Reads a CSV and checks its structure and that it has the `required` columns.

    Raises FileNotFoundError naming the file, or ValueError naming the file (and
    the row or the missing columns): see inputs.read_results_csv. The values are
    not checked; inputs.read_testbed and inputs.read_bandit check them too.
    """
    return read_results_csv(path, required)[0]


def _check_columns(frame: pd.DataFrame, required: Sequence[str], name: str) -> None:
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} is missing columns {missing} (has {list(frame.columns)})")


def metric_rows(testbed: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The testbed rows that measure `metric` (a key of METRICS)."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
    tau, kappa = METRICS[metric]
    tau_col = pd.to_numeric(testbed["tau"], errors="coerce")
    kappa_col = pd.to_numeric(testbed["kappa"], errors="coerce")
    mask = tau_col == tau
    if kappa is None:
        mask &= kappa_col.isna()
    elif kappa != "any":
        mask &= kappa_col == kappa
    return testbed[mask]


def drop_nonfinite(
    rows: pd.DataFrame, column: str, message: Callable[[pd.DataFrame], str], stacklevel: int = 1
) -> pd.DataFrame:
    """The rows whose ``column`` is a finite number, that column as numbers. The others are
    dropped with one RuntimeWarning, ``message(dropped rows)``, never averaged in silently
    (DESIGN: numerical failure is reported); stacklevel as seen from the caller."""
    values = pd.to_numeric(rows[column], errors="coerce")
    bad = ~np.isfinite(values.to_numpy(dtype=float))
    if bad.any():
        warnings.warn(message(rows.loc[bad]), RuntimeWarning, stacklevel=stacklevel + 1)
    return rows.loc[~bad].assign(**{column: values[~bad]})


def finite_kl_rows(rows: pd.DataFrame, metric: str) -> pd.DataFrame:
    return drop_nonfinite(
        rows, "kl",
        lambda bad: f"{metric}: dropping {len(bad)} testbed rows with non-finite kl "
        f"(agents {sorted(bad['agent'].astype(str).unique())})",
        stacklevel=3,
    )


def drop_nonfinite_kl(testbed: pd.DataFrame) -> pd.DataFrame:
    """The testbed rows with a finite kl; warns once, with counts per agent, if any are dropped.

    Call it once before the join and the figures so the warning is not repeated.
    """
    _check_columns(testbed, ("agent", "kl"), "testbed table")
    return drop_nonfinite(
        testbed, "kl",
        lambda bad: f"dropping {len(bad)} testbed rows with non-finite kl "
        f"(rows per agent: {bad['agent'].astype(str).value_counts().sort_index().to_dict()})",
        stacklevel=2,
    )


def testbed_metric_by_seed(testbed: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean kl per (agent, seed) over problems for one metric.

    Returns columns agent, seed, kl, num_problems (empty if the metric has no rows).
    """
    _check_columns(testbed, TESTBED_REQUIRED, "testbed table")
    rows = finite_kl_rows(metric_rows(testbed, metric), metric)
    if rows.empty:
        return pd.DataFrame(columns=["agent", "seed", "kl", "num_problems"])
    # Without setting columns the agents' problems cannot be told apart, so not compared.
    settings = present(rows, PROBLEM_COLUMNS)
    problems = pd.Series(dtype=object)
    if settings:
        problems = rows.groupby("agent")[settings].apply(
            lambda g: frozenset(map(tuple, g.drop_duplicates().to_numpy().tolist()))
        )
    if problems.nunique() > 1:
        # Averages over different problem sets are not comparable across agents.
        warnings.warn(
            f"{metric}: agents were evaluated on different testbed problems "
            f"({dict(problems.map(len))} problems each); their averages are not comparable",
            RuntimeWarning,
            stacklevel=2,
        )
    grouped = rows.groupby(["agent", "seed"], as_index=False).agg(
        kl=("kl", "mean"), num_problems=("kl", "size")
    )
    return grouped


def run_final_regret(bandit: pd.DataFrame) -> pd.DataFrame:
    """One row per bandit run: its run columns and final_regret.

    A run is one (agent, seed) and bandit setting (those of env, input_dim,
    num_actions, temperature the table has). final_regret is the table's column
    (repeated on each log row of a run) when it has one, else the
    cumulative_regret of the run's last step.
    """
    _check_columns(bandit, BANDIT_REQUIRED, "bandit table")
    keys = present(bandit, RUN_COLUMNS)
    if "final_regret" in bandit.columns:
        return bandit.groupby(keys, as_index=False, dropna=False)["final_regret"].last()
    step = pd.to_numeric(bandit["step"], errors="coerce")
    # A stable sort keeps the file order among equal steps; tail(1), unlike
    # last(), keeps a NaN final value instead of skipping to an earlier step.
    last = bandit.assign(_step=step).sort_values("_step", kind="stable").groupby(keys, dropna=False).tail(1)
    runs = last[keys].assign(final_regret=last["cumulative_regret"].to_numpy())
    return runs.sort_values(keys, kind="stable", ignore_index=True)


def bandit_final_regret(bandit: pd.DataFrame) -> pd.DataFrame:
    """One regret per (agent, seed): each run's final regret averaged over bandit settings.

    Needs columns agent, seed, step, cumulative_regret; final_regret, error and
    the setting columns are optional (see run_final_regret). Runs with a
    non-empty `error` are dropped with a warning. Returns columns agent, seed,
    regret, num_runs.
    """
    _check_columns(bandit, BANDIT_REQUIRED, "bandit table")
    rows = bandit
    failed = failed_rows(rows)
    if failed.any():
        # Runs still in progress (a results file read while its run goes on) are
        # named apart from runs that failed.
        unfinished = failed & rows["error"].astype(str).str.startswith(UNFINISHED_RUN).to_numpy()
        for mask, what in ((failed & ~unfinished, "failed bandit runs"),
                           (unfinished, "unfinished bandit runs (still running)")):
            if mask.any():
                runs = sorted(set(map(tuple, rows.loc[mask, ["agent", "seed"]].astype(str).to_numpy().tolist())))
                warnings.warn(f"dropping {len(runs)} {what} (agent, seed): {runs[:10]}", RuntimeWarning,
                              stacklevel=2)
        rows = rows.loc[~failed]
    runs = drop_nonfinite(
        run_final_regret(rows), "final_regret",
        lambda bad: f"dropping {len(bad)} bandit runs with non-finite final_regret", stacklevel=2,
    )
    settings = present(runs, BANDIT_SETTING_COLUMNS)
    if settings and runs[settings].drop_duplicates().shape[0] > 1:
        warnings.warn(
            f"bandit table has several settings ({', '.join(settings)}); "
            "final regret is averaged over them per agent and seed",
            RuntimeWarning,
            stacklevel=2,
        )
    return runs.groupby(["agent", "seed"], as_index=False).agg(
        regret=("final_regret", "mean"), num_runs=("final_regret", "size")
    )


def _configs(frame: pd.DataFrame) -> dict[str, set[str]]:
    if "agent_config" not in frame.columns or frame.empty:
        return {}
    labels = frame["agent_config"].fillna("").astype(str)
    return {str(a): set(v) for a, v in labels.groupby(frame["agent"].astype(str))}


def warn_config_mismatch(testbed: pd.DataFrame, bandit: pd.DataFrame) -> list[str]:
    """Warns, one line per agent, when an agent's testbed rows and bandit rows name
    different overrides in their agent_config columns (a 3-member "ensemble" on the
    testbed joined with a 5-member one in the bandit); returns the agents. A table
    without the column says nothing of its configs and is not compared."""
    tested, played = _configs(testbed), _configs(bandit)
    mismatched = sorted(a for a in set(tested) & set(played) if tested[a] != played[a])
    for agent in mismatched:
        shown = lambda labels: " | ".join(sorted(repr(label or "defaults") for label in labels))  # noqa: E731
        warnings.warn(
            f"agent {agent!r} ran with {shown(tested[agent])} on the testbed but {shown(played[agent])} "
            "in the bandit; its points join two configurations under one name",
            RuntimeWarning,
            stacklevel=3,
        )
    return mismatched


def join_regret(testbed: pd.DataFrame, bandit: pd.DataFrame, metrics: Sequence[str] = tuple(METRICS)) -> pd.DataFrame:
    """Joins testbed metrics with bandit regret per (agent, seed) (see module doc).

    Returns the long table: metric, agent, seed, kl, regret, seed_matched.
    Metrics without testbed rows contribute no rows.
    """
    warn_config_mismatch(testbed, bandit)
    regret = bandit_final_regret(bandit)
    regret = regret.assign(agent=regret["agent"].astype(str))
    pieces = []
    for metric in metrics:
        by_seed = testbed_metric_by_seed(testbed, metric)
        if by_seed.empty:
            continue
        by_seed = by_seed.assign(agent=by_seed["agent"].astype(str))
        missing_in_testbed = sorted(set(regret["agent"]) - set(by_seed["agent"]))
        missing_in_bandit = sorted(set(by_seed["agent"]) - set(regret["agent"]))
        if missing_in_testbed or missing_in_bandit:
            warnings.warn(
                f"{metric}: agents only in the bandit table {missing_in_testbed}, "
                f"only in the testbed table {missing_in_bandit}; they are left out",
                RuntimeWarning,
                stacklevel=2,
            )
        agent_mean = by_seed.groupby("agent")["kl"].mean().rename("kl_agent_mean")
        merged = regret.merge(by_seed[["agent", "seed", "kl"]], on=["agent", "seed"], how="left")
        merged = merged.merge(agent_mean, left_on="agent", right_index=True, how="inner")
        matched = merged["kl"].notna()
        merged = merged.assign(
            kl=merged["kl"].where(matched, merged["kl_agent_mean"]),
            seed_matched=matched,
            metric=metric,
        )
        pieces.append(merged[["metric", "agent", "seed", "kl", "regret", "seed_matched"]])
    if not pieces:
        return pd.DataFrame(columns=["metric", "agent", "seed", "kl", "regret", "seed_matched"])
    return pd.concat(pieces, ignore_index=True).sort_values(["metric", "agent", "seed"], ignore_index=True)


def agent_level_points(testbed: pd.DataFrame, joined: pd.DataFrame) -> pd.DataFrame:
    """One point per (metric, agent) with the agents of `joined` (from join_regret).

    kl is the mean of the agent's testbed rows for the metric over all seeds and
    problems; regret is the mean over the agent's bandit seeds of the (agent, seed)
    regret in `joined`. Pass the testbed after drop_nonfinite_kl. Warns if agents
    have different sets of bandit seeds, since each bandit seed is an environment
    shared by all agents and means over different seeds are not comparable.

    Beside the mean, two statistics of the same per-seed regrets that a few
    extreme seeds cannot dominate (per-seed regret is heavy-tailed: an agent that
    locks onto a bad arm on one seed can hold most of its total regret there):
    regret_median, the median over seeds, and regret_log_mean, the mean over seeds
    of log regret (NaN when a seed's regret is <= 0, which has no logarithm).
    top2_share is the share of the agent's total regret on its two worst seeds.

    Returns columns metric, agent, kl, regret, num_testbed_rows, num_bandit_seeds,
    regret_median, regret_log_mean, top2_share.
    """
    _check_columns(testbed, TESTBED_REQUIRED, "testbed table")
    columns = [
        "metric", "agent", "kl", "regret", "num_testbed_rows", "num_bandit_seeds",
        "regret_median", "regret_log_mean", "top2_share",
    ]  # fmt: skip
    pieces = []
    for metric in METRICS:
        points = joined[joined["metric"] == metric]
        if points.empty:
            continue
        rows = metric_rows(testbed, metric)
        rows = rows.assign(agent=rows["agent"].astype(str), kl=pd.to_numeric(rows["kl"], errors="coerce"))
        rows = rows[np.isfinite(rows["kl"].to_numpy(float))]
        kl = rows.groupby("agent")["kl"].agg(kl="mean", num_testbed_rows="size")
        seed_sets = points.groupby("agent")["seed"].agg(lambda s: frozenset(s.tolist()))
        if seed_sets.nunique() > 1:
            warnings.warn(
                f"{metric}: agents have different bandit seeds ({ {a: sorted(v) for a, v in seed_sets.items()} }); "
                "agent-level mean regrets mix different environments",
                RuntimeWarning,
                stacklevel=2,
            )
        regret = points.groupby("agent")["regret"].agg(
            regret="mean",
            num_bandit_seeds="size",
            regret_median="median",
            regret_log_mean=_log_mean,
            top2_share=top_seeds_share,
        )
        merged = kl.join(regret, how="inner").reset_index()
        pieces.append(merged.assign(metric=metric)[columns])
    if not pieces:
        return pd.DataFrame(columns=columns)
    return pd.concat(pieces, ignore_index=True).sort_values(["metric", "agent"], ignore_index=True)


def _log_mean(regrets: pd.Series) -> float:
    """Mean of log regret over seeds; NaN if some seed's regret is <= 0 (no logarithm)."""
    values = regrets.to_numpy(np.float64)
    if np.any(~(values > 0)):
        return float("nan")
    return float(np.mean(np.log(values)))


def top_seeds_share(regrets, num_top: int = 2) -> float:
    """The share of the total regret held by the `num_top` seeds with the most regret.

    regrets: [n] non-negative per-seed regrets. 1.0 when n <= num_top; NaN when the
    total is 0 (no regret to share).
    """
    values = np.sort(np.asarray(regrets, np.float64))[::-1]
    total = values.sum()
    if not total > 0:
        return float("nan")
    return float(values[:num_top].sum() / total)


def relative_points(joined: pd.DataFrame) -> pd.DataFrame:
    """The (agent, seed) points of `joined` with per-seed environment effects divided out.

    Per metric and seed: kl_relative = kl / (mean kl of all agents on that seed) and
    regret_relative = regret / (mean regret of all agents on that seed). Seeds on
    which some agent of the metric has no point are dropped with a warning (their
    means would be over a different set of agents). A seed whose mean is 0 gives
    NaN. Returns `joined` with columns kl_relative and regret_relative added (NaN
    for dropped seeds), in the same row order.
    """
    out = joined.assign(kl_relative=np.nan, regret_relative=np.nan)
    for metric in out["metric"].unique():
        mask = (out["metric"] == metric).to_numpy()
        points = out[mask]
        num_agents = points["agent"].nunique()
        agents_per_seed = points.groupby("seed")["agent"].transform("nunique")
        complete = (agents_per_seed == num_agents).to_numpy()
        if not complete.all():
            dropped = sorted(points.loc[~complete, "seed"].unique().tolist())
            warnings.warn(
                f"{metric}: relative level leaves out seeds {dropped}, on which not all {num_agents} agents "
                "have a point",
                RuntimeWarning,
                stacklevel=2,
            )
        kept = points[complete]
        with np.errstate(divide="ignore", invalid="ignore"):
            kl_mean = kept.groupby("seed")["kl"].transform("mean")
            regret_mean = kept.groupby("seed")["regret"].transform("mean")
            kl_rel = (kept["kl"] / kl_mean.where(kl_mean > 0)).to_numpy(float)
            regret_rel = (kept["regret"] / regret_mean.where(regret_mean > 0)).to_numpy(float)
        index = np.flatnonzero(mask)[complete]
        out.iloc[index, out.columns.get_loc("kl_relative")] = kl_rel
        out.iloc[index, out.columns.get_loc("regret_relative")] = regret_rel
    return out
