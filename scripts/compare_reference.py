"""Compare our testbed d_KL with the reference implementation's, setting by setting.

    python scripts/compare_reference.py --agent bbb --ours ours_bbb.csv --ours ours_mlp.csv
    python scripts/compare_reference.py --agent all --stored           # every agent, our stored rows
    python scripts/compare_reference.py --agent all --ours ours.csv     # every agent with figures
    python scripts/compare_reference.py --agent epinet --reference ref_epinet.csv --reference ref_mlp.csv --ours ...
    python scripts/compare_reference.py [--agent mlp] [--seeds 20] [--save ours.csv]   # run ours
    python scripts/compare_reference.py --agent ensemble+ [--num-ensemble 30] --seeds 20
    python scripts/compare_reference.py --agent sgmcmc [--num-steps 5000] --ours ours_sgmcmc.csv --ours ours_mlp.csv

The reference figures are per problem: one d_KL per (T, beta, tau, seed) of
``classification_2d`` (d = 2, iid test inputs), measured on DeepMind's
neural_testbed (commits and patches in bench/data/REFERENCE.md). They are read
from bench/data/reference_<agent>.csv and, for mlp and ensemble+, also from
bench/data/reference_testbed_runs.csv (a problem in both counts once);
--reference FILE (repeatable) reads those files instead. Its environments are not ours, so the
comparison is of per-setting means over seeds, never of single problems. Ours
runs on exactly the reference's (T, beta, tau) settings with more seeds
(default 20; at least the reference's), together with our mlp, or is read from
one or more --ours files (run_testbed's columns; they must hold our mlp too
for the ratio to mlp). Printed per agent:

- per setting (T, beta, tau): the reference's mean +- standard error over its
  seeds (std with ddof 1 / sqrt(n)), ours likewise, the z-score of the
  difference z = (ours - ref) / sqrt(se_ours^2 + se_ref^2), the ratio
  ours / ref, and both medians (the per-seed values are heavy-tailed);
- per tau: the mean over settings of the reference's and of our means, each
  with the standard error sqrt(sum of the settings' se^2) / num_settings, the
  ratio ours / reference and the z-score of the difference;
- per tau, the ratio to mlp WITHIN each side (reference agent / reference mlp,
  ours / our mlp, on the settings where the reference has both, and on each
  setting on the seeds both have: an mlp seed without the agent, or the
  reverse, is left out, so both means are over the same problems): the ratio of
  the mean over settings, with a delta-method standard error that keeps the
  covariance of agent and mlp on the same problems (same seed = same
  environment and data on either side), and the z of the two ratios' difference;
- a verdict (the issue's acceptance): ratio ours/reference within [0.8, 1.25]
  at tau 1 and at tau 10 (those of the two the reference has for the agent),
  |z| <= 3 for each tau's mean over settings, no setting with |z| > 3.5 (an
  undefined z fails too), and, for agents other than mlp, the two sides'
  ratios to mlp differing by at most their combined standard error.

Chains (sgmcmc): the reference's rows carry their chain's num_batches,
burn_in_time and model_saving_frequency, ours num_steps, burn_in and keep_every;
--num-steps picks one chain length (default: our agent's default, the paper's
500,000), on both sides. Our rows without those columns count as the agent's
default chain; when ours is run, a shorter reference chain's three settings are
given to our agent as overrides.

When the reference's settings are not a full grid, ours runs the product of
their T, beta and tau values and only the reference's settings are compared.
"""

from __future__ import annotations

import argparse
import ast
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from decision_bench import agents
from decision_bench._src.validation import check_choice, check_int
from decision_bench.evaluation import run_testbed
from decision_bench.evaluation.sweeps import Sweep, custom_sweep

ROOT = Path(__file__).resolve().parents[1]
BENCH_DATA = ROOT / "bench" / "data"
# The first reference runs (mlp, ensemble+ with 30 members; T in {10, 100, 1000}),
# kept in the repository so that the harness runs from a clone.
TESTBED_RUNS = BENCH_DATA / "reference_testbed_runs.csv"
BASELINE = "mlp"  # every agent's ratio to it is compared within each side
REFERENCE_COLUMNS = (
    "agent", "num_ensemble", "tau", "num_train", "temperature", "problem_seed", "kl_estimate"
)
OURS_COLUMNS = ("agent", "num_train", "temperature", "tau", "kappa", "seed", "kl")
KEYS = ["num_train", "temperature", "tau"]  # a setting of the comparison
INPUT_DIM = 2  # the reference's classification_2d
DEFAULT_SEEDS = 20
RATIO_BAND = (0.8, 1.25)
Z_MAX = 3.5  # any one setting
Z_OVERALL_MAX = 3.0  # a tau's mean over settings
RATIO_AGREEMENT = 1.0  # |difference of the ratios to mlp| <= this many combined standard errors
JUDGED_TAUS = (1, 10)
# A Markov chain's length settings: the reference's column -> our hyperparameter (sgmcmc).
CHAIN_FIELDS = {"num_batches": "num_steps", "burn_in_time": "burn_in", "model_saving_frequency": "keep_every"}


def _standard(frame: pd.DataFrame, seed_column: str, kl_column: str) -> pd.DataFrame:
    """Columns num_train (int), temperature (float, rounded to 10 decimals so that
    values read from different files match), tau (int), seed, kl: one row per problem."""
    return pd.DataFrame(
        {
            "num_train": frame["num_train"].astype(int).to_numpy(),
            "temperature": frame["temperature"].astype(float).round(10).to_numpy(),
            "tau": frame["tau"].astype(int).to_numpy(),
            "seed": frame[seed_column].to_numpy(),
            "kl": frame[kl_column].astype(float).to_numpy(),
        }
    )


def _missing_columns(frame: pd.DataFrame, columns, what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} lacks columns {missing}; it has {list(frame.columns)}")


def is_ensemble_agent(agent: str) -> bool:
    """Whether agent has a num_ensemble hyperparameter (ensemble, ensemble+)."""
    return "num_ensemble" in agents.hyperparameters(agent)


def reference_runs(
    reference: pd.DataFrame, agent: str, num_ensemble: int | None = None
) -> tuple[pd.DataFrame, int | None]:
    """The reference's problems of one agent, standardised (see _standard), and the
    ensemble size they were measured with (None for agents without one).

    reference: the rows of reference_testbed_runs.csv. For an ensemble agent
    num_ensemble picks the reference's rows; None picks the reference's single
    size for the agent or, where it has several, the agent's default size (an
    error when that is not among them).
    """
    _missing_columns(reference, REFERENCE_COLUMNS, "the reference file")
    check_choice("--agent", agent, agents.names())
    rows = reference[reference["agent"] == agent]
    if rows.empty:
        raise ValueError(
            f"the reference has no rows for agent {agent!r}; it has {sorted(reference['agent'].unique())}"
        )
    sizes = sorted(int(m) for m in rows["num_ensemble"].unique())
    if not is_ensemble_agent(agent):
        if num_ensemble is not None:
            raise ValueError(f"--num-ensemble is only for ensemble agents, not {agent!r}")
        return _standard(rows, "problem_seed", "kl_estimate"), None
    if num_ensemble is None:
        # Several sizes: the agent's default (the paper's, as the registry has it) when
        # the reference has it, as --agent all compares every agent at its default.
        default = int(agents.config(agent).num_ensemble)
        if len(sizes) > 1 and default not in sizes:
            raise ValueError(
                f"the reference has {agent!r} with num_ensemble {sizes}: pick one with --num-ensemble"
            )
        num_ensemble = default if len(sizes) > 1 else sizes[0]
    num_ensemble = check_int("--num-ensemble", num_ensemble, 1)
    rows = rows[rows["num_ensemble"] == num_ensemble]
    if rows.empty:
        raise ValueError(
            f"the reference has {agent!r} only with --num-ensemble in {sizes}, got {num_ensemble}"
        )
    return _standard(rows, "problem_seed", "kl_estimate"), num_ensemble


def ours_runs(ours: pd.DataFrame, agent: str) -> pd.DataFrame:
    """Our rows of one agent (a run_testbed frame or its CSV), iid designs and
    d = 2 only, standardised (see _standard)."""
    _missing_columns(ours, OURS_COLUMNS, "the ours file")
    rows = ours[(ours["agent"] == agent) & ours["kappa"].isna()]
    if "input_dim" in rows.columns:
        rows = rows[rows["input_dim"] == INPUT_DIM]
    if rows.empty:
        raise ValueError(
            f"ours has no iid d = {INPUT_DIM} rows for agent {agent!r}; "
            f"its agents are {sorted(ours['agent'].unique())}"
        )
    return _standard(rows, "seed", "kl")


def summarize_settings(runs: pd.DataFrame) -> pd.DataFrame:
    """Per setting (index num_train, temperature, tau; sorted by tau, T, beta):
    n (number of non-NaN kl), mean, se (std with ddof 1 / sqrt(n); NaN when
    n < 2), median and num_nan (seeds whose kl is NaN, left out of the others).

    runs: one row per problem with columns num_train, temperature, tau, kl.
    """
    grouped = runs.groupby(KEYS)["kl"]
    table = pd.DataFrame(
        {
            "n": grouped.count(),
            "mean": grouped.mean(),
            "se": grouped.std(ddof=1) / np.sqrt(grouped.count()),
            "median": grouped.median(),
            "num_nan": runs["kl"].isna().groupby([runs[k] for k in KEYS]).sum().astype(int),
        }
    )
    return table.reorder_levels(["tau", "num_train", "temperature"]).sort_index().reorder_levels(KEYS)


def compare(reference: pd.DataFrame, ours: pd.DataFrame) -> pd.DataFrame:
    """Per reference setting: ref_* and ours_* (n, mean, se, median, num_nan as in
    summarize_settings), diff = ours_mean - ref_mean, z = diff / sqrt(ours_se^2 +
    ref_se^2) and ratio = ours_mean / ref_mean. Index and order: the reference's.

    Raises ValueError when ours lacks some of the reference's settings.
    """
    missing = reference.index.difference(ours.index)
    if len(missing):
        shown = ", ".join(f"(T={t}, beta={b:g}, tau={u})" for t, b, u in missing)
        raise ValueError(f"ours lacks {len(missing)} of the reference's settings: {shown}")
    table = pd.concat([reference.add_prefix("ref_"), ours.loc[reference.index].add_prefix("ours_")], axis=1)
    table["diff"] = table["ours_mean"] - table["ref_mean"]
    table["z"] = table["diff"] / np.sqrt(table["ours_se"] ** 2 + table["ref_se"] ** 2)
    table["ratio"] = table["ours_mean"] / table["ref_mean"]
    return table


def overall(comparison: pd.DataFrame) -> pd.DataFrame:
    """Per tau (index): num_settings, ref_mean and ours_mean (means over the
    settings of the per-setting means), ref_se and ours_se (sqrt(sum of the
    settings' se^2) / num_settings: settings are independent), ratio ours/ref
    and z = (ours_mean - ref_mean) / sqrt(ours_se^2 + ref_se^2)."""
    rows = {}
    for tau, group in comparison.groupby(level="tau"):
        k = len(group)
        row = {"num_settings": k}
        for side in ("ref", "ours"):
            row[f"{side}_mean"] = group[f"{side}_mean"].mean()
            row[f"{side}_se"] = math.sqrt((group[f"{side}_se"] ** 2).sum(skipna=False)) / k
        row["ratio"] = row["ours_mean"] / row["ref_mean"]
        row["z"] = (row["ours_mean"] - row["ref_mean"]) / math.sqrt(row["ours_se"] ** 2 + row["ref_se"] ** 2)
        rows[tau] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "tau"
    return table


def ratio_to_baseline(agent_runs: pd.DataFrame, baseline_runs: pd.DataFrame, settings) -> pd.DataFrame:
    """One side's ratio of an agent to its baseline (mlp) per tau, on the given settings.

    agent_runs, baseline_runs: one row per problem (columns num_train,
    temperature, tau, seed, kl; see _standard); settings: (T, beta, tau) keys,
    each present in both. Per tau (index) with k settings: agent_mean and
    baseline_mean, the means over settings of the per-setting means over seeds
    (NaN kl left out); ratio = agent_mean / baseline_mean; se, its delta-method
    standard error,

        se = |ratio| * sqrt(var_A / A^2 + var_B / B^2 - 2 cov_AB / (A B)),

    with var_A = sum of the settings' se^2 / k^2 (se as in summarize_settings),
    likewise var_B, and cov_AB = sum over settings of c * n_p / (n_a n_b) / k^2,
    where c is the covariance (ddof 1) of agent and baseline kl over the n_p
    seeds both have at that setting (0 when n_p < 2): on either side a seed is
    one environment and data set, shared by the agent and its baseline.
    """
    agent_summary, baseline_summary = summarize_settings(agent_runs), summarize_settings(baseline_runs)
    rows = {}
    for tau in sorted({key[2] for key in settings}):
        keys = [key for key in settings if key[2] == tau]
        k = len(keys)
        a_rows, b_rows = agent_summary.loc[keys], baseline_summary.loc[keys]
        agent_mean, baseline_mean = a_rows["mean"].mean(), b_rows["mean"].mean()
        var_a = (a_rows["se"] ** 2).sum(skipna=False) / k**2
        var_b = (b_rows["se"] ** 2).sum(skipna=False) / k**2
        cov = 0.0
        for key, a_n, b_n in zip(keys, a_rows["n"], b_rows["n"]):
            paired = pd.merge(
                _at(agent_runs, key), _at(baseline_runs, key), on="seed", suffixes=("_a", "_b")
            ).dropna()
            if len(paired) >= 2:
                c = float(np.cov(paired["kl_a"], paired["kl_b"], ddof=1)[0, 1])
                cov += c * len(paired) / (a_n * b_n)
        cov /= k**2
        ratio = agent_mean / baseline_mean
        relative = var_a / agent_mean**2 + var_b / baseline_mean**2 - 2 * cov / (agent_mean * baseline_mean)
        rows[tau] = {
            "num_settings": k,
            "agent_mean": agent_mean,
            "baseline_mean": baseline_mean,
            "ratio": ratio,
            "se": abs(ratio) * math.sqrt(max(relative, 0.0)),
        }
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "tau"
    return table


def _at(runs: pd.DataFrame, key) -> pd.DataFrame:
    """The (seed, kl) rows of one setting key (T, beta, tau)."""
    t, b, u = key
    mask = (runs["num_train"] == t) & (runs["temperature"] == round(float(b), 10)) & (runs["tau"] == u)
    return runs.loc[mask, ["seed", "kl"]]


def compare_ratios(reference: pd.DataFrame, ours: pd.DataFrame) -> pd.DataFrame:
    """Both sides' ratio_to_baseline tables side by side (ref_*, ours_*) per tau,
    with diff = ours_ratio - ref_ratio, combined_se = sqrt(ref_se^2 + ours_se^2),
    z = diff / combined_se and agrees = |diff| <= RATIO_AGREEMENT * combined_se."""
    table = pd.concat([reference.add_prefix("ref_"), ours.loc[reference.index].add_prefix("ours_")], axis=1)
    table["diff"] = table["ours_ratio"] - table["ref_ratio"]
    table["combined_se"] = np.sqrt(table["ref_se"] ** 2 + table["ours_se"] ** 2)
    table["z"] = table["diff"] / table["combined_se"]
    table["agrees"] = table["diff"].abs() <= RATIO_AGREEMENT * table["combined_se"]
    return table


def paired_differences(
    ref_agent: pd.DataFrame, ref_mlp: pd.DataFrame, ours_agent: pd.DataFrame, ours_mlp: pd.DataFrame, settings
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per setting, the mean over problems of (agent d_KL - mlp d_KL) on each side, on
    the problems (seeds) each side has both for, with its standard error (std ddof 1 /
    sqrt(n)), and Welch's t-test of the sides' difference (t, its two-sided p with the
    Welch-Satterthwaite degrees of freedom: a side often has only 5-15 problems); and per
    tau, the settings' p-values combined by Fisher's method (-2 sum log p against
    chi-square with 2 x settings degrees of freedom; the settings' problems are independent
    within a tau) and the largest |t|.

    Unlike the ratio of means, which the settings with the largest d_KL dominate, every
    setting weighs in by its own noise here. It is reported beside the acceptance, not
    part of it; d_KL is heavy-tailed, so a t-test's p is only a guide. Settings where a
    side has fewer than 2 paired problems, or no spread on either side, are left out."""
    from scipy import stats  # noqa: PLC0415 - only this report needs it

    rows = {}
    for key in settings:
        sides = []
        for agent_runs, mlp_runs in ((ref_agent, ref_mlp), (ours_agent, ours_mlp)):
            paired = _at(agent_runs, key).merge(_at(mlp_runs, key), on="seed", suffixes=("_a", "_m")).dropna()
            sides.append((paired["kl_a"] - paired["kl_m"]).to_numpy(float))
        ref_diff, ours_diff = sides
        if min(len(ref_diff), len(ours_diff)) < 2 or max(ref_diff.std(), ours_diff.std()) == 0:
            continue
        test = stats.ttest_ind(ours_diff, ref_diff, equal_var=False)
        rows[key] = {
            "ref_diff": float(ref_diff.mean()), "ref_se": float(stats.sem(ref_diff)), "ref_n": len(ref_diff),
            "ours_diff": float(ours_diff.mean()), "ours_se": float(stats.sem(ours_diff)), "ours_n": len(ours_diff),
            "t": float(test.statistic), "p": float(test.pvalue),
        }
    table = pd.DataFrame.from_dict(rows, orient="index")
    if table.empty:
        return table, pd.DataFrame()
    table.index = pd.MultiIndex.from_tuples(table.index, names=KEYS)
    summary = table.groupby(level="tau").agg(
        settings=("p", "count"),
        fisher=("p", lambda p: float(-2.0 * np.log(np.maximum(p, 1e-300)).sum())),
        max_abs_t=("t", lambda t: float(t.abs().max())),
    )
    summary["p"] = [float(stats.chi2.sf(v, df=2 * n)) for v, n in zip(summary["fisher"], summary["settings"])]
    return table, summary


def verdict(
    comparison: pd.DataFrame,
    overall_table: pd.DataFrame,
    band: tuple[float, float] = RATIO_BAND,
    z_max: float = Z_MAX,
    taus: tuple[int, ...] = JUDGED_TAUS,
    z_overall_max: float = Z_OVERALL_MAX,
    ratios: pd.DataFrame | None = None,
) -> tuple[bool, list[str]]:
    """Whether the acceptance holds, and the reasons (one short sentence each).

    Holds when, for every tau in taus that overall_table has (at least one
    must be there), the ratio ours/reference is within band (inclusive) and
    the z of that tau's mean over settings is at most z_overall_max in size;
    no setting of comparison has |z| > z_max or an undefined z; and, when
    ratios (compare_ratios) is given, every judged tau's ratios to mlp agree.
    """
    low, high = band
    reasons, holds = [], True
    judged = [tau for tau in taus if tau in overall_table.index]
    if not judged:
        present = list(overall_table.index)
        return False, [f"no tau in {list(taus)} to judge (the comparison has tau {present})"]
    for tau in taus:
        if tau not in overall_table.index:
            reasons.append(f"tau {tau} not in the reference for this agent")
            continue
        ratio, z_tau = overall_table.loc[tau, "ratio"], overall_table.loc[tau, "z"]
        inside = bool(low <= ratio <= high)  # False for NaN
        near = bool(abs(z_tau) <= z_overall_max)  # False for NaN
        holds &= inside and near
        reasons.append(
            f"tau {tau} ratio {ratio:.3f} {'within' if inside else 'OUTSIDE'} [{low}, {high}], "
            f"z {z_tau:+.2f} {'within' if near else 'OUTSIDE'} +-{z_overall_max:g}"
        )
    z = comparison["z"]
    far = comparison[z.abs() > z_max]
    undefined = comparison[z.isna()]
    if len(far):
        holds = False
        shown = ", ".join(f"T={t} beta={b:g} tau={u} (z {v:+.2f})" for (t, b, u), v in far["z"].items())
        reasons.append(f"{len(far)} setting(s) with |z| > {z_max:g}: {shown}")
    if len(undefined):
        holds = False
        shown = ", ".join(f"T={t} beta={b:g} tau={u}" for t, b, u in undefined.index)
        reasons.append(
            f"{len(undefined)} setting(s) with undefined z (fewer than 2 seeds or no spread): {shown}"
        )
    if not len(far) and not len(undefined):
        reasons.append(f"no setting with |z| > {z_max:g} (max |z| {z.abs().max():.2f})")
    if ratios is not None:
        for tau in judged:
            if tau not in ratios.index:
                holds = False
                reasons.append(f"tau {tau}: no ratio to mlp (a side has no mlp on these settings)")
                continue
            row = ratios.loc[tau]
            agrees = bool(row["agrees"])
            holds &= agrees
            reasons.append(
                f"tau {tau} ratio to mlp: reference {row['ref_ratio']:.3f} vs ours {row['ours_ratio']:.3f} "
                f"({'agree' if agrees else 'DISAGREE'}: difference {row['diff']:+.3f}, "
                f"combined se {row['combined_se']:.3f})"
            )
    return holds, reasons


def _pm(mean: float, se: float) -> str:
    return f"{mean:.4f} +- {se:.4f}"


def format_settings(comparison: pd.DataFrame) -> str:
    """The per-setting table as text."""
    table = pd.DataFrame(
        {
            "reference": [_pm(m, s) for m, s in zip(comparison["ref_mean"], comparison["ref_se"])],
            "ref n": comparison["ref_n"],
            "ours": [_pm(m, s) for m, s in zip(comparison["ours_mean"], comparison["ours_se"])],
            "ours n": comparison["ours_n"],
            "z": comparison["z"].map(lambda v: f"{v:+.2f}"),
            "ours/ref": comparison["ratio"].map(lambda v: f"{v:.3f}"),
            "ref median": comparison["ref_median"].map(lambda v: f"{v:.4f}"),
            "ours median": comparison["ours_median"].map(lambda v: f"{v:.4f}"),
        },
        index=comparison.index.set_names(["T", "beta", "tau"]),
    )
    return table.to_string()


def format_overall(overall_table: pd.DataFrame) -> str:
    """The per-tau table as text."""
    table = pd.DataFrame(
        {
            "settings": overall_table["num_settings"],
            "reference": [_pm(m, s) for m, s in zip(overall_table["ref_mean"], overall_table["ref_se"])],
            "ours": [_pm(m, s) for m, s in zip(overall_table["ours_mean"], overall_table["ours_se"])],
            "ours/ref": overall_table["ratio"].map(lambda v: f"{v:.3f}"),
            "z": overall_table["z"].map(lambda v: f"{v:+.2f}"),
        },
        index=overall_table.index,
    )
    return table.to_string()


def format_ratios(ratios: pd.DataFrame) -> str:
    """The per-tau within-side ratio to mlp table as text."""
    table = pd.DataFrame(
        {
            "settings": ratios["ref_num_settings"],
            "reference agent/mlp": [_pm(r, s) for r, s in zip(ratios["ref_ratio"], ratios["ref_se"])],
            "ours agent/mlp": [_pm(r, s) for r, s in zip(ratios["ours_ratio"], ratios["ours_se"])],
            "difference": ratios["diff"].map(lambda v: f"{v:+.4f}"),
            "combined se": ratios["combined_se"].map(lambda v: f"{v:.4f}"),
            "z": ratios["z"].map(lambda v: f"{v:+.2f}"),
        },
        index=ratios.index,
    )
    return table.to_string()


def reference_files(agent: str) -> list[Path]:
    """Where the reference's figures for agent may be: bench/data/reference_<agent>.csv,
    then reference_testbed_runs.csv (which has mlp and ensemble+); the existing ones."""
    candidates = [BENCH_DATA / f"reference_{agent}.csv", TESTBED_RUNS]
    return [path for path in candidates if path.is_file()]


def agents_with_figures() -> list[str]:
    """The registry agents that have reference figures in bench/data, sorted."""
    found = {path.name[len("reference_"):-len(".csv")] for path in BENCH_DATA.glob("reference_*.csv")}
    if TESTBED_RUNS.is_file():
        found |= set(pd.read_csv(TESTBED_RUNS, usecols=["agent"])["agent"].unique())
    return sorted(found & set(agents.names()))


def load_reference(agent: str) -> tuple[pd.DataFrame, list[Path]]:
    """The reference's rows for agent and for mlp from their default files (see
    reference_files), one row per (problem_id, agent, num_ensemble): a problem in
    more than one file counts once, from bench/data."""
    paths = list(dict.fromkeys(reference_files(agent) + reference_files(BASELINE)))
    if not paths:
        raise ValueError(
            f"no reference figures for {agent!r}: expected bench/data/reference_{agent}.csv or "
            f"{TESTBED_RUNS}; pass a file with --reference FILE"
        )
    frames = []
    for path in paths:
        frame = pd.read_csv(path)
        _missing_columns(frame, REFERENCE_COLUMNS, f"the reference file {path}")
        frames.append(frame[frame["agent"].isin([agent, BASELINE])])
    frame = pd.concat(frames, ignore_index=True)
    return frame.drop_duplicates(subset=_identity(frame), keep="first"), paths


def _identity(frame: pd.DataFrame) -> list[str] | None:
    """The columns that name one reference figure: problem, agent, ensemble size and,
    where the file has it, the chain length (sgmcmc's short and full chains of one
    problem are two figures); None (every column) without problem ids."""
    if "problem_id" not in frame.columns:
        return None
    return ["problem_id", "agent", "num_ensemble"] + [c for c in CHAIN_FIELDS if c in frame.columns]


def select_chain(
    reference: pd.DataFrame, ours: pd.DataFrame | None, agent: str, num_steps: int | None
) -> tuple[pd.DataFrame, pd.DataFrame | None, dict | None]:
    """The reference's and our rows of agent at one chain length, and that chain's
    settings in our names ({"num_steps", "burn_in", "keep_every"}), or None when the
    reference's rows of agent have no chain columns (then --num-steps is refused).

    num_steps None picks the reference's single length or, where it has several, our
    agent's default num_steps (an error when the reference lacks it). Rows of other
    agents (mlp) are kept whatever their columns. Our rows of agent without a
    num_steps value count as the agent's default chain.
    """
    rows = reference[reference["agent"] == agent]
    if "num_batches" not in reference.columns or rows["num_batches"].isna().all():
        if num_steps is not None:
            raise ValueError(f"--num-steps is only for agents whose reference rows have a chain length, not {agent!r}")
        return reference, ours, None
    lengths = sorted(int(n) for n in rows["num_batches"].dropna().unique())
    default = int(agents.config(agent).num_steps)
    if num_steps is None:
        if len(lengths) > 1 and default not in lengths:
            raise ValueError(f"the reference has {agent!r} with num_batches {lengths}: pick one with --num-steps")
        num_steps = default if len(lengths) > 1 else lengths[0]
    num_steps = check_int("--num-steps", num_steps, 1)
    if num_steps not in lengths:
        raise ValueError(f"the reference has {agent!r} only with --num-steps in {lengths}, got {num_steps}")
    chosen = rows[rows["num_batches"] == num_steps]
    settings = chosen[list(CHAIN_FIELDS)].drop_duplicates()
    if len(settings) != 1:
        raise ValueError(f"the reference's {agent!r} rows with num_batches {num_steps} have several burn-ins or "
                         f"saving frequencies: {settings.to_dict('records')}")
    chain = {ours_name: int(settings.iloc[0][ref_name]) for ref_name, ours_name in CHAIN_FIELDS.items()}
    reference = reference[(reference["agent"] != agent) | (reference["num_batches"] == num_steps)]
    if ours is not None and "agent" in ours.columns:
        mine = ours["agent"] == agent
        if "num_steps" in ours.columns:
            length = ours["num_steps"].fillna(default).astype(int)
        else:
            length = pd.Series(default, index=ours.index)
        if mine.any() and not (mine & (length == num_steps)).any():
            have = sorted(int(n) for n in length[mine].unique())
            raise ValueError(f"ours has no rows of {agent!r} with num_steps {num_steps}; its chain lengths "
                             f"are {have}: pick one with --num-steps")
        ours = ours[~mine | (length == num_steps)]
    return reference, ours, chain


def reference_sweep(reference: pd.DataFrame, num_seeds: int) -> Sweep:
    """A custom sweep covering the reference's settings (the product of its T, beta
    and tau values; d = 2, iid designs)."""
    return custom_sweep(
        input_dims=(INPUT_DIM,),
        num_trains=sorted(reference["num_train"].unique().tolist()),
        temperatures=sorted(reference["temperature"].unique().tolist()),
        taus=sorted(reference["tau"].unique().tolist()),
        num_seeds=num_seeds,
        name="reference",
    )


def parse_override(text: str) -> tuple[str, object]:
    """"num_steps=50" -> ("num_steps", 50): the value as a Python literal, else a string."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"--set must be NAME=VALUE (a hyperparameter of the agent), got {text!r}")
    try:
        parsed = ast.literal_eval(value.strip())
    except (ValueError, SyntaxError):
        parsed = value.strip()
    return name.strip(), parsed


def _read_csv(path: Path, what: str, hint: str) -> pd.DataFrame:
    if not path.is_file():
        raise ValueError(f"{what} not found: {path}; {hint}")
    return pd.read_csv(path)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--agent",
        default="mlp",
        help="agent to compare, as named in both, or 'all' (every agent with reference figures; "
        "default: mlp)",
    )
    parser.add_argument(
        "--num-ensemble",
        type=int,
        default=None,
        help="ensemble agents only: the reference's ensemble size to compare, also given to ours "
        "(default: the reference's, when it has one)",
    )
    parser.add_argument(
        "--num-steps",
        type=int,
        default=None,
        help="agents with a chain (sgmcmc) only: the chain length to compare, the reference's "
        "num_batches and our num_steps (default: our agent's default, 500,000)",
    )
    parser.add_argument(
        "--reference",
        action="append",
        default=None,
        metavar="FILE",
        help="read the reference's per-problem figures from these CSVs only (repeatable; give one "
        "with mlp too for the ratio to mlp; default: bench/data/reference_<agent>.csv and "
        "reference_mlp.csv, and bench/data/reference_testbed_runs.csv)",
    )
    parser.add_argument(
        "--ours",
        action="append",
        default=None,
        metavar="FILE",
        help="read our rows from this CSV (repeatable; decision-bench testbed's testbed.csv or an "
        "earlier --save) instead of running; they need our mlp too for the ratio to mlp (for "
        "ensemble agents the file's ensemble size is not checked)",
    )
    parser.add_argument(
        "--stored",
        action="store_true",
        help="read our rows from the stored bench/data/ours_testbed_<agent>.csv files (every core "
        "agent, 20 seeds, mlp included) instead of running: seconds instead of hours",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        help=f"our seeds 0..N-1 per setting, at least the reference's "
        f"(default: {DEFAULT_SEEDS}; not with --ours)",
    )
    parser.add_argument("--save", default=None, help="write our rows (run_testbed's columns) to this CSV")
    parser.add_argument(
        "--num-test",
        type=int,
        default=1000,
        help="test tau-samples per problem (default: 1000, as the reference)",
    )
    parser.add_argument(
        "--num-models",
        type=int,
        default=1000,
        help="agent draws per estimate (default: 1000, as the reference)",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override one of our agent's hyperparameters (repeatable), e.g. --set num_steps=100",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser


def _ours_frame(
    args: argparse.Namespace, agent: str, ref_runs, num_ensemble, label, chain: dict | None = None
) -> tuple[pd.DataFrame, str]:
    """Our rows (agent and, unless agent is mlp, our mlp) from --ours files or a new run
    (with a chain, its settings are given to ours unless they are the agent's defaults,
    and recorded in the agent's rows)."""
    if args.ours is not None:
        running_only = (("--seeds", args.seeds), ("--save", args.save), ("--set", args.overrides))
        given = [flag for flag, value in running_only if value is not None and value != []]
        if given:
            raise ValueError(f"{', '.join(given)}: only when running ours, not with --ours")
        hint = "write one with --save FILE or decision-bench testbed"
        frames = [_read_csv(Path(path), "ours file", hint) for path in args.ours]
        return pd.concat(frames, ignore_index=True), ", ".join(args.ours)
    ref_seeds = int(ref_runs.groupby(KEYS).size().max())
    seeds = DEFAULT_SEEDS if args.seeds is None else args.seeds
    if seeds < 1:
        raise ValueError(f"--seeds must be an integer >= 1, got {seeds}")
    if seeds < ref_seeds:
        raise ValueError(f"--seeds must be >= the reference's seeds per setting ({ref_seeds}), got {seeds}")
    overrides = dict(parse_override(text) for text in args.overrides)
    if num_ensemble is not None:
        if overrides.setdefault("num_ensemble", num_ensemble) != num_ensemble:
            raise ValueError("give the ensemble size with --num-ensemble, not --set num_ensemble")
    if chain is not None:
        defaults = agents.config(agent)
        for name, value in chain.items():
            if name in overrides and overrides[name] != value:
                raise ValueError(f"give the chain length with --num-steps, not --set {name}")
            if value != getattr(defaults, name):
                overrides[name] = value
    agents.config(agent, **overrides)  # unknown or invalid hyperparameters fail here
    num_test = check_int("--num-test", args.num_test, 1)
    num_models = check_int("--num-models", args.num_models, 1)
    sweep = reference_sweep(ref_runs, seeds)
    names = [agent] if agent == BASELINE else [agent, BASELINE]
    print(
        f"running {label} on {len(sweep.settings)} settings x {len(sweep.designs)} designs "
        f"x {seeds} seeds" + (f" with {overrides}" if overrides else "")
        + ("" if agent == BASELINE else f", and {BASELINE} on the same problems")
    )
    ours = run_testbed(
        names,
        sweep=sweep,
        seeds=seeds,
        num_test=num_test,
        num_models=num_models,
        overrides={agent: overrides} if overrides else None,
        progress=not args.no_progress,
    )
    if chain is not None:
        for name, value in chain.items():
            ours[name] = ours[name] if name in ours.columns else np.nan
            ours.loc[ours["agent"] == agent, name] = value
    if args.save is not None:
        save = Path(args.save)
        save.parent.mkdir(parents=True, exist_ok=True)
        ours.to_csv(save, index=False)
        print(f"wrote {save}")
    return ours, f"this run ({seeds} seeds)"


def same_problems(agent_runs: pd.DataFrame, baseline_runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The agent's and the baseline's rows on the problems (setting and seed) both
    have: a within-side ratio compares the two on the same environments and data,
    not the baseline's extra seeds against the agent's fewer (on the reference's
    side mlp often has more seeds than an agent)."""
    keys = KEYS + ["seed"]
    both = agent_runs[keys].drop_duplicates().merge(baseline_runs[keys].drop_duplicates(), on=keys)
    return agent_runs.merge(both, on=keys), baseline_runs.merge(both, on=keys)


def within_side_ratios(
    reference: pd.DataFrame, ours: pd.DataFrame, ref_runs: pd.DataFrame, agent: str, comparison: pd.DataFrame
) -> tuple[pd.DataFrame | None, str, pd.DataFrame]:
    """compare_ratios of agent to mlp on the comparison's settings that both sides'
    mlp have (None for mlp itself, or an empty table when a side has no mlp there),
    a line saying which settings were used, and paired_differences' per-tau summary
    on the same problems (empty where there are no ratios)."""
    if agent == BASELINE:
        return None, "", pd.DataFrame()
    ref_mlp = reference[reference["agent"] == BASELINE]
    ours_mlp = ours[ours["agent"] == BASELINE] if "agent" in ours.columns else ours.iloc[:0]
    if ref_mlp.empty or ours_mlp.empty:
        side = "the reference" if ref_mlp.empty else "ours"
        return pd.DataFrame(), f"ratio to mlp not computed: {side} has no mlp rows", pd.DataFrame()
    ref_agent_runs, ref_mlp_runs = same_problems(ref_runs, _standard(ref_mlp, "problem_seed", "kl_estimate"))
    ours_agent_runs, ours_mlp_runs = same_problems(ours_runs(ours, agent), ours_runs(ours, BASELINE))
    common = set(summarize_settings(ref_mlp_runs).index) & set(summarize_settings(ours_mlp_runs).index)
    settings = [key for key in comparison.index if key in common]
    if not settings:
        return pd.DataFrame(), "ratio to mlp not computed: no setting has mlp on both sides", pd.DataFrame()
    left_out = len(comparison) - len(settings)
    note = f"on {len(settings)} of the {len(comparison)} settings, seeds both have" + (
        f" ({left_out} without reference mlp figures left out)" if left_out else ""
    )
    ratios = compare_ratios(
        ratio_to_baseline(ref_agent_runs, ref_mlp_runs, settings),
        ratio_to_baseline(ours_agent_runs, ours_mlp_runs, settings),
    )
    _, paired = paired_differences(ref_agent_runs, ref_mlp_runs, ours_agent_runs, ours_mlp_runs, settings)
    return ratios, note, paired


def run_agent(args: argparse.Namespace, agent: str) -> bool:
    """Loads or runs both sides for one agent, prints the comparison; returns whether
    the acceptance holds."""
    check_choice("--agent", agent, agents.names())
    if args.reference is not None:
        hint = (
            "the reference's figures are bench/data/reference_<agent>.csv (and "
            "bench/data/reference_testbed_runs.csv); "
            "pass a path with --reference FILE"
        )
        frames = [_read_csv(Path(path), "reference file", hint) for path in args.reference]
        reference = pd.concat(frames, ignore_index=True)
        if "problem_id" in reference.columns:
            reference = reference.drop_duplicates(subset=_identity(reference))
        source_ref = ", ".join(args.reference)
    else:
        reference, paths = load_reference(agent)
        source_ref = ", ".join(str(path) for path in paths)
    reference, _, chain = select_chain(reference, None, agent, args.num_steps)
    ref_runs, num_ensemble = reference_runs(reference, agent, args.num_ensemble)
    ref_summary = summarize_settings(ref_runs)
    label = agent if num_ensemble is None else f"{agent} (num_ensemble {num_ensemble})"
    if chain is not None:
        label += f" (chain {chain['num_steps']} steps, burn-in {chain['burn_in']}, keep every {chain['keep_every']})"
    ours, source = _ours_frame(args, agent, ref_runs, num_ensemble, label, chain)
    if chain is not None:
        _, ours, _ = select_chain(reference, ours, agent, chain["num_steps"])
    comparison = compare(ref_summary, summarize_settings(ours_runs(ours, agent)))
    per_tau = overall(comparison)
    ratios, ratio_note, paired = within_side_ratios(reference, ours, ref_runs, agent, comparison)
    holds, reasons = verdict(comparison, per_tau, ratios=ratios)
    print(f"d_KL of {label}: reference {source_ref} vs ours {source}")
    print("per setting: mean +- standard error over seeds, z of the difference, ratio, medians")
    print(format_settings(comparison))
    nan = comparison[["ref_num_nan", "ours_num_nan"]].sum()
    if nan.any():
        print(f"note: NaN kl left out: {int(nan['ref_num_nan'])} reference, {int(nan['ours_num_nan'])} ours")
    print("\nper tau: mean over settings +- sqrt(sum se^2) / settings")
    print(format_overall(per_tau))
    if ratios is not None:
        print(f"\nratio to mlp within each side, per tau, {ratio_note}: "
              "mean over settings of agent / of mlp +- delta-method se")
        if len(ratios):
            print(format_ratios(ratios))
            if len(paired):
                print("\npaired agent - mlp per setting, each side on its own problems (reported, not judged): "
                      "Welch's t per setting, the settings' p combined by Fisher's method")
                print(paired.round({"fisher": 2, "max_abs_t": 2, "p": 3}).to_string())
    low, high = RATIO_BAND
    print(
        f"\nverdict for {label}: acceptance {'HOLDS' if holds else 'FAILS'} (ratio ours/reference in "
        f"[{low}, {high}] and |z| <= {Z_OVERALL_MAX:g} at tau {' and '.join(map(str, JUDGED_TAUS))}, "
        f"no setting with |z| > {Z_MAX:g}, ratios to mlp within {RATIO_AGREEMENT:g} combined se): "
        + "; ".join(reasons)
    )
    return holds


def run(args: argparse.Namespace) -> bool:
    """run_agent for --agent, or for every agent with reference figures (--agent all);
    True when the acceptance holds for all of them."""
    if args.agent != "all":
        return run_agent(args, args.agent)
    if args.reference is not None:
        found = set()
        for path in args.reference:
            found |= set(_read_csv(Path(path), "reference file", "pass a path with --reference FILE")["agent"])
        names = sorted(found & set(agents.names()))
    else:
        names = agents_with_figures()
    if not names:
        raise ValueError("--agent all: no agent has reference figures")
    if args.ours is not None:  # only the agents the --ours files hold (a chained agent: at its default chain)
        held = set()
        for path in args.ours:
            frame = _read_csv(Path(path), "ours file", "write one with --save FILE")
            held |= {name for name in frame["agent"].unique() if _holds_default_chain(frame, name)}
        skipped = [name for name in names if name not in held]
        names = [name for name in names if name in held]
        if skipped:
            print(f"--agent all: not in the --ours files (a chained agent: not at its default chain length), skipped: {', '.join(skipped)}")
        if not names:
            raise ValueError("--agent all: the --ours files hold none of the agents with reference figures")
    results = {}
    for name in names:
        print(f"\n===== {name} =====")
        results[name] = run_agent(args, name)
    print("\nsummary: " + ", ".join(f"{name} {'HOLDS' if ok else 'FAILS'}" for name, ok in results.items()))
    return all(results.values())


def _holds_default_chain(ours: pd.DataFrame, agent: str) -> bool:
    """Whether ours has rows of agent at its default chain length (always, for rows
    without a num_steps column: see select_chain)."""
    rows = ours[ours["agent"] == agent]
    if "num_steps" not in rows.columns or agent not in agents.names():
        return not rows.empty
    hyper = agents.hyperparameters(agent)
    if "burn_in" not in hyper:  # not a chain: num_steps is an SGD step count
        return not rows.empty
    default = int(agents.config(agent).num_steps)
    return bool((rows["num_steps"].fillna(default).astype(int) == default).any())


def stored_ours_files() -> list[Path]:
    """Our stored rows, bench/data/ours_testbed_<agent>.csv (each agent's settings of the
    reference comparison, 20 seeds), sorted; a ValueError if there are none."""
    paths = sorted(BENCH_DATA.glob("ours_testbed_*.csv"))
    if not paths:
        raise ValueError(f"--stored: no ours_testbed_<agent>.csv in {BENCH_DATA}")
    return paths


def main(argv: list[str] | None = None) -> int:
    """0 when the acceptance holds, 1 when it fails, 2 on bad input."""
    args = build_parser().parse_args(argv)
    try:
        if args.stored:
            if args.ours is not None:
                raise ValueError("--stored reads the stored ours_testbed_<agent>.csv files: give it or --ours, not both")
            args.ours = [str(path) for path in stored_ours_files()]
        return 0 if run(args) else 1
    except ValueError as error:
        print(f"compare_reference: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
