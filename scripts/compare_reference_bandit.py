"""Our bandit regret against the reference implementation's (paired by setting, not seed).

    python scripts/compare_reference_bandit.py [--agents mlp,ensemble+] [--seeds 20]
        [--regularization sequential,sequential_linear_beta] [--ours FILE] [--save FILE]

Setting of bench/data/reference_bandit_runs.csv: NeuralBandit-v0, d = 2,
40 actions, beta = 0.1, 3000 steps, regret logged at 1000, 2000 and 3000 steps;
ensemble+ with 100 members. Environments are different draws (the reference's
seeds are not ours), and the distributions are heavy-tailed (a greedy-ish agent
either finds the best arm or sticks to a bad one), so the script prints medians
and quartiles beside means, and a two-sided Mann-Whitney rank test of ours
against the reference's per-seed regrets at each logged step.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

REPO = Path(__file__).resolve().parent.parent
DEFAULT_REFERENCE = REPO / "bench" / "data" / "reference_bandit_runs.csv"
STEPS = (1000, 2000, 3000)


def run_ours(agents: list[str], seeds: int, regularizations: list[str]) -> pd.DataFrame:
    """Per-seed regret at STEPS: columns agent, regularization, seed, regret_<step>."""
    from decision_bench.bandit import run_bandit

    rows = []
    for agent in agents:
        kwargs = {"num_ensemble": 100} if agent.startswith("ensemble") else {}
        for reg in regularizations:
            df = run_bandit(
                agent, "NeuralBandit-v0", STEPS[-1], seeds, log_every=STEPS[0],
                env_kwargs={"input_dim": 2, "num_actions": 40, "temperature": 0.1},
                agent_kwargs={**kwargs, "regularization": reg}, progress=False,
            )
            for seed, g in df.groupby("seed"):
                by_step = g.set_index("step").cumulative_regret
                rows.append(
                    {"agent": agent, "regularization": reg, "seed": seed}
                    | {f"regret_{s}": float(by_step.loc[s]) for s in STEPS}
                )
    return pd.DataFrame(rows)


def compare(ref: pd.DataFrame, ours: pd.DataFrame) -> pd.DataFrame:
    """One row per (agent, regularization, step): medians, quartiles, means, rank test."""
    out = []
    for (agent, reg), mine in ours.groupby(["agent", "regularization"], sort=False):
        theirs = ref[ref.agent == agent]
        for step in STEPS:
            a, b = mine[f"regret_{step}"].to_numpy(), theirs[f"regret_{step}"].to_numpy()
            p = stats.mannwhitneyu(a, b, alternative="two-sided").pvalue if len(b) else np.nan
            out.append({
                "agent": agent, "regularization": reg, "step": step,
                "ref_n": len(b), "ref_median": np.median(b) if len(b) else np.nan,
                "ref_mean": b.mean() if len(b) else np.nan,
                "ours_n": len(a), "ours_median": np.median(a),
                "ours_q25": np.quantile(a, 0.25), "ours_q75": np.quantile(a, 0.75),
                "ours_mean": a.mean(), "ours_sem": a.std(ddof=1) / np.sqrt(len(a)),
                "mannwhitney_p": p,
            })
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reference", default=str(DEFAULT_REFERENCE))
    p.add_argument("--agents", default="mlp,ensemble+")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--regularization", default="sequential,sequential_linear_beta")
    p.add_argument("--ours", help="a CSV saved by --save: compare without recomputing")
    p.add_argument("--save", help="write our per-seed regrets here")
    args = p.parse_args(argv)
    ref_path = Path(args.reference)
    if not ref_path.is_file():
        print(f"error: --reference {ref_path} not found (the repository's copy is bench/data/reference_bandit_runs.csv)", file=sys.stderr)
        return 2
    if args.seeds < 1:
        print(f"error: --seeds must be >= 1, got {args.seeds}", file=sys.stderr)
        return 2
    ref = pd.read_csv(ref_path)
    if args.ours:
        ours = pd.read_csv(args.ours)
    else:
        agents = [a.strip() for a in args.agents.split(",") if a.strip()]
        regs = [r.strip() for r in args.regularization.split(",") if r.strip()]
        ours = run_ours(agents, args.seeds, regs)
    if args.save:
        ours.to_csv(args.save, index=False)
    table = compare(ref, ours)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
