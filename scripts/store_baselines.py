"""Stores a finished ``decision-bench testbed`` run as the package's baselines NAME.

    decision-bench testbed --sweep standard --agents mlp,ensemble,dropout,bbb,hypermodel,ensemble+,epinet \
        --out runs/baselines_standard
    python scripts/store_baselines.py runs/baselines_standard standard \
        --command "decision-bench testbed --sweep standard --agents ... (5 seeds)"

Several runs on the same problems (the core agents, then the hmc floor in a run of its
own) are stored together: give every run folder, then NAME, and one --command per run:

    python scripts/store_baselines.py runs/baselines_standard runs/baselines_standard_hmc standard \
        --command "decision-bench testbed ... (core agents)" --command "decision-bench testbed --agents hmc ..."

A finished ``decision-bench reproduce`` folder stores both sides: its testbed rows and
its bandit rows (NAME_bandit.csv, and a "bandit" record in NAME.json), which
``decision-bench leaderboard --bandit`` compares with:

    decision-bench reproduce --preset standard --out runs/baselines_standard_reproduce
    python scripts/store_baselines.py runs/baselines_standard_reproduce standard-reproduce \
        --command "decision-bench reproduce --preset standard --out runs/baselines_standard_reproduce"

writes decision_bench/experiments/baselines/NAME.csv (+ .csv.sha256) and NAME.json
(``experiments.baselines.store_baselines``), which ``decision-bench leaderboard``
reads. Commit them with the code that made them: tests/experiments/test_stored_baselines.py
recomputes a sample of their rows.
"""

import argparse
import sys

from decision_bench.experiments.baselines import NAME_RULE, STORED_DIR, load_baselines, store_baselines
from decision_bench.experiments.store import CorruptCellFile


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+", help="the folders of finished decision-bench testbed (or reproduce) runs")
    parser.add_argument("name", help=f"the baselines' name, e.g. the sweep's (standard, paper2d): {NAME_RULE}")
    parser.add_argument(
        "--command", required=True, action="append",
        help="the command that made each run, recorded as is (once per run folder, in their order)",
    )
    parser.add_argument("--folder", default=str(STORED_DIR), help="where to store (default: the package's)")
    args = parser.parse_args()
    try:
        path = store_baselines(args.run_dirs, args.folder, args.name, args.command)
    except (ValueError, CorruptCellFile) as error:  # an unfinished run, a bad name: one line, nothing stored
        print(f"store_baselines.py: error: {error}", file=sys.stderr)
        return 2
    stored = load_baselines(path)
    seconds = {a: r["wall_seconds"] for a, r in stored.meta["agents"].items()}
    print(f"stored {len(stored.rows)} rows of {', '.join(stored.agents)} in {path}; wall seconds {seconds}")
    if stored.has_bandit:
        print(f"and {len(stored.bandit_rows)} bandit rows of {', '.join(stored.bandit_agents)} in "
              f"{path.with_name(path.stem + '_bandit.csv')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
