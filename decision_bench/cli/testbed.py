"""``decision-bench testbed``: fit and evaluate agents on a testbed sweep.

    decision-bench testbed --agents mlp,ensemble+ --sweep quick --seeds 3 --out DIR

writes DIR/testbed.csv (one row per agent, problem, design and seed; columns as
``run_testbed``) and DIR/testbed.json (package versions and the arguments),
shows progress, and prints the mean d_KL per agent and design with its standard
error, and its ratio to mlp's (as paper 000, Fig. 2) when mlp ran beside other agents.

    decision-bench testbed --agents mlp --input-dim 2 --num-train 3,30,300 \
        --temperature 0.01,0.1,0.5 --tau 1,10 [--kappa 2] --seeds 5 --out DIR

runs a custom grid instead of a named sweep (``sweeps.custom_sweep``): settings
are every (input dim, T, beta) of the product of the lists; designs are tau iid
for every --tau, plus (tau, kappa) for every --tau > 1 when --kappa is given.
--num-train and --temperature are required; --input-dim defaults to 2, --tau to
1,10, --seeds to 5. The grid flags and --sweep are mutually exclusive.

    decision-bench testbed --agents mlp,ensemble+ --sweep realdata [--datasets iris,wine] --out DIR

evaluates on real data instead (scikit-learn's bundled data sets, or .csv/.npz
files given to --datasets): there is no environment, so the score is the NLL of
marginal (tau 1) and dyadic joint (tau 10, kappa 2) predictions. It writes
DIR/realdata.csv (columns as ``run_realdata``) and DIR/realdata.json.

    decision-bench testbed --agents mlp,ensemble+,hmc --sweep quick --reference hmc --out DIR

also fits the reference agent (here hmc: the posterior of the generative model
itself) on the same environments and data, seed by seed, and adds the columns
``run_testbed`` documents for a reference (reference, agreement, tv, tv_joint,
tv_joint_stderr, kl_to_reference, kl_to_reference_stderr, reference_converged,
fidelity_seconds): each agent's distance to the reference's predictive
(evaluation/fidelity.py). ``--reference-option NAME=VALUE`` (repeatable)
overrides the reference's settings, e.g. ``--reference-option num_chains=2``.

Resuming. The work is split into cells (``decision_bench.experiments.testbed_cell``), one per
agent and setting (input dim, T, beta; for realdata: data set and T) with all
its seeds, each stored under DIR/cells/ as soon as it is finished (one verified
JSON file per cell, written atomically, as ``reproduce`` does). Running the same
command again skips the finished cells (a corrupt cell file is warned about and
recomputed) and rebuilds the CSV from the cells. A cell's id derives from every
argument that changes its rows (agent, setting -- including the generative
model's activation and hidden sizes, so the families of the robustness sweeps
never share a cell --, designs, seeds, --num-test, --num-models, --method; a
data file's contents), so cells of a run with other arguments are never mixed
in. DIR belongs to one run: a testbed command with other arguments (or another
command) on it is refused in one line naming the differences (DIR/run_manifest.json).
"""

from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from decision_bench._src.files import atomic_write_text, write_results_csv
from decision_bench._src.memory import check_count
from decision_bench._src.rundir import claim_run_dir
from decision_bench._src.tensorboard import TensorBoardLog
from decision_bench._src.validation import repeated
from decision_bench.agents import names as agent_registry
from decision_bench.cli.arguments import (
    add_command,
    add_agent_options,
    add_display_options,
    parse_settings,
    seed_count,
)
from decision_bench.evaluation.kl import METHODS
from decision_bench.evaluation.realdata import realdata_sweep
from decision_bench.evaluation.runner import ReferenceFits
from decision_bench.evaluation.sweeps import SWEEP_NAMES, get_sweep
from decision_bench.cli.testbed_flags import (
    experiment_from_flags, grid_meta, grid_sweep, parse_agents, parse_reference, run_meta,
)
from decision_bench.experiments.agent_files import AgentFile, file_pairs, host_agent_names, read_agent_files
from decision_bench.experiments.cells import Cell
from decision_bench.experiments.estimate import check_testbed_memory
from decision_bench.experiments.executors import run_cells
from decision_bench.experiments.presets import testbed_sweep
from decision_bench.experiments.realdata_cell import compute_realdata_cell, describe_realdata_cell, realdata_cells
from decision_bench.experiments.reproduce import with_agent_config, with_settings
from decision_bench.experiments.store import ResultsStore
from decision_bench.experiments.testbed_cell import compute_testbed_cell, describe_testbed_cell, sweep_cells

BASELINE = "mlp"
REALDATA = "realdata"
DEFAULT_SWEEP = "quick"
CELLS_DIR = "cells"  # under --out: one verified file per finished cell
_EPILOG = """\
examples:
  decision-bench testbed --agents mlp,ensemble+ --sweep quick --seeds 3 --out runs/tb
  decision-bench testbed --agents mlp --input-dim 2 --num-train 3,30,300 \\
      --temperature 0.01,0.1,0.5 --tau 1,10 --kappa 2 --seeds 5 --out runs/grid

custom grid: settings are input-dim x num-train x temperature; designs are tau iid
for each --tau, plus (tau, kappa) for each --tau > 1 when --kappa is given. Give
either --sweep or grid flags, not both; with grid flags --num-train and
--temperature are required, --input-dim defaults to 2, --tau to 1,10, --seeds to 5.
"""


def register(subparsers) -> argparse.ArgumentParser:
    """Adds the ``testbed`` subcommand to an argparse subparsers object."""
    parser = add_command(subparsers, "testbed", "offline d_KL of marginal and joint predictions on a testbed sweep",
                         __doc__.splitlines()[0], _EPILOG)
    parser.add_argument("--agents", default=None,
                        help="comma-separated agent names, registered or an --agent-file's (default: mlp)")
    add_agent_options(parser)
    parser.add_argument(
        "--config", default=None, metavar="FILE",
        help="an experiment file (TOML; `reproduce --print-config` writes one): run its agents, testbed "
        "sweeps, seeds, num_test, num_models and testbed overrides; the flags it sets (--agents, --sweep, "
        "the grid flags, --seeds, --num-test, --num-models, --datasets) are refused beside it, the others "
        "(--agent-file, --set, --method, --reference) apply on top",
    )
    parser.add_argument(
        "--sweep",
        default=None,
        choices=SWEEP_NAMES + (REALDATA,),
        help=f"named sweep (default: {DEFAULT_SWEEP}, unless grid flags are given)",
    )
    grid = parser.add_argument_group("custom grid (instead of --sweep)")
    grid.add_argument(
        "--input-dim", metavar="D[,D...]", help="input dimensions, integers >= 1 (default: 2)"
    )
    grid.add_argument(
        "--num-train", metavar="T[,T...]", help="training set sizes, integers >= 0 (required in a grid)"
    )
    grid.add_argument(
        "--temperature", metavar="BETA[,BETA...]", help="temperatures, numbers > 0 (required in a grid)"
    )
    grid.add_argument(
        "--tau", metavar="TAU[,TAU...]", help="test tau, integers >= 1, each scored iid (default: 1,10)"
    )
    grid.add_argument(
        "--kappa",
        metavar="KAPPA",
        help="also score (tau, kappa) for every tau > 1; an integer >= 1 (default: iid only)",
    )
    parser.add_argument(
        "--datasets",
        default=None,
        help="--sweep realdata only: comma-separated bundled names or .csv/.npz files "
        "(default: iris,wine,breast_cancer,digits)",
    )
    parser.add_argument(
        "--seeds", type=int, default=None, help="seeds 0..N-1 (default: the sweep's; 5 for a custom grid)"
    )
    parser.add_argument("--out", required=True, help="output directory (created if missing)")
    parser.add_argument("--num-test", type=int, default=None, help="test tau-samples per problem (default: 1000)")
    parser.add_argument("--num-models", type=int, default=None, help="agent draws per estimate (default: 1000)")
    parser.add_argument("--method", default="auto", choices=METHODS, help="likelihood estimator")
    parser.add_argument(
        "--reference",
        default=None,
        metavar="AGENT",
        help="also score each agent's fidelity to this agent's posterior, fitted on the same "
        "problems (e.g. hmc); adds columns agreement, tv, tv_joint, kl_to_reference",
    )
    parser.add_argument(
        "--reference-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting of the --reference agent (repeatable), e.g. num_chains=2",
    )
    add_display_options(parser, "bar", "the mean d_KL per agent, design and setting", "as cells finish")
    parser.set_defaults(func=main)
    return parser


def print_summary(frame: pd.DataFrame, sweep_name: str, baseline: str = BASELINE) -> None:
    """The console summary of a testbed run: absolute d_KL first, the ratio to the baseline last."""
    from decision_bench.analysis.tables import design_summary  # the analysis package only when printing

    table = design_summary(frame, baseline)
    ratio = f"; vs_{baseline}: mean / {baseline}'s mean" if f"vs_{baseline}" in table else ""
    print(
        f"mean d_KL per agent and test design ({len(frame)} rows, sweep {sweep_name}; mean over settings of "
        f"the per-setting means over seeds, stderr its standard error over seeds{ratio}):"
    )
    print(table.to_string(float_format=lambda v: f"{v:.4g}"))


def _realdata_plan(
    args: argparse.Namespace, agents: tuple[str, ...], configs: Mapping[str, Mapping[str, Any]],
    files: Sequence[AgentFile],
) -> tuple[tuple[str, ...], tuple[int, ...], tuple[Cell, ...]]:
    """(data sets, seeds, cells) of --sweep realdata; ValueError for bad arguments."""

    sweep = realdata_sweep()
    datasets = (
        sweep.datasets
        if args.datasets is None
        else tuple(d.strip() for d in args.datasets.split(",") if d.strip())
    )
    if not datasets:
        raise ValueError(f"--datasets must name at least one data set, got {args.datasets!r}")
    if repeats := repeated(datasets):
        raise ValueError(f"--datasets names {repeats} twice, got {args.datasets!r}; give each data set once")
    seeds = tuple(range(seed_count(args.seeds, sweep.num_seeds)))
    cells = realdata_cells(
        agents, datasets, sweep.num_train, seeds, sweep.designs,
        args.num_test, args.num_models, args.method, configs, files,
    )
    return datasets, seeds, cells


def _main_realdata(
    args: argparse.Namespace, out: Path, datasets: tuple[str, ...], seeds: tuple[int, ...], cells: tuple[Cell, ...]
) -> int:
    store = ResultsStore(out / CELLS_DIR)
    pairs = _file_pairs(cells, args)
    frame = run_cells(
        cells,
        functools.partial(compute_realdata_cell, agent_files=pairs) if pairs else compute_realdata_cell,
        store,
        progress=not args.no_progress,
        results_csv=out / "realdata.csv",
        announce=True,
        host_agents=host_agent_names(getattr(args, "loaded_agent_files", ())),
        desc=REALDATA, unit="setting", describe=describe_realdata_cell,
    )
    frame = with_agent_config(frame, cells)
    write_results_csv(out / "realdata.csv", frame)
    meta = run_meta(args, REALDATA, seeds, cells, datasets=list(datasets))
    atomic_write_text(out / "realdata.json", json.dumps(meta, indent=2) + "\n")
    print(f"mean NLL ({len(frame)} rows, sweep {REALDATA}):")
    from decision_bench.analysis.tables import realdata_table  # the analysis package only when printing

    print(realdata_table(frame).round(3).to_string())
    print(f"wrote {out / 'realdata.csv'}")
    return 0


def _file_pairs(cells: Sequence[Cell], args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    """((name, path), ...) of the agent files whose agents have cells."""
    return file_pairs(getattr(args, "loaded_agent_files", ()), {cell.agent for cell in cells})


def main(args: argparse.Namespace) -> int:
    # Every argument is validated (and the cells built) before anything is written.
    experiment = experiment_from_flags(args)
    custom = grid_sweep(args)
    sweep = custom if custom is not None else (getattr(args, "sweep", None) or DEFAULT_SWEEP)
    if sweep != REALDATA and getattr(args, "datasets", None) is not None:
        raise ValueError("--datasets is only used with --sweep realdata")
    check_count("--num-test", args.num_test)
    check_count("--num-models", args.num_models)
    if args.seeds is not None:
        check_count("--seeds", args.seeds)
    files = read_agent_files(getattr(args, "agent_files", ()), registered=agent_registry())
    args.loaded_agent_files = files
    if args.agents is None:
        args.agents = ",".join(experiment.agents) if experiment is not None else "mlp"
    agents = parse_agents(args.agents, files)
    settings = parse_settings(getattr(args, "settings", ()), agents, files)
    # {agent: {hyperparameter: value}}: the file's testbed overrides with --set over them.
    configs = settings if experiment is None else {
        agent: dict(items) for agent, items in with_settings(experiment, settings).testbed_overrides
    }
    extra = {}
    if files:
        extra["--agent-file"] = [f.path for f in files]
    if settings:
        extra["--set"] = settings
    if sweep == REALDATA:
        if getattr(args, "reference", None) is not None:
            raise ValueError("--reference needs a testbed sweep (real data has no reference posterior)")
        datasets, seeds, cells = _realdata_plan(args, agents, configs, files)
        arguments = {
            "--sweep": REALDATA, "--datasets": list(datasets), "--agents": list(agents),
            "--seeds": len(seeds), "--num-test": args.num_test, "--num-models": args.num_models,
            "--method": args.method, **extra,
        }
        with claim_run_dir(
            args.out, "testbed", arguments, legacy_check=functools.partial(_legacy_difference, "realdata.json", cells)
        ) as out:
            return _main_realdata(args, out, datasets, seeds, cells)
    if experiment is not None:
        sweeps = [testbed_sweep(name) for name in experiment.testbed_sweeps]
        args.seeds = experiment.testbed_seeds
    else:
        sweeps = [get_sweep(sweep) if isinstance(sweep, str) else sweep]
    for one in sweeps:
        # Before the seeds' list is made.
        check_testbed_memory(one, len(agents), seed_count(args.seeds, one.num_seeds), args.num_test)
    seeds = tuple(range(seed_count(args.seeds, sweeps[0].num_seeds)))
    reference, reference_options = parse_reference(
        getattr(args, "reference", None), getattr(args, "reference_option", [])
    )
    cells = tuple(
        cell
        for one in sweeps
        for cell in sweep_cells(
            agents, one, seeds, num_test=args.num_test, num_models=args.num_models, method=args.method,
            reference=reference, reference_options=reference_options, agent_configs=configs,
            agent_files={f.name: f.sha256 for f in files},
        )
    )
    if experiment is None:
        arguments = {
            "--sweep": sweeps[0].name if custom is None else None,
            "grid": grid_meta(custom) if custom is not None else None,
            "--agents": list(agents),
            "--seeds": len(seeds), "--num-test": args.num_test, "--num-models": args.num_models,
        }
    else:
        # The file's testbed half: what changes a row (not its bandit half, nor its name).
        arguments = {"--config": {
            "agents": list(experiment.agents), "sweeps": list(experiment.testbed_sweeps),
            "seeds": experiment.testbed_seeds, "num_test": experiment.num_test,
            "num_models": experiment.num_models, "overrides": experiment.testbed_overrides,
        }}
    arguments.update({
        "--method": args.method, "--reference": reference, "--reference-option": reference_options, **extra,
    })
    name = "+".join(one.name for one in sweeps)
    with claim_run_dir(
        args.out, "testbed", arguments, legacy_check=functools.partial(_legacy_difference, "testbed.json", cells)
    ) as out:
        return _run_testbed_cells(args, out, name, custom, seeds, cells, reference, reference_options)


def _legacy_difference(meta_name: str, cells: Sequence[Cell], out: Path) -> str | None:
    """How a 0.2.0 testbed folder (testbed.json or realdata.json, no manifest) differs
    from this run, by the cell ids it recorded; None if it agrees."""
    other = "realdata.json" if meta_name == "testbed.json" else "testbed.json"
    if not (out / meta_name).exists():
        return f"it holds {other.split('.')[0]} results" if (out / other).exists() else None
    try:
        meta = json.loads((out / meta_name).read_text(encoding="utf-8"))
        saved_cells = list(meta["cells"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if saved_cells == [cell.id for cell in cells]:
        return None
    shown = ", ".join(f"{k} {meta.get(k)!r}" for k in ("sweep", "agents", "seeds", "num_test", "num_models", "method"))
    return f"its cells were another grid: {shown}"


def _run_testbed_cells(args, out, sweep_name, custom, seeds, cells, reference, reference_options) -> int:
    # One reference fit per setting, shared by the cells of all its agents.
    options = {} if reference is None else {"reference_fits": ReferenceFits()}
    if _file_pairs(cells, args):
        options["agent_files"] = _file_pairs(cells, args)
    compute = functools.partial(compute_testbed_cell, **options) if options else compute_testbed_cell
    board = None if getattr(args, "tensorboard", None) is None else TensorBoardLog(args.tensorboard)
    try:
        frame = run_cells(
            cells,
            compute,
            ResultsStore(out / CELLS_DIR),
            progress=not args.no_progress,
            on_cell_done=None if board is None else lambda cell, rows: board.testbed_rows(rows),
            results_csv=out / "testbed.csv",
            announce=True,
            host_agents=host_agent_names(getattr(args, "loaded_agent_files", ())),
            desc=f"testbed {sweep_name}", unit="setting", describe=describe_testbed_cell,
        )
        if board is not None:
            board.testbed_rows(frame)  # the reused cells' points too (not written twice)
    finally:
        if board is not None:
            board.close()
    frame = with_agent_config(frame, cells)
    write_results_csv(out / "testbed.csv", frame)
    meta = run_meta(args, sweep_name, seeds, cells)
    if reference is not None:
        meta["reference"] = {"agent": reference, "options": reference_options}
    if custom is not None:
        meta["grid"] = grid_meta(custom)
    atomic_write_text(out / "testbed.json", json.dumps(meta, indent=2) + "\n")
    print_summary(frame, sweep_name)
    bad = frame[~frame["params_finite"] | (frame["fraction_finite"] < 1.0)]
    if len(bad):
        print(f"note: {len(bad)} rows had non-finite parameters or per-sample estimates; "
              "see columns params_finite and fraction_finite")
    if reference is not None:
        print(f"distance to the reference {reference} (means over settings and seeds):")
        from decision_bench.analysis.tables import fidelity_summary  # the analysis package only when printing

        print(fidelity_summary(frame).round(3).to_string())
    print(f"wrote {out / 'testbed.csv'}")
    return 0
