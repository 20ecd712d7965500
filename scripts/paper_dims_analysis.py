"""Paper 000's Figs. 16-17 from the stored sets: bandit regret at d = 2, 10 and 50 against
the d_KL of the one 2-D testbed (paper2d).

    python scripts/paper_dims_analysis.py --out runs/figs16_17

Reads the stored baselines ``paper`` (the bandit at d = 50, N = 1000) and ``paper-dims``
(d = 2 and 10, N = 20 d; both 20 seeds of 50,000 steps, beta = 0.1, the same agents at
the same paper defaults), keeps the agents that have bandit rows at every dimension, and
writes OUT/testbed.csv (the ``paper`` set's paper2d rows of those agents) and
OUT/bandit.csv (their bandit rows at the three dimensions); then runs the analysis
(``decision_bench.analysis.analyze``): OUT/report.md, OUT/correlations.csv,
OUT/regret_by_dimension.csv and the figures (fig16_regret_vs_dkl1_by_dim,
fig17_regret_vs_dkl10_by_dim); and each dimension alone in OUT/d<d>/ (its report.md
has every level: (agent, seed) points, agent means, medians and mean logs of regret).
--sets names other stored sets or NAME.json paths.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from decision_bench.analysis import analyze
from decision_bench.experiments.baselines import load_baselines


def combined_rows(names: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """(testbed rows, bandit rows, agents) of the stored sets ``names``: the testbed rows
    of the first set, the bandit rows of all, restricted to the agents with bandit rows
    at every input dimension found. Raises ValueError naming a set without bandit rows,
    two sets holding the same (agent, input_dim), or testbed rows that differ."""
    sets = [load_baselines(name) for name in names]
    for stored in sets:
        if not stored.has_bandit:
            raise ValueError(f"stored set {stored.name!r} has no bandit rows")
    bandit = pd.concat([stored.bandit_rows for stored in sets], ignore_index=True)
    held = bandit.groupby(["agent", "input_dim"])["seed"].nunique()
    per_set = [s.bandit_rows.groupby(["agent", "input_dim"]).size().index for s in sets]
    for i, first in enumerate(per_set):
        for later in per_set[i + 1:]:
            shared = first.intersection(later)
            if len(shared):
                raise ValueError(f"two sets hold bandit rows of the same (agent, input_dim): {list(shared)}")
    dims = sorted(bandit["input_dim"].unique())
    agents = sorted(a for a, group in held.groupby(level=0) if len(group) == len(dims))
    testbed = sets[0].rows
    for stored in sets[1:]:
        # The testbed side is one 2-D testbed: every set holding rows of an agent must
        # hold the same rows (the paper-dims run reuses the paper set's cells).
        for agent in agents:
            mine = stored.rows[stored.rows["agent"] == agent].reset_index(drop=True)
            first = testbed[testbed["agent"] == agent].reset_index(drop=True)
            if len(mine) and not mine["kl"].equals(first["kl"]):
                raise ValueError(f"{stored.name!r} and {sets[0].name!r} hold different testbed rows of {agent}")
    return (testbed[testbed["agent"].isin(agents)], bandit[bandit["agent"].isin(agents)], agents)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="results folder (written: testbed.csv, bandit.csv, analysis)")
    parser.add_argument("--sets", default="paper,paper-dims", help="comma-separated stored sets (default: paper,paper-dims)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples per correlation")
    args = parser.parse_args(argv)
    try:
        testbed, bandit, agents = combined_rows([s.strip() for s in args.sets.split(",") if s.strip()])
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    testbed.to_csv(out / "testbed.csv", index=False)
    bandit.to_csv(out / "bandit.csv", index=False)
    dims = ", ".join(str(int(d)) for d in sorted(bandit["input_dim"].unique()))
    print(f"{len(agents)} agents with bandit rows at d = {dims}: {', '.join(agents)}")
    result = analyze(out, num_resamples=args.resamples, seed=0)
    for dim in sorted(bandit["input_dim"].unique()):
        part = out / f"d{int(dim)}"
        part.mkdir(exist_ok=True)
        testbed.to_csv(part / "testbed.csv", index=False)
        bandit[bandit["input_dim"] == dim].to_csv(part / "bandit.csv", index=False)
        analyze(part, num_resamples=args.resamples, seed=0)
    by_dim = out / "regret_by_dimension.csv"
    if by_dim.exists():
        print(pd.read_csv(by_dim).to_string(index=False))
    print(f"written: {out}/report.md, {out}/regret_by_dimension.csv, {out}/d<d>/report.md"
          + ("" if result.figures_skipped else ", figures"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
