"""``decision-bench tune AGENT --grid NAME=V1,V2 ...``: a hyperparameter grid as one
vmapped program per setting (``decision_bench.evaluation.tune``), written as
tune.csv (one row per grid point, setting, design and seed) and tune_summary.csv
(one row per grid point, the best marked). Each finished setting is stored at once
in OUT/tune_settings/; after Ctrl-C or a kill, the same command resumes from the
settings already done."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

import pandas as pd

from decision_bench._src.files import write_results_csv
from decision_bench._src.memory import check_count
from decision_bench._src.rundir import claim_run_dir
from decision_bench.cli.arguments import add_agent_options, add_command, parse_settings, seed_count
from decision_bench.evaluation.sweeps import SWEEP_NAMES, get_sweep
from decision_bench.experiments.agent_files import host_agent_names, read_agent_files
from decision_bench.experiments.estimate import check_testbed_memory
from decision_bench.agents.registry import names
from decision_bench.evaluation.tune import PAPER_GRIDS, check_grid, grid_points, tune


def _parse_grid(items: Sequence[str]) -> dict[str, tuple[float, ...]]:
    """["l2=0.1,1,10", "learning_rate=1e-3"] -> {"l2": (0.1, 1.0, 10.0), ...}.

    A name given in two --grid flags is refused (the second would silently replace
    the first); the values themselves are checked by evaluation.tune.check_grid."""
    grid = {}
    for item in items:
        name, sep, values = item.partition("=")
        try:
            parsed = tuple(float(v) for v in values.split(",") if v.strip())
        except ValueError:
            parsed = ()
        if not sep or not name.strip() or not parsed:
            raise ValueError(f"--grid must look like NAME=V1,V2,... (numbers), got {item!r}")
        if name.strip() in grid:
            raise ValueError(f"--grid names {name.strip()!r} twice: give all its values in one --grid")
        grid[name.strip()] = parsed
    return grid


def register(subparsers) -> argparse.ArgumentParser:

    p = add_command(subparsers, "tune",
                    "a grid of an agent's real-valued hyperparameters as one vmapped program (App. C)", __doc__)
    p.add_argument("agent", help="a registered agent name, or the NAME of an --agent-file")
    add_agent_options(p, "; fixed for every grid point (a field cannot be both --set and --grid)")
    p.add_argument("--grid", action="append", default=[], metavar="NAME=V1,V2,...",
                   help="values of one hyperparameter; repeat for a product grid "
                   "(default: the paper's grid for the agent, where App. C gives one)")
    p.add_argument("--sweep", default="quick", choices=SWEEP_NAMES, help="testbed settings")
    p.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (None: the sweep's)")
    p.add_argument("--num-test", type=int, default=1000, help="test tau-samples per problem")
    p.add_argument("--num-models", type=int, default=1000, help="agent draws per estimate")
    p.add_argument("--out", required=True, help="output folder: tune.csv and tune_summary.csv")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=run_command)
    return p


def _check_sizes(args: argparse.Namespace, num_points: int) -> None:
    """The counts named by their flags, and a grid that cannot fit in memory refused
    before any work: every point x seed of a setting is one vmapped program."""
    for flag in ("--num-test", "--num-models"):
        check_count(flag, getattr(args, flag[2:].replace("-", "_")))
    sweep = get_sweep(args.sweep)
    check_testbed_memory(sweep, 1, seed_count(args.seeds, sweep.num_seeds), args.num_test, points=num_points,
                         what="this tune run")


def run_command(args: argparse.Namespace) -> int:

    files = {f.name: f for f in read_agent_files(getattr(args, "agent_files", ()), registered=names())}
    if args.agent not in names() and args.agent not in files:
        raise ValueError(f"unknown agent {args.agent!r} (known: {', '.join(names() + tuple(files))})")
    unused = [f"{name!r} ({f.path})" for name, f in files.items() if name != args.agent]
    if unused:
        raise ValueError(f"--agent-file defines {', '.join(unused)}, which is not the agent tuned ({args.agent!r})")
    if args.agent in host_agent_names(files.values()):
        # Its options are Python values its own code reads: nothing to vmap as a grid.
        raise ValueError(
            f"tune runs a grid as one compiled program, which a host agent ({args.agent!r}: agent(data, spec) -> "
            f"sampler) cannot join; compare its options with one testbed run each, e.g. "
            f"decision-bench testbed --agents {args.agent} --agent-file {files[args.agent].path} --set {args.agent}.OPTION=VALUE"
        )
    settings = parse_settings(getattr(args, "settings", ()), (args.agent,), tuple(files.values()))
    fixed = settings.get(args.agent, {})
    if args.grid:
        grid = _parse_grid(args.grid)
    elif args.agent in PAPER_GRIDS:
        grid = PAPER_GRIDS[args.agent]
    else:
        raise ValueError(
            f"--grid is needed for {args.agent!r}: the paper gives no real-valued grid for it "
            f"(paper grids: {sorted(PAPER_GRIDS)})"
        )
    both = sorted(set(fixed) & set(grid))
    if both:
        raise ValueError(f"--set and --grid both give {both}: a hyperparameter is either fixed or tuned")
    agent_file = files.get(args.agent)
    make_agent = None if agent_file is None else agent_file.make_agent
    # Before the folder is touched or anything compiles.
    grid = check_grid(args.agent, grid, fixed, make_agent)
    _check_sizes(args, len(grid_points(grid)))
    arguments = {"agent": args.agent, "--grid": grid, "--sweep": args.sweep, "--seeds": args.seeds,
                 "--num-test": args.num_test, "--num-models": args.num_models}
    if agent_file is not None:
        arguments["--agent-file"] = [agent_file.path]
    if settings:
        arguments["--set"] = settings
    with claim_run_dir(args.out, "tune", arguments) as out:
        print(f"tuning {args.agent} over {len(grid_points(grid))} points: {grid}", file=sys.stderr)
        rows, summary = tune(args.agent, grid, args.sweep, args.seeds,
                             num_test=args.num_test, num_models=args.num_models, overrides=fixed,
                             progress=not args.no_progress, resume_dir=out / "tune_settings",
                             make_agent=make_agent,
                             agent_fingerprint=None if agent_file is None else agent_file.fingerprint)
        write_results_csv(out / "tune.csv", rows)
        # The summary's checksum file records tune.csv's checksum: a kill between the two
        # writes leaves a pair that evaluation.tune.read_tune refuses, never a silent mix.
        write_results_csv(out / "tune_summary.csv", summary, summarises=out / "tune.csv")
    with pd.option_context("display.float_format", "{:.4g}".format, "display.width", 120):
        print(summary.to_string(index=False))
    print(f"wrote {out / 'tune.csv'} and {out / 'tune_summary.csv'}")
    return 0
