"""Paper 000's agent selection, run here: each agent's reference sweep scored by d_KL^agg.

    python scripts/paper_selection.py --agent mlp --estimate     # the cost first
    python scripts/paper_selection.py --agent mlp --out bench/data/selection_parts
    python scripts/paper_selection.py --agent mlp --out bench/data/selection_parts --save bench/data

Runs (or resumes, per study and setting) ``experiments.selection.run_selection`` on
the stated slice of paper2d (``selection_sweep``: d = 2, T in {1, 10, 100, 1000},
beta in {0.01, 0.1, 0.5}, tau 1 and 10 iid, seeds 0-4, 1000 test tau-samples and
1000 agent samples), prints one line per point (d_KL^1, d_KL^10, d_KL^agg with its
standard error, the default and the selected point marked) and the verdict: is the
registered default within noise of the selected point, paired over the same problems.
--out bench/data/selection_parts keeps each finished setting in the repository (commit
them), so a selection longer than a sitting resumes on another machine
(bench/data/selection_parts/README.md). --save DIR writes DIR/selection_<agent>.csv (the per-point table) and
DIR/selection_<agent>_rows.csv (every row). sgmcmc scores its own smaller slice
(``selection.AGENT_SLICES``: T in {10, 100}, beta = 0.1). --num-trains / --temperatures /
--seeds choose another slice (say so wherever its figures are quoted).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from decision_bench.experiments.estimate import cores_available
from decision_bench.experiments.selection import (
    LEFT_OUT, PAPER_STUDIES, default_against_best, estimate_selection, planned_studies, run_selection,
    selection_sweep, selection_table, slice_of,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", required=True, choices=sorted(PAPER_STUDIES))
    parser.add_argument("--out", help="folder for each finished setting's rows (resumable)")
    parser.add_argument("--save", help="folder for selection_<agent>.csv and selection_<agent>_rows.csv")
    parser.add_argument("--estimate", action="store_true", help="print the cost and stop")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--num-trains", type=int, nargs="+", help="default: the agent's slice (slice_of)")
    parser.add_argument("--temperatures", type=float, nargs="+", help="default: the agent's slice (slice_of)")
    args = parser.parse_args(argv)
    num_trains, temperatures = slice_of(args.agent)
    args.num_trains = args.num_trains or list(num_trains)
    args.temperatures = args.temperatures or list(temperatures)
    sweep = selection_sweep(args.num_trains, args.temperatures, args.seeds)
    studies = planned_studies(args.agent)
    print(f"{args.agent}: {len(studies)} studies, {sum(len(s.points()) for s in studies)} points, "
          f"{len(sweep.settings)} settings x {args.seeds} seeds")
    for note in LEFT_OUT.get(args.agent, ()):
        print(f"  not here: {note}")
    print(estimate_selection(args.agent, sweep, args.seeds, parallel=cores_available()).line())
    if args.estimate:
        return 0
    if not args.out:
        parser.error("--out is required unless --estimate (the folder a rerun resumes from)")
    start = time.perf_counter()
    rows = run_selection(args.agent, sweep, args.seeds, resume_dir=Path(args.out) / args.agent, progress=True)
    table = selection_table(rows)
    print(f"{'point':<58} {'d_KL^1':>8} {'d_KL^10':>8} {'d_KL^agg':>17}")
    for r in table.itertuples():
        mark = " <- selected" if r.best else ""
        mark += " (default)" if r.default else ""
        print(f"{r.point:<58} {r.dkl_1:8.4f} {r.dkl_10:8.4f} {r.dkl_agg:8.4f} +- {r.dkl_agg_stderr:.4f}{mark}")
    print(default_against_best(args.agent, rows).line())
    print(f"took {time.perf_counter() - start:.0f} s")
    if args.save:
        save = Path(args.save)
        table.to_csv(save / f"selection_{args.agent}.csv", index=False)
        rows.to_csv(save / f"selection_{args.agent}_rows.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
