"""sgmcmc at the paper's chain beside the Bayes floor (hmc), ensemble+ and mlp, on the
problems every one of them was run on (issue 35: how far is SGLD from Bayesian inference).

    python scripts/sgmcmc_beside_bayes.py                      # the paper's chain (500k steps)
    python scripts/sgmcmc_beside_bayes.py --num-steps 5000     # the short chain

Reads our sgmcmc rows at one chain length from bench/data/ours_testbed_sgmcmc.csv (or
--sgmcmc FILE), hmc from the stored ``standard`` set and mlp and ensemble+ (100 members)
from the stored ``paper2d`` set. A paper2d seed is the same environment and training data
in every set, so the agents are compared paired: only the (T, beta, tau, seed) problems
that every agent has are kept. Printed per setting (T, beta, tau): each agent's mean d_KL
+- standard error, and sgmcmc's difference to each of the others, mean +- standard error
of the per-problem differences, over the same problems.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from decision_bench.experiments.baselines import load_baselines

DATA = Path(__file__).resolve().parents[1] / "bench" / "data"
PROBLEM = ["num_train", "temperature", "tau", "seed"]
SETTING = ["num_train", "temperature", "tau"]
OTHERS = {"hmc": "standard", "ensemble+": "paper2d", "mlp": "paper2d"}


def sgmcmc_rows(path: Path, num_steps: int) -> pd.DataFrame:
    """Our sgmcmc's iid rows at one chain length (rows without a num_steps column are
    the agent's default chain, 500,000 steps). ValueError when none are at num_steps."""
    rows = pd.read_csv(path)
    steps = rows["num_steps"] if "num_steps" in rows else pd.Series(500_000, index=rows.index)
    rows = rows[(rows.agent == "sgmcmc") & (steps == num_steps) & rows.kappa.isna()]
    if rows.empty:
        raise ValueError(f"{path} has no sgmcmc rows with num_steps = {num_steps}")
    return rows


def paired_table(rows: pd.DataFrame, agent: str, others: list[str]) -> pd.DataFrame:
    """rows: columns agent, num_train, temperature, tau, seed, kl. One row per setting:
    n (the problems every agent has), each agent's mean and se, and for each other agent
    the mean and se of (agent - other) over those problems."""
    wide = rows.pivot_table(index=PROBLEM, columns="agent", values="kl", aggfunc="first")
    wide = wide[[agent, *others]].dropna()
    table = {}
    for setting, group in wide.groupby(level=SETTING):
        line = {"n": len(group)}
        for name in (agent, *others):
            line[name] = group[name].mean()
            line[f"{name}_se"] = group[name].sem()
        for name in others:
            difference = group[agent] - group[name]
            line[f"minus_{name}"] = difference.mean()
            line[f"minus_{name}_se"] = difference.sem()
        table[setting] = line
    return pd.DataFrame.from_dict(table, orient="index").rename_axis(SETTING)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sgmcmc", default=str(DATA / "ours_testbed_sgmcmc.csv"), help="our sgmcmc rows")
    parser.add_argument("--num-steps", type=int, default=500_000, help="the chain length to read")
    args = parser.parse_args(argv)
    try:
        parts = [sgmcmc_rows(Path(args.sgmcmc), args.num_steps)]
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for other, stored in OTHERS.items():
        testbed = load_baselines(stored).rows
        parts.append(testbed[(testbed.agent == other) & testbed.kappa.isna() & (testbed.input_dim == 2)])
    rows = pd.concat([p[["agent", *PROBLEM, "kl"]] for p in parts], ignore_index=True)
    table = paired_table(rows, "sgmcmc", list(OTHERS))
    if table.empty:
        print("error: no problem is held by sgmcmc and every other agent", file=sys.stderr)
        return 2
    print(f"d_KL, mean +- se over the problems all four agents have (sgmcmc chain {args.num_steps:,} steps)")
    for (num_train, temperature, tau), r in table.iterrows():
        agents = "  ".join(f"{name} {r[name]:.3f} +- {r[name + '_se']:.3f}" for name in ("sgmcmc", *OTHERS))
        gaps = "  ".join(f"-{name} {r['minus_' + name]:+.3f} +- {r['minus_' + name + '_se']:.3f}" for name in OTHERS)
        print(f"T={num_train:g} beta={temperature:g} tau={tau:g} (n={r.n:.0f}): {agents}")
        print(f"    sgmcmc {gaps}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
