"""``decision-bench reproduce`` and ``decision-bench demo``: the main job in one command.

``reproduce(preset, out)`` runs (or resumes) the preset's testbed and bandit cells
(``decision_bench.experiments.run_preset``) and then the analysis
(``decision_bench.analysis.analyze``): correlations of joint and marginal
prediction quality with regret (paper 000, Sec. 5.2), figures and a report.

Outputs: DIR/testbed.csv, DIR/bandit.csv, DIR/correlations.csv, the figures,
DIR/report.md and DIR/run.json (preset, versions, timings).
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import pandas as pd

from decision_bench._src.console import HelpFormatter
from decision_bench._src.memory import check_resamples
from decision_bench._src.tensorboard import TensorBoardLog
from decision_bench.analysis import analyze
from decision_bench.analysis.correlation import check_num_resamples
from decision_bench.analysis.pipeline import headline
from decision_bench.cli.analyze import print_robustness, print_skewed_intervals
from decision_bench.cli.arguments import parse_agent_list
from decision_bench.experiments.executors import default_workers
from decision_bench.experiments.presets import PRESET_NAMES, PRESET_SCOPE, Preset
from decision_bench.experiments.estimate import format_duration
from decision_bench.experiments.reproduce import (
    bandit_rows,
    check_agents,
    claim_preset_dir,
    preset_estimate,
    run_preset,
)


def reproduce(
    preset: str | Preset = "demo",
    out: str | Path = "runs/demo",
    agents: tuple[str, ...] | None = None,
    agent_files: tuple[str, ...] = (),
    executor: str = "local",
    address: str | None = None,
    num_resamples: int = 1000,
    progress: bool = True,
    workers: int = 1,
    tensorboard: str | Path | None = None,
):
    """Runs (or resumes) a reproduction: the preset's cells, then the analysis; returns
    the analysis result (``decision_bench.analysis.analyze``).

    agents: registered names to run instead of the preset's; agent_files: user
    agent files (``experiments.reproduce.load_agent_file``), run next to them;
    workers: local worker processes (the results do not depend on it); tensorboard: a
    folder for TensorBoard event files (regret curves and d_KL as cells finish).
    """
    check_num_resamples(num_resamples)  # before hours of cells, not after
    # One claim of OUT (lock and manifest) for the cells and the analysis both;
    # run_preset's own claim inside it is the same run's, so it is re-entrant.
    with claim_preset_dir(preset, out, agents, agent_files, flag="--out") as out:
        board = None if tensorboard is None else TensorBoardLog(tensorboard)
        try:
            run_preset(preset, out, agents, agent_files, executor, address, progress, workers=workers,
                       on_cell_done=None if board is None else functools.partial(_log_cell, board))
        finally:
            if board is not None:
                board.close()
        return analyze(out, num_resamples=num_resamples, seed=0)


def _log_cell(board: TensorBoardLog, cell, rows: pd.DataFrame) -> None:
    if cell.kind == "testbed":
        board.testbed_rows(rows)
    else:
        board.bandit_rows(bandit_rows([(cell, rows)]))


def _print_summary(out: Path, result, preset: str | None = None) -> None:
    corr = result.correlations
    print(f"\nresults in {out}/: testbed.csv, bandit.csv, correlations.csv, report.md, figures")
    cols = ["metric", "pearson_log", "pearson_ci_low", "pearson_ci_high", "spearman", "n"]
    if "level" in corr.columns:
        cols = ["level"] + cols
    with pd.option_context("display.float_format", "{:.2f}".format, "display.width", 120):
        print(corr[cols].to_string(index=False))
    print_skewed_intervals(corr)
    if result.levels:
        print("\n" + headline(result.levels).replace("**", ""))
    print_robustness(result)
    if preset in PRESET_SCOPE:
        print(PRESET_SCOPE[preset])
    print(f"\nreport: {result.report}")


def register(subparsers) -> argparse.ArgumentParser:
    for name, help_text in (
        ("reproduce", "testbed + bandit + analysis, resumable (the papers' headline result)"),
        ("demo", "what `make demo` runs: reproduce --preset demo"),
    ):
        p = subparsers.add_parser(
            name, help=help_text, description=help_text, formatter_class=HelpFormatter
        )
        if name == "reproduce":
            p.add_argument("--preset", default="demo", choices=PRESET_NAMES,
                           help="demo: < 3 min on 2 cores; quick: < 30 min; standard: the papers' headline "
                           "at laptop size (<= 60 min); paper: the papers' full setting; robustness: paper 000 "
                           "Sec. 6 and Figs. 16-17 across generative models and bandit dimensions (cluster-sized); "
                           "robustness-quick: a slice of it, < 45 min on 2 cores")
        p.add_argument("--out", default=f"runs/{name}", help="run directory (re-run the same command to resume; another run's folder is refused)")
        p.add_argument("--agents", default=None,
                       help="comma-separated registered agents instead of the preset's")
        p.add_argument("--agent-file", action="append", default=[], dest="agent_files",
                       help="a Python file defining make_agent(spec) (and NAME); may repeat")
        p.add_argument("--executor", default="local", choices=("local", "ray"))
        p.add_argument("--address", default=None, help="Ray cluster address (with --executor ray)")
        p.add_argument("--workers", default="auto",
                       help="cells computed at once by local worker processes (with --executor local): "
                       f"a count >= 1, or auto (the cores available, at most 4; here {default_workers()})")
        p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (>= 200: 10 beyond each bound of the 90%% interval)")
        p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
        p.add_argument("--tensorboard", metavar="DIR", default=None,
                       help="also log regret curves and d_KL as TensorBoard event files in DIR as cells finish "
                       "(pip install 'decision-bench[tensorboard]')")
        p.add_argument("--estimate", action="store_true",
                       help="print the cells, bandit steps and estimated wall time of every preset (this one's "
                       "with its --agents and --workers) and run nothing")
        p.set_defaults(func=_run, preset_name="demo" if name == "demo" else None)
    return p


def estimate_table(workers: int) -> pd.DataFrame:
    """One row per preset: its cells, fits, bandit seed-steps and estimated wall time
    (cold compilation cache) with ``workers`` local worker processes."""
    rows = []
    for name in PRESET_NAMES:
        estimate = preset_estimate(name, workers=workers)
        rows.append({
            "preset": name, "testbed cells": estimate.testbed_cells, "fits": estimate.testbed_problems,
            "bandit runs": estimate.bandit_cells, "seed-steps": estimate.bandit_seed_steps,
            "cores": estimate.parallel, "compiling": format_duration(estimate.compile_seconds / estimate.parallel),
            "wall (estimate)": format_duration(estimate.wall_seconds),
        })
    return pd.DataFrame(rows)


def print_estimates(preset: str, agents, agent_files, workers: int) -> None:
    """``reproduce --estimate``: every preset's estimate, then the chosen one's line."""
    table = estimate_table(workers)
    print(table.to_string(index=False))
    estimate = preset_estimate(preset, None, agents, agent_files, workers)
    print(f"--preset {preset}: {estimate.line()}")


def _workers(value: str, executor: str) -> int:
    """--workers as a count: "auto" is default_workers() locally and 1 with Ray (Ray
    places its own tasks)."""
    if value.strip().lower() == "auto":
        return default_workers() if executor == "local" else 1
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"workers must be a count >= 1 or 'auto', got {value!r}")
    if count > 1 and executor != "local":
        raise ValueError(f"workers is only used with --executor local, got --workers {value}")
    return count


def _run(args: argparse.Namespace) -> int:
    preset = args.preset_name or args.preset
    # None (not given): the preset's agents; given, the shared rule (an empty list or a
    # repeated name is refused rather than falling back to the whole preset).
    agents = None if args.agents is None else parse_agent_list(args.agents)
    check_num_resamples(args.resamples, name="resamples")
    check_resamples("--resamples", args.resamples)
    workers = _workers(args.workers, args.executor)
    if agents:
        check_agents(agents)
    agent_files = tuple(args.agent_files)
    if getattr(args, "estimate", False):
        print_estimates(preset, agents, agent_files, workers)
        return 0
    # Claimed before the first line is printed: a refused folder is one line.
    with claim_preset_dir(preset, args.out, agents, agent_files, flag="--out") as out:
        print(f"decision-bench reproduce --preset {preset}: writing to {out}/ (re-run to resume)", file=sys.stderr)
        print(preset_estimate(preset, out, agents, agent_files, workers).line(), file=sys.stderr)
        result = reproduce(
            preset,
            out,
            agents=agents,
            agent_files=agent_files,
            executor=args.executor,
            address=args.address,
            num_resamples=args.resamples,
            progress=not args.no_progress,
            workers=workers,
            tensorboard=args.tensorboard,
        )
    _print_summary(out, result, preset if isinstance(preset, str) else None)
    return 0
