"""``decision-bench store-baselines``: finished runs as a baselines set you can share and compare with.

    decision-bench testbed --sweep quick --agents mlp,ensemble+ --out runs/lab_baselines
    decision-bench store-baselines runs/lab_baselines lab \\
        --command "decision-bench testbed --sweep quick --agents mlp,ensemble+ --out runs/lab_baselines"
    decision-bench leaderboard --agent-file my_agent.py --baselines lab.json --out runs/board

writes NAME.csv (the rows, with its NAME.csv.sha256 checksum file) and NAME.json (what
made them: the commands, the package versions, the problems, each agent's fingerprint
and wall seconds) into --folder, the current folder by default; ``decision-bench
leaderboard --baselines FOLDER/NAME.json`` then scores any agent on the very same
problems, paired. The three files are the whole set: copy them to share it.

Several runs on the same problems (the core agents, then the hmc floor in a run of its
own) are stored together: give every run folder, then NAME, and one --command per run
folder, in their order. A finished ``decision-bench reproduce`` folder stores both sides:
its testbed rows and its bandit rows (NAME_bandit.csv and a "bandit" record in
NAME.json), which ``leaderboard --bandit`` compares with.

An unfinished run, runs on other problems, an agent in two runs, or a NAME that is not a
plain file name is refused in one line before anything is written; storing a NAME that
is already in the folder replaces that set (an interruption leaves the old set or none,
never a mix). The package's own sets are stored by its maintainers with ``--folder
decision_bench/experiments/baselines`` from a checkout
(``experiments.baselines.store_baselines``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from decision_bench.cli.arguments import add_command

__all__ = ["register", "run"]


def register(subparsers) -> argparse.ArgumentParser:
    """Adds ``store-baselines`` to ``subparsers`` (from ArgumentParser.add_subparsers())."""
    from decision_bench.experiments.baselines import NAME_RULE  # noqa: PLC0415

    parser = add_command(
        subparsers, "store-baselines",
        "store finished testbed or reproduce runs as a baselines set for leaderboard --baselines",
        __doc__.splitlines()[0], "\n".join(__doc__.splitlines()[1:]),
    )
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                        help="the folders of finished decision-bench testbed (or reproduce) runs")
    parser.add_argument("name", metavar="NAME", help=f"the set's name: {NAME_RULE}")
    parser.add_argument(
        "--command", required=True, action="append", dest="commands", metavar="TEXT",
        help="the command that made each run, recorded as is (once per run folder, in their order)",
    )
    parser.add_argument(
        "--folder", default=".",
        help="where to write NAME.json, NAME.csv and NAME.csv.sha256 (created if missing; the package's "
        "own sets: decision_bench/experiments/baselines in a checkout)",
    )
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Stores the set; prints what it holds and the leaderboard command that reads it.
    Bad input raises ValueError (the program prints it as one line, exit status 2)."""
    from decision_bench.experiments.baselines import load_baselines, store_baselines  # noqa: PLC0415
    from decision_bench.experiments.store import CorruptCellFile  # noqa: PLC0415

    for run_dir in args.run_dirs:
        if not Path(run_dir).is_dir():
            raise ValueError(f"RUN_DIR must be the folder of a finished testbed or reproduce run, got {run_dir!r} "
                             "(no such folder)")
    try:
        path = store_baselines(args.run_dirs, args.folder, args.name, args.commands)
    except CorruptCellFile as error:  # a cell file edited or truncated: nothing stored
        raise ValueError(f"a cell file of the run {error}; rerun the run's command to recompute it") from None
    stored = load_baselines(path)
    seconds = {a: r["wall_seconds"] for a, r in stored.meta["agents"].items()}
    print(f"stored {len(stored.rows)} rows of {', '.join(stored.agents)} in {path}; wall seconds {seconds}")
    if stored.has_bandit:
        print(f"and {len(stored.bandit_rows)} bandit rows of {', '.join(stored.bandit_agents)} in "
              f"{path.with_name(path.stem + '_bandit.csv')}")
    print(f"compare with it: decision-bench leaderboard --baselines {path} --agent-file FILE --out DIR"
          + (" [--bandit]" if stored.has_bandit else ""))
    return 0
