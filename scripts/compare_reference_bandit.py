"""Our bandit regret against the reference implementation's, agent by agent.

    python scripts/compare_reference_bandit.py --ours bench/data/ours_bandit.csv   # from a clone, no runs
    python scripts/compare_reference_bandit.py [--agents mlp,ensemble] [--seeds 20] --save ours.csv  # run ours
    python scripts/compare_reference_bandit.py --reference FILE [--reference FILE] --ours FILE [--step 3000]

The setting is that of bench/data/reference_bandit_runs.csv:
NeuralBandit-v0, d = 2, 40 actions, beta = 0.1, 3000 steps, cumulative regret
logged at 1000, 2000 and 3000 steps. The reference's figures are read from
bench/data/reference_bandit.csv (every core agent's reference default, made as
bench/data/REFERENCE.md describes) and from bench/data/reference_bandit_runs.csv
(mlp and ensemble+, 5 seeds, first given in ../shared/reference); a seed in both
counts once. Ours is every agent's
registry default with run_bandit's defaults (batch 128, one SGD step per
observation, learning rate 1e-3, the sequential L2 decay scaled linearly by
beta as the reference's bandit does), >= 20 seeds, read from --ours or run and
written with --save.

The environments are different draws on the two sides (the reference's seeds
are not ours), and per-seed regret is heavy-tailed (an agent either finds the
best arm or keeps pulling a worse one for thousands of steps), so the
comparison uses order statistics only. Printed per logged step and agent:

- each side's number of seeds, median, quartiles (q25, q75) and interquartile
  range, and the mean beside them;
- ratio = our median / the reference's median;
- a two-sided Mann-Whitney U test of ours against the reference's per-seed
  regrets (p-value), which asks whether one side's regrets tend to be larger.

and per step, over the agents both sides have, the ordering of the agents by
median regret on each side and Kendall's tau between the two orderings (with
its two-sided p-value): do the agents rank the same way in both implementations?
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
BENCH_REFERENCE = ROOT / "bench" / "data" / "reference_bandit.csv"
# The reference runs first given in ../shared/reference (mlp and ensemble+, 5 seeds), kept here.
SHARED_REFERENCE = ROOT / "bench" / "data" / "reference_bandit_runs.csv"
BENCH_OURS = ROOT / "bench" / "data" / "ours_bandit.csv"
CORE_AGENTS = ("mlp", "ensemble", "dropout", "bbb", "hypermodel", "ensemble+", "epinet")
STEPS = (1000, 2000, 3000)
SETTING = {"input_dim": 2, "num_actions": 40, "temperature": 0.1}
DEFAULT_SEEDS = 20
REGRET_COLUMNS = tuple(f"regret_{step}" for step in STEPS)
REQUIRED_COLUMNS = ("agent", "seed") + REGRET_COLUMNS


def _check_columns(frame: pd.DataFrame, what: str) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} lacks columns {missing} (needs {list(REQUIRED_COLUMNS)})")


def in_setting(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of `frame` on SETTING (a file without those columns is taken as on it)."""
    keep = np.ones(len(frame), bool)
    for column, value in SETTING.items():
        if column in frame.columns:
            keep &= np.isclose(frame[column].to_numpy(float), value)
    return frame[keep]


def combine_reference(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The reference's per-seed rows from several files, one row per (agent, seed).

    The same (agent, seed) in two files is the same run of a deterministic program
    (its seed fixes environment, agent and replay sampling), so it counts once; the
    first file's row is kept. Returns columns agent, seed, regret_<step>.
    """
    pieces = []
    for frame in frames:
        _check_columns(frame, "a reference file")
        pieces.append(in_setting(frame)[list(REQUIRED_COLUMNS)])
    if not pieces:
        return pd.DataFrame(columns=list(REQUIRED_COLUMNS))
    combined = pd.concat(pieces, ignore_index=True)
    combined = combined.assign(agent=combined["agent"].astype(str), seed=combined["seed"].astype(int))
    return combined.drop_duplicates(["agent", "seed"], keep="first").reset_index(drop=True)


def summarize(values) -> dict[str, float]:
    """n, median, q25, q75, iqr and mean of one side's per-seed regrets ([n] array)."""
    values = np.asarray(values, np.float64)
    if values.size == 0:
        return {"n": 0, "median": np.nan, "q25": np.nan, "q75": np.nan, "iqr": np.nan, "mean": np.nan}
    q25, median, q75 = np.quantile(values, [0.25, 0.5, 0.75])
    return {"n": int(values.size), "median": float(median), "q25": float(q25), "q75": float(q75),
            "iqr": float(q75 - q25), "mean": float(values.mean())}


def compare(reference: pd.DataFrame, ours: pd.DataFrame, agents=CORE_AGENTS) -> pd.DataFrame:
    """One row per (step, agent) that both sides have: each side's summary, the ratio of
    medians (ours / reference) and the two-sided Mann-Whitney p-value."""
    rows = []
    for step in STEPS:
        column = f"regret_{step}"
        for agent in agents:
            theirs = reference.loc[reference["agent"] == agent, column].dropna().to_numpy(float)
            mine = ours.loc[ours["agent"] == agent, column].dropna().to_numpy(float)
            if theirs.size == 0 or mine.size == 0:
                continue
            ref_summary, our_summary = summarize(theirs), summarize(mine)
            ratio = our_summary["median"] / ref_summary["median"] if ref_summary["median"] > 0 else np.nan
            rows.append(
                {"step": step, "agent": agent}
                | {f"ref_{k}": v for k, v in ref_summary.items()}
                | {f"ours_{k}": v for k, v in our_summary.items()}
                | {"median_ratio": ratio,
                   "mannwhitney_p": float(stats.mannwhitneyu(mine, theirs, alternative="two-sided").pvalue)}
            )
    return pd.DataFrame(rows)


def orderings(comparison: pd.DataFrame) -> pd.DataFrame:
    """Per step: the agents from lowest to highest median regret on each side and
    Kendall's tau-b between the two sets of medians with its two-sided p-value (NaN
    with fewer than 3 agents)."""
    rows = []
    for step, table in comparison.groupby("step", sort=True):
        ref_order = table.sort_values(["ref_median", "agent"])["agent"].tolist()
        our_order = table.sort_values(["ours_median", "agent"])["agent"].tolist()
        tau, p = (np.nan, np.nan)
        if len(table) >= 3:
            result = stats.kendalltau(table["ref_median"], table["ours_median"])
            tau, p = float(result.statistic), float(result.pvalue)
        rows.append({"step": int(step), "num_agents": len(table), "kendall_tau": tau, "kendall_p": p,
                     "reference_order": " < ".join(ref_order), "ours_order": " < ".join(our_order)})
    return pd.DataFrame(rows)


def run_ours(agents, seeds: int, save: Path | None) -> pd.DataFrame:
    """Our per-seed regret at STEPS for each agent (registry default, run_bandit's
    defaults), seeds 0..seeds-1. With `save`, agents already there with >= `seeds`
    rows are read back instead of run, and the file is rewritten after each agent."""
    from decision_bench.bandit import run_bandit

    done = pd.read_csv(save) if save is not None and save.is_file() else pd.DataFrame(columns=REQUIRED_COLUMNS)
    for agent in agents:
        if (done["agent"] == agent).sum() >= seeds:
            continue
        frame = run_bandit(agent, "NeuralBandit-v0", STEPS[-1], seeds, log_every=STEPS[0],
                           env_kwargs=dict(SETTING), progress=False)
        rows = []
        for seed, runs in frame.groupby("seed"):
            by_step = runs.set_index("step")["cumulative_regret"]
            rows.append({"agent": agent, "seed": int(seed)} | dict(SETTING)
                        | {f"regret_{s}": float(by_step.loc[s]) for s in STEPS}
                        | {"wall_seconds": float(runs["wall_seconds"].iloc[0])})
        done = pd.concat([done[done["agent"] != agent], pd.DataFrame(rows)], ignore_index=True)
        if save is not None:
            done.to_csv(save, index=False)
        print(f"ours: {agent} {seeds} seeds in {rows[0]['wall_seconds']:.0f} s", file=sys.stderr, flush=True)
    return done[done["agent"].isin(list(agents))].reset_index(drop=True)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reference", action="append",
                   help="a reference CSV (repeatable; default: bench/data/reference_bandit.csv and "
                        "bench/data/reference_bandit_runs.csv)")
    p.add_argument("--ours", help="our per-seed regrets (columns agent, seed, regret_1000/2000/3000): "
                                  "compare without running (bench/data/ours_bandit.csv holds ours)")
    p.add_argument("--agents", default=",".join(CORE_AGENTS), help="comma-separated, from the core agents")
    p.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, help="our seeds when running (>= 1)")
    p.add_argument("--save", help="run ours (resuming from this file) and write our per-seed regrets here")
    return p


def _parse_agents(text: str) -> list[str]:
    agents = [a.strip() for a in text.split(",") if a.strip()]
    unknown = [a for a in agents if a not in CORE_AGENTS]
    if not agents or unknown:
        raise ValueError(f"--agents must name core agents from {list(CORE_AGENTS)}, got {text!r}")
    return agents


def _read(path: Path, flag: str) -> pd.DataFrame:
    if not path.is_file():
        raise ValueError(f"{flag} {path} not found")
    return pd.read_csv(path)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        agents = _parse_agents(args.agents)
        if args.seeds < 1:
            raise ValueError(f"--seeds must be an integer >= 1, got {args.seeds}")
        if args.ours and args.save:
            raise ValueError("--ours reads a saved file and --save runs ours: give one of them")
        if args.reference:
            ref_paths = [Path(p) for p in args.reference]
        else:
            ref_paths = [BENCH_REFERENCE] + ([SHARED_REFERENCE] if SHARED_REFERENCE.is_file() else [])
        reference = combine_reference([_read(p, "--reference") for p in ref_paths])
        if args.ours:
            ours = _read(Path(args.ours), "--ours")
            _check_columns(ours, f"--ours {args.ours}")
            ours = in_setting(ours)
        else:
            ours = run_ours(agents, args.seeds, Path(args.save) if args.save else None)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    table = compare(reference, ours, agents)
    if table.empty:
        print(f"error: no agent of {agents} has regrets on both sides", file=sys.stderr)
        return 2
    skipped = [a for a in agents if a not in set(table["agent"])]
    if skipped:
        print(f"not on both sides (skipped): {', '.join(skipped)}")
    shown = ["step", "agent", "ref_n", "ref_median", "ref_q25", "ref_q75", "ref_mean",
             "ours_n", "ours_median", "ours_q25", "ours_q75", "ours_mean", "median_ratio", "mannwhitney_p"]
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(table[shown].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
        print()
        print(orderings(table).to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
