"""``decision-bench bandit``: Thompson-sampling experiments from the command line.

    decision-bench bandit --agents mlp,ensemble+ --env NeuralBandit-v0 --input-dim 2 \\
        --num-actions 40 --temperature 0.1 --steps 10000 --seeds 5 --out DIR

writes DIR/bandit.csv (the rows of ``run_bandit`` for every agent; rewritten after
every chunk while the run goes on, the running agent's rows marked "unfinished: t
of T steps" in the error column) and DIR/bandit_regret.png (mean cumulative regret
against time, with a band of one standard error over seeds). Each agent's run is checkpointed after every chunk
under DIR/checkpoints/<agent>/, so running the same command again continues
where an interrupted one stopped; --restart discards the saved runs and starts
over. A folder holding another run (another command, or other arguments: see
DIR/run_manifest.json) is never overwritten: the command stops and names the
arguments that differ; a folder in use by another command is refused, naming it.

    decision-bench bandit --env ClassificationBandit-v0 --dataset iris --agents logistic,mlp \\
        --steps 2000 --seeds 5 --out DIR

plays a classification data set as a contextual bandit (one arm per class,
reward 1 when right): --dataset is a bundled name (iris, wine, breast_cancer,
digits; needs scikit-learn) or a .csv / .npz file; the rows get a dataset column.

    decision-bench bandit --env WheelBandit-v0 --delta 0.95 --agents linear_gaussian \\
        --steps 2000 --seeds 5 --out DIR

plays the Deep Bayesian Bandits Showdown's synthetic bandits (WheelBandit-v0 with
--delta; LinearBandit-v0 and SparseLinearBandit-v0 with --context-dim,
--num-actions, --sparse-dim; see docs/showdown.md). Their rewards are Gaussian:
they are played by linear_gaussian, or by any agent with --policy uniform; the
rows get a column per setting of the environment (delta, context_dim, ...).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from decision_bench._src.console import print_error
from decision_bench._src.extras import FIGURES_SKIPPED, plotting_available
from decision_bench._src.files import write_results_csv
from decision_bench._src.memory import bandit_memory, check_count, check_fits
from decision_bench._src.rundir import claim_run_dir
from decision_bench._src.tensorboard import TensorBoardLog, closing_board
from decision_bench._src.validation import check_choice
from decision_bench.agents.registry import names as agent_names
from decision_bench.analysis.figures import plot_regret
from decision_bench.analysis.tables import failed_seed_lines, seed_summary
from decision_bench.bandit import DEFAULT_REGULARIZATION, BanditLoopConfig, make_loop
from decision_bench.cli.arguments import (
    add_command,
    add_agent_options,
    add_display_options,
    check_replay_flags,
    parse_agent_list,
    parse_settings,
)
from decision_bench.experiments import estimate as estimate_module
from decision_bench.experiments.agent_files import AgentFile, host_agent_names, read_agent_files
from decision_bench.experiments.bandit_cell import (
    bandit_cell,
    checkpoint_folders,
    compute_bandit_cell,
    runnable_agent,
    showdown_columns,
    with_family_columns,
)
from decision_bench.experiments.estimate import estimate_cells
from decision_bench.experiments.reproduce import with_agent_config

CSV_NAME = "bandit.csv"
FIGURE_NAME = "bandit_regret.png"


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds the ``bandit`` subcommand; its ``func(args)`` returns the exit status."""
    p = add_command(subparsers, "bandit", "Thompson sampling in the neural bandit (regret curves per agent)",
                    __doc__)
    p.add_argument("--agents", default="mlp", help="comma-separated agent names (registered, or an --agent-file's)")
    add_agent_options(p, "; wins over --learning-rate for that agent")
    p.add_argument(
        "--env",
        default="NeuralBandit-v0",
        help="NeuralBandit-v0, ContextualNeuralBandit-v0, BernoulliBandit-v0, ClassificationBandit-v0, "
        "WheelBandit-v0, LinearBandit-v0 or SparseLinearBandit-v0",
    )
    p.add_argument(
        "--dataset",
        help="ClassificationBandit-v0 only: iris, wine, breast_cancer, digits, or a .csv/.npz file",
    )
    p.add_argument("--input-dim", type=int, help="input dimension d (neural bandits; None: the environment's default)")
    p.add_argument("--num-actions", type=int, help="actions (None: 20 d; 10 for Bernoulli)")
    p.add_argument("--temperature", type=float, help="the prior's beta (neural bandits; None: the environment's default)")
    p.add_argument(
        "--activation",
        help="neural bandits: the reward network's activation (relu, tanh, swish, sigmoid, selu, leaky_relu, "
        "gelu; None: relu)",
    )
    p.add_argument(
        "--hidden-sizes",
        help="neural bandits: the reward network's hidden widths, comma-separated, e.g. 10,10 (None: 50,50)",
    )
    p.add_argument("--delta", type=float, help="WheelBandit-v0: the exploration parameter in [0, 1] (None: 0.95)")
    p.add_argument(
        "--context-dim", type=int, help="(Sparse)LinearBandit-v0: the context dimension d (None: 10)"
    )
    p.add_argument(
        "--sparse-dim", type=int, help="SparseLinearBandit-v0: non-zero coordinates per arm (None: 3)"
    )
    p.add_argument("--steps", type=int, default=10_000, help="time steps per seed")
    p.add_argument("--seeds", type=int, default=5, help="seeds 0..n-1, run together")
    p.add_argument("--policy", default=BanditLoopConfig.policy, help="thompson, greedy or uniform")
    p.add_argument(
        "--steps-per-obs", type=int, default=BanditLoopConfig.steps_per_obs, help="optimiser steps per observation"
    )
    p.add_argument("--batch-size", type=int, default=BanditLoopConfig.batch_size, help="replay minibatch size")
    p.add_argument("--replay-capacity", type=int, default=BanditLoopConfig.replay_capacity, help="replay buffer size")
    p.add_argument(
        "--learning-rate",
        type=float,
        default=BanditLoopConfig.learning_rate,
        help="Adam step size of every agent that has one, in place of the agent's own default"
        + _replaced_defaults(BanditLoopConfig.learning_rate),
    )
    p.add_argument(
        "--regularization",
        choices=("sequential", "sequential_linear_beta"),
        default=None,
        help="decayed L2 weight: 'sequential' = lambda 2 sqrt(beta) / t (paper 000, App. E.2), "
        "'sequential_linear_beta' = lambda 2 beta / t (the released reference code); "
        "None: decision_bench.bandit.DEFAULT_REGULARIZATION",
    )
    p.add_argument("--log-every", type=int, default=None, help="a row every n steps (None: steps // 100)")
    p.add_argument("--chunk-size", type=int, default=1000, help="steps per compiled call")
    p.add_argument("--out", required=True, help="output folder")
    resume = p.add_mutually_exclusive_group()
    resume.add_argument(
        "--restart", action="store_true", help="discard the runs saved in --out and start over"
    )
    resume.add_argument(
        "--resume",
        action="store_true",
        help="continue the runs saved in --out (what happens anyway; kept for old scripts)",
    )
    add_display_options(p, "bars", "the regret curves", "as they grow")
    p.set_defaults(func=run_command)
    return p


# Counts JAX indexes with int32 (steps and replay positions, seeds, actions, ...).
SIZE_FLAGS = ("input_dim", "num_actions", "context_dim", "sparse_dim", "steps", "seeds", "steps_per_obs", "batch_size",
              "replay_capacity", "log_every", "chunk_size")


def check_sizes(args: argparse.Namespace) -> None:
    """Every count given is within [1, 2**31 - 1]; ValueError naming the flag otherwise."""
    for dest in SIZE_FLAGS:
        value = getattr(args, dest, None)
        if value is not None:
            check_count("--" + dest.replace("_", "-"), value)


def _hidden_sizes(text: str | None) -> tuple[int, ...] | None:
    """"10,10" -> (10, 10); a width that is not a whole number is a one-line error."""
    if text is None:
        return None
    try:
        return tuple(int(w) for w in text.split(","))
    except ValueError:
        raise ValueError(
            f"--hidden-sizes must be positive integers separated by commas, e.g. 50,50; got {text!r}"
        ) from None


def config_from_flags(args: argparse.Namespace) -> BanditLoopConfig:
    """The loop's settings from their flags (``--regularization`` None: the library's default)."""
    return BanditLoopConfig(
        policy=args.policy,
        steps_per_obs=args.steps_per_obs,
        batch_size=args.batch_size,
        replay_capacity=args.replay_capacity,
        learning_rate=args.learning_rate,
        regularization=getattr(args, "regularization", None) or DEFAULT_REGULARIZATION,
    )


def _env_kwargs(args: argparse.Namespace) -> dict:
    """Only the options given, so each environment's own defaults apply otherwise."""
    given = {
        "input_dim": args.input_dim,
        "num_actions": args.num_actions,
        "temperature": args.temperature,
        "dataset": getattr(args, "dataset", None),
        "activation": getattr(args, "activation", None),
        "hidden_sizes": _hidden_sizes(getattr(args, "hidden_sizes", None)),
        "delta": getattr(args, "delta", None),
        "context_dim": getattr(args, "context_dim", None),
        "sparse_dim": getattr(args, "sparse_dim", None),
    }
    return {k: v for k, v in given.items() if v is not None}


# Arguments that cannot change a row (--chunk-size, --no-progress, --resume,
# --restart) are left out of the run's manifest.
_RESULT_FLAGS = (
    "env", "dataset", "input_dim", "num_actions", "temperature", "activation", "hidden_sizes",
    "delta", "context_dim", "sparse_dim", "steps",
    "seeds", "policy", "steps_per_obs", "batch_size", "replay_capacity", "learning_rate", "regularization",
    "log_every",
)


def _result_arguments(
    args: argparse.Namespace, agents: tuple[str, ...], files: tuple[AgentFile, ...] = (), settings: dict | None = None
) -> dict:
    """The run's result-defining arguments, keyed by flag, for its manifest; --agent-file
    (resolved paths) and --set only when given, so folders made before them resume."""
    given = {f"--{name.replace('_', '-')}": getattr(args, name, None) for name in _RESULT_FLAGS}
    arguments = {"--agents": list(agents), **given}
    if files:
        arguments["--agent-file"] = [f.path for f in files]
    if settings:
        arguments["--set"] = settings
    return arguments


def _replaced_defaults(learning_rate: float) -> str:
    """The registered agents whose own learning rate the bandit's default replaces, for --help."""
    from decision_bench.agents import registry

    own = {}
    for name in registry.names():
        rate = getattr(registry.config(name), "learning_rate", None)
        if rate is not None and rate != learning_rate:
            own.setdefault(rate, []).append(name)
    if not own:
        return ""
    listed = "; ".join(f"{', '.join(names)} {rate:g}" for rate, names in sorted(own.items()))
    return f" (it replaces: {listed}; --set NAME.learning_rate=... sets one agent's)"


def _agent_makers(agents: tuple[str, ...], files: tuple[AgentFile, ...]) -> dict[str, tuple]:
    """{agent: (its agent file's contract-checked make_agent, the file's SHA-256)} for
    every agent --agent-file defines ((None, None) for a registered agent); ValueError
    for an agent file whose agent --agents does not name."""
    unused = [f"{f.name!r} ({f.path})" for f in files if f.name not in agents]
    if unused:
        raise ValueError(f"--agent-file defines {', '.join(unused)}, which --agents does not name; add it to --agents")
    by_name = {f.name: f for f in files}
    return {agent: (by_name[agent].factory(), by_name[agent].sha256) if agent in by_name else (None, None)
            for agent in agents}


def _legacy_difference(out: Path, agents: tuple[str, ...]) -> str | None:
    """How a 0.2.0 bandit folder (checkpoints, no manifest) differs from this run:
    which agents it saved. Each agent's own arguments are then checked by its
    checkpoint (run_bandit refuses a saved run of another config)."""
    saved = sorted(p.name for p in (out / "checkpoints").iterdir() if p.is_dir()) if (out / "checkpoints").is_dir() else []
    now = sorted(checkpoint_folders(agents).values())
    return None if not saved or saved == now else f"saved agents {saved}, now {now}"


def run_command(args: argparse.Namespace) -> int:

    try:
        agents = parse_agent_list(args.agents)
        env_kwargs = _env_kwargs(args)
    except ValueError as error:
        print_error(str(error))
        return 2
    # A ValueError is bad input (unknown agent, env, policy; a value out of range;
    # an --out that is a file). Every agent and the output folder are checked
    # before the first one runs, so a typo in the last name costs no minutes.
    try:
        check_sizes(args)
        files = read_agent_files(getattr(args, "agent_files", ()), registered=agent_names())
        known = agent_names() + tuple(f.name for f in files)
        for agent in agents:
            check_choice("--agents", agent, known)
        settings = parse_settings(getattr(args, "settings", ()), agents, files)
        makers = _agent_makers(agents, files)
        config = config_from_flags(args)
        for agent, (make_agent, sha256) in makers.items():
            runnable, agent_kwargs, _ = runnable_agent(agent, settings.get(agent, {}), make_agent, sha256)
            loop, _ = make_loop(runnable, args.env, config, env_kwargs=env_kwargs, agent_kwargs=agent_kwargs)
            check_replay_flags(args, agent, loop.update_mode)
        # Before anything is allocated: what this run's arrays need, against the machine.
        check_fits(
            "this bandit run",
            bandit_memory(
                seeds=args.seeds,
                steps=args.steps,
                log_every=args.log_every or max(1, args.steps // 100),
                replay_capacity=args.replay_capacity,
                input_dim=loop.env.input_dim,
                num_actions=loop.env.num_actions,
            ),
        )
        # The plan: one bandit cell per agent (after the checks: its seeds are a list).
        problem = {"env": args.env, "num_steps": args.steps, **env_kwargs}
        cells = {agent: bandit_cell(agent, settings.get(agent), problem, range(args.seeds), sha256)
                 for agent, (_, sha256) in makers.items()}
        restart = bool(getattr(args, "restart", False))
        board = None if getattr(args, "tensorboard", None) is None else TensorBoardLog(args.tensorboard)
        with closing_board(board), claim_run_dir(
            args.out, "bandit", _result_arguments(args, agents, files, settings), restart=restart,
            restart_flag="--restart", legacy_check=lambda folder: _legacy_difference(folder, agents),
        ) as out:
            announce_estimate(args, {agent: (settings.get(agent) or None) if make_agent is None else None
                                     for agent, (make_agent, _) in makers.items()},
                              loop.env.input_dim, host_agent_names(files))
            frames: list[pd.DataFrame] = []

            def grown(table: pd.DataFrame) -> None:
                write_csv(table, out / CSV_NAME)
                if board is not None:
                    board.bandit_rows(table)

            def results_table(running: pd.DataFrame | None = None) -> pd.DataFrame:
                df = pd.concat(frames + ([] if running is None else [running]), ignore_index=True)
                if {"activation", "hidden_sizes"} & set(env_kwargs) and "temperature" in df.columns:
                    # Neural bandits' rows get the reward network's family (as reproduce's bandit.csv does).
                    df = with_family_columns(df, next(iter(cells.values())))
                if getattr(args, "dataset", None) is not None:
                    # run_bandit's rows name the env id only; keep which data set was played.
                    df.insert(df.columns.get_loc("env") + 1, "dataset", args.dataset)
                # Which hyperparameters each agent ran with ("" for the defaults), when any has some.
                df = with_agent_config(df, cells.values())
                return showdown_columns(df, loop.env)

            file_names = {f.name for f in files}
            folders = checkpoint_folders(cells)
            for agent, cell in cells.items():
                # An agent file's rows carry the name --agents gave it (its record's own name may differ).
                rename = {"agent": agent} if agent in file_names else {}
                # bandit.csv grows with the run: the finished agents' rows and the running
                # one's rows so far (marked unfinished), rewritten after every chunk, so
                # `analyze` can read a run in progress and an interrupted run keeps its rows.
                frames.append(compute_bandit_cell(
                    cell,
                    makers[agent][0],
                    out_dir=out / "checkpoints" / folders[agent],
                    resume=False if restart else None,
                    progress=not args.no_progress,
                    loop=config,
                    log_every=args.log_every,
                    chunk_size=args.chunk_size,
                    on_rows=lambda rows, rename=rename: grown(results_table(rows.assign(**rename))),
                ).assign(**rename))
            df = results_table()
            write_csv(df, out / CSV_NAME)
            # Without the `plot` extra the CSV is the result; the figure is skipped.
            plotted = plotting_available()
            if plotted:
                plot_regret(df, out / FIGURE_NAME)
    except ValueError as error:
        print_error(str(error))
        return 2
    summary = seed_summary(df)
    print(summary.to_string(float_format=lambda v: f"{v:.1f}"))
    for line in failed_seed_lines(df, CSV_NAME):
        print(line)
    if plotted:
        print(f"wrote {out / CSV_NAME} and {out / FIGURE_NAME}")
    else:
        print(f"wrote {out / CSV_NAME}; {FIGURES_SKIPPED}")
    return 0


def announce_estimate(args: argparse.Namespace, agent_kwargs: dict, input_dim: int,
                      host_agents: tuple[str, ...] = ()) -> None:
    """Before a long run (estimated >= LONG_RUN_SECONDS), one line on stderr with its
    estimated cost (``experiments.estimate``); the whole run, saved chunks included.
    agent_kwargs: {agent: its hyperparameters (None for the defaults)}."""
    problem = {"env": args.env, "num_steps": args.steps, "input_dim": int(input_dim)}
    cells = [bandit_cell(agent, kwargs, problem, range(args.seeds)) for agent, kwargs in agent_kwargs.items()]
    estimate = estimate_cells(cells, host_agents=host_agents)
    if estimate.wall_seconds >= estimate_module.LONG_RUN_SECONDS or host_agents:
        print(estimate.line(), file=sys.stderr)


def write_csv(df: pd.DataFrame, path: Path) -> None:
    """Writes atomically (see ``_src/files.py``)."""
    write_results_csv(path, df)  # with its checksum file
