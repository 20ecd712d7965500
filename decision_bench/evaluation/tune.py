"""Hyperparameter grids as one vmapped program (paper 000, App. C).

    rows, summary = tune("mlp", {"l2": PAPER_GRIDS["mlp"]["l2"]}, "quick", seeds=3)

For every testbed setting of the sweep, the agent is built once and its
real-valued hyperparameters (agents/core.py) are replaced by arrays holding the
grid, so fitting and evaluating every (grid point, seed) is ONE compiled program
``vmap(grid) o vmap(seeds)``; each setting after the first with the same T
(or the same bucket of T) reuses it. Keys are those of ``run_testbed``, so a grid point's rows agree
with ``run_testbed`` with that point as overrides, up to float32 reassociation: the vmapped
program sums in another order, and training amplifies the last-bit differences (1e-7
relative without training, at most 0.2% measured after mlp's 1000 steps; the tests
assert 1e-5 after 15 steps and 1% after 1000).

Score (App. C): d_KL^agg = d_KL^1 + d_KL^10 / 10 of iid test inputs, averaged
over settings and seeds; the lowest mean is marked ``best``. Only real-valued
hyperparameters can share a program: shape-setting ones (ensemble size, hidden
sizes, index dimension) are separate programs, given as ``overrides`` per run.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import itertools
import json
import math
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from decision_bench._src.files import sha256_hex, verify_results_file, write_results_csv
from decision_bench._src.validation import check_int
from decision_bench._src.versions import result_versions
from decision_bench.agents import make
from decision_bench.agents.core import hyper_of, with_hyper
from decision_bench.agents.registry import ENTRIES, check_inputs_fit, config, hyperparameters, names
from decision_bench.agents.training import bucket_size
from decision_bench.evaluation.kl import EvalConfig, FittedAgent, resolve_method
from decision_bench.evaluation.likelihood import DEFAULT_MAX_ROWS
from decision_bench.evaluation.runner import design_kls, evaluate_seeds, fit_seeds, problem_keys
from decision_bench.evaluation.sweeps import Sweep, TestDesign, get_sweep
from decision_bench.priors import make_prior
from decision_bench.specs import ProblemSpec

# The real-valued parts of paper 000's App. C sweeps (ensemble size, layers and
# widths are shapes: separate runs with overrides), {agent: {hyperparameter: values}}:
# each family's ``paper_grid``, declared beside it (agents/entry.py).
PAPER_GRIDS: dict[str, dict[str, tuple[float, ...]]] = {
    entry.name: dict(entry.paper_grid) for entry in ENTRIES if entry.paper_grid is not None
}
DESIGNS = (TestDesign(1), TestDesign(10))  # the two terms of d_KL^agg


def grid_points(grid: Mapping[str, Sequence[float]]) -> list[dict[str, float]]:
    """Every combination of the grid's values, in row-major order of its keys."""
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def check_grid(
    agent_name: str,
    grid: Mapping[str, Sequence[float]],
    overrides: Mapping[str, Any] | None = None,
    make_agent: Callable[..., Any] | None = None,
) -> dict[str, tuple[float, ...]]:
    """The grid as {name: floats}, or a one-line ValueError, before any work.

    Refused: an unknown agent; an empty grid or a name without values; a value that
    is not a number; a value that is not finite (a NaN or inf point has no score);
    a value given twice for one name (every row would be written twice); and any
    grid point that the agent's own config refuses: each point, with `overrides`,
    is passed to ``agents.registry.config`` (the agent family's __post_init__
    checks, e.g. mlp's l2 >= 0), so the grid accepts exactly what ``make`` accepts.
    Names the config does not know (hyper fields the family fixes, e.g. ensemble's
    prior_scale) get only the finite-number check. make_agent: a user's
    ``make_agent(spec, **overrides)`` (an agent file) instead of the registered
    ``agent_name``; it has no config, so its points get the finite-number check and
    its hyperparameter names are those of the record it builds.
    """
    if make_agent is None and agent_name not in names():
        raise ValueError(f"unknown agent {agent_name!r} (known: {', '.join(names())})")
    if not grid or any(len(values) == 0 for values in grid.values()):
        raise ValueError(f"grid must give at least one value per hyperparameter, got {dict(grid)!r}")
    checked: dict[str, tuple[float, ...]] = {}
    for name, values in grid.items():
        floats: list[float] = []
        for value in values:
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"grid {name} values must be numbers, got {value!r}") from None
            if not math.isfinite(number):
                raise ValueError(f"grid {name} values must be finite numbers, got {value!r}")
            if number in floats:
                raise ValueError(f"grid {name} gives the value {value!r} twice: each value once")
            floats.append(number)
        checked[name] = tuple(floats)
    fixed = dict(overrides or {})
    # The names first, on a small stand-in problem: building an agent compiles nothing.
    hyper = hyper_of(_build(agent_name, make_agent, ProblemSpec(2, 2, 0.1, 1), fixed))
    _check_grid_names(hyper, checked, agent_name)
    if make_agent is not None:
        return checked
    accepted = set(hyperparameters(agent_name))
    for point in grid_points(checked):
        try:
            config(agent_name, **{**fixed, **{k: v for k, v in point.items() if k in accepted}})
        except ValueError as error:
            shown = " ".join(f"{k}={v:g}" for k, v in point.items())
            raise ValueError(f"grid point {shown} is refused by {agent_name!r}: {error}") from None
    return checked


def _build(agent_name: str, make_agent: Callable[..., Any] | None, spec: ProblemSpec, overrides: Mapping[str, Any]):
    """The registered agent, or the user's make_agent(spec, **overrides)."""
    return make(agent_name, spec, **overrides) if make_agent is None else make_agent(spec, **overrides)


def _check_grid_names(hyper: Any, grid: Mapping[str, Any], agent_name: str) -> None:
    if hyper is None:
        raise ValueError(f"agent {agent_name!r} has no real-valued hyperparameters to tune")
    tunable = [name for name in hyper._fields if name != "temperature"]
    unknown = sorted(set(grid) - set(tunable))
    if unknown:
        raise ValueError(
            f"grid names {unknown} are not real-valued hyperparameters of {agent_name!r}; "
            f"tunable in one program: {tunable}"
        )


def _stacked_hyper(hyper: Any, points: list[dict[str, float]], agent_name: str) -> Any:
    """The agent's hyper NamedTuple with every field an array [G] over the points."""
    _check_grid_names(hyper, {k: None for p in points for k in p}, agent_name)
    columns = {}
    for name in hyper._fields:
        base = np.asarray(getattr(hyper, name), np.float32)
        columns[name] = jnp.asarray([p.get(name, base) for p in points], jnp.float32)
    return type(hyper)(**columns)


@functools.partial(jax.jit, static_argnames=("num_rows", "configs", "num_test", "method"))
def _fit_and_evaluate_grid(
    grid_agent: Any,
    prior: Any,
    env_keys: jax.Array,
    fit_keys: jax.Array,
    eval_keys: jax.Array,
    num_train: jax.Array,
    *,
    num_rows: int,
    configs: tuple[EvalConfig, ...],
    num_test: int,
    method: str,
) -> tuple:
    """Fits and evaluates every (grid point, seed): outputs lead with [G, S]."""

    def one_point(agent: Any) -> tuple:
        env_params, states = fit_seeds(agent, prior, env_keys, fit_keys, num_train, num_rows=num_rows)
        return evaluate_seeds(
            agent, prior, states, env_params, eval_keys,
            configs=configs, num_test=num_test, method=method,
        )

    return jax.vmap(one_point)(grid_agent)


def tune(
    agent_name: str,
    grid: Mapping[str, Sequence[float]],
    sweep: str | Sweep = "quick",
    seeds: int | None = None,
    *,
    num_test: int = 1000,
    num_models: int = 1000,
    method: str = "auto",
    overrides: Mapping[str, Any] | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    progress: bool = False,
    resume_dir: str | Path | None = None,
    make_agent: Callable[..., Any] | None = None,
    agent_fingerprint: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Evaluates a grid of real-valued hyperparameters of one agent on a sweep.

    grid: {hyperparameter: values}; every combination is a point; checked by
    ``check_grid`` (the agent's own config checks, finite, no repeats). sweep: a named
    sweep or a Sweep (its settings are used; the designs are always tau 1 and
    tau 10 iid). seeds: a count (None: the sweep's). overrides: other
    hyperparameters of the agent, fixed (shape-setting ones included).
    progress: a bar over the sweep's settings.
    resume_dir: where each finished setting's rows are stored (one checksummed CSV
    per setting, written atomically, named by a hash of everything that changes its
    rows: agent, grid, overrides, setting, seeds, num_test, num_models, method,
    max_rows and the computing libraries' versions: ``setting_file_name``); a later
    call with the same arguments reuses them instead of recomputing, so an
    interrupted tune resumes per setting.
    make_agent: a user's ``make_agent(spec, **overrides)`` to tune instead of the
    registered ``agent_name`` (its rows are named ``agent_name``); its
    ``agent_fingerprint`` (``experiments.agent_files.AgentFile.fingerprint``, the
    file's SHA-256) joins the stored settings' hash, so an edited file recomputes.

    Returns (rows, summary): rows, one per (point, setting, seed, tau) with the
    point's values as columns and kl; summary, one per point with dkl_1, dkl_10,
    dkl_agg = dkl_1 + dkl_10 / 10 (means over settings and seeds), its standard
    error over (setting, seed) pairs and ``best`` (True for the lowest dkl_agg).
    """
    grid = check_grid(agent_name, grid, overrides, make_agent)
    if make_agent is None:
        check_inputs_fit(agent_name, "the testbed", one_hot=False)
    sweep = get_sweep(sweep) if isinstance(sweep, str) else sweep
    num_seeds = sweep.num_seeds if seeds is None else check_int("seeds", seeds, 1)
    num_test = check_int("num_test", num_test, 1)
    num_models = check_int("num_models", num_models, 1)
    points = grid_points(grid)
    rows = []
    bar = tqdm(sweep.settings, desc=f"tune {agent_name}", unit="setting", disable=not progress)
    for setting in bar:
        bar.set_postfix_str(f"T={setting.num_train} beta={setting.temperature}")
        stored = None
        if resume_dir is not None:
            name = setting_file_name(agent_name, grid, setting, num_seeds, overrides=overrides, num_test=num_test,
                                     num_models=num_models, method=method, max_rows=max_rows,
                                     agent_fingerprint=agent_fingerprint)  # fmt: skip
            stored = Path(resume_dir) / name
            finished = _stored_setting(stored)
            if finished is not None:
                rows.extend(finished)
                continue
        setting_rows = []
        prior = make_prior(setting.prior, setting.input_dim, setting.temperature)
        spec = ProblemSpec(prior.input_dim, prior.num_classes, prior.temperature, setting.num_train)
        agent = _build(agent_name, make_agent, spec, dict(overrides or {}))
        hyper = hyper_of(agent)
        if hyper is None:
            raise ValueError(f"agent {agent_name!r} has no real-valued hyperparameters to tune")
        grid_agent = with_hyper(agent, _stacked_hyper(hyper, points, agent_name))
        resolved = resolve_method(FittedAgent(agent, None), method)
        budget = max(1, max_rows // (num_seeds * len(points)))
        configs = tuple(
            EvalConfig(d.tau, d.kappa, num_test, num_models, resolved, budget) for d in DESIGNS
        )
        seeds_list = list(range(num_seeds))
        env_keys, fit_keys, eval_keys = problem_keys(setting, seeds_list)
        per_design, _, _, finite = _fit_and_evaluate_grid(
            grid_agent, prior, env_keys, fit_keys, eval_keys, jnp.int32(setting.num_train),
            num_rows=bucket_size(setting.num_train), configs=configs, num_test=num_test,
            method=resolved,
        )
        for g, point in enumerate(points):
            point_designs = jax.tree.map(lambda a: np.asarray(a)[g], per_design)
            for cfg, s, seed, kl, stderr, _ in design_kls(point_designs, configs, seeds_list):
                setting_rows.append({
                    "agent": agent_name, **point, "input_dim": setting.input_dim,
                    "num_train": setting.num_train, "temperature": setting.temperature,
                    "tau": cfg.tau, "seed": seed, "kl": kl, "kl_stderr": stderr,
                    "params_finite": bool(np.asarray(finite)[g, s]),
                })
        if stored is not None:
            write_results_csv(stored, pd.DataFrame(setting_rows))  # atomic, with its checksum file
        rows.extend(setting_rows)
    frame = pd.DataFrame(rows)
    return frame, summarize_grid(frame, list(grid))


def setting_file_name(
    agent_name: str,
    grid: Mapping[str, tuple[float, ...]],
    setting: Any,
    num_seeds: int,
    *,
    overrides: Mapping[str, Any] | None = None,
    num_test: int = 1000,
    num_models: int = 1000,
    method: str = "auto",
    max_rows: int = DEFAULT_MAX_ROWS,
    agent_fingerprint: str | None = None,
    versions: Mapping[str, str | None] | None = None,
) -> str:
    """The name of one finished setting's rows under ``tune``'s resume_dir: a hash of
    everything that changes them (agent, grid as ``check_grid`` returns it, overrides,
    the sweep setting, seeds, sizes, method, max_rows, and the versions of
    ``RESULT_PACKAGES``), so a file is reused only by the same computation.

    The versions are those whose change makes a stored result stale, the rule
    ``--cells-from`` applies to reproduce's cells: this package and the libraries that
    compute (jax, jaxlib, flax, optax). Not numpy or pandas, which only carry the numbers
    (a pandas release renamed every kept setting once), and not the machine: a setting
    made elsewhere is the same computation, so finished settings can be kept and carried
    between machines (bench/data/selection_parts). ``versions`` names them for a folder
    made with other versions (default: this process's ``result_versions()``).
    """
    versions = dict(result_versions()) if versions is None else dict(versions)
    identity = dict(agent=agent_name, grid=grid, overrides=dict(overrides or {}),
                    setting=dataclasses.asdict(setting), seeds=num_seeds, num_test=num_test,
                    num_models=num_models, method=method, max_rows=max_rows, versions=versions)  # fmt: skip
    if agent_fingerprint is not None:
        # Only when given: registered agents' stored settings keep their names.
        identity["agent_fingerprint"] = agent_fingerprint
    return f"setting-{sha256_hex(json.dumps(identity, sort_keys=True, default=str).encode())[:24]}.csv"


def _stored_setting(path: Path) -> list[dict] | None:
    """The rows of a finished setting stored at `path`, or None when there are none
    or they do not match their checksum (then warned about and recomputed)."""
    if not path.is_file():
        return None
    data = path.read_bytes()
    try:
        verify_results_file(path, data)
    except ValueError as error:
        warnings.warn(f"{error}; recomputing that setting", RuntimeWarning, stacklevel=3)
        return None
    return pd.read_csv(io.BytesIO(data)).to_dict("records")


def summarize_grid(rows: pd.DataFrame, grid_names: list[str]) -> pd.DataFrame:
    """One row per grid point: dkl_1, dkl_10, dkl_agg (means over settings and
    seeds), dkl_agg_stderr and best. A point with a NaN estimate gets NaN."""
    per_problem = rows.pivot_table(
        index=[*grid_names, "input_dim", "num_train", "temperature", "seed"],
        columns="tau", values="kl", aggfunc="first", dropna=False,
    )
    agg = per_problem[1] + per_problem[10] / 10.0
    frame = pd.DataFrame({"dkl_1": per_problem[1], "dkl_10": per_problem[10], "dkl_agg": agg})
    grouped = frame.groupby(level=grid_names, sort=False)
    # A NaN estimate (a failed fit) makes its point NaN, never a silent average.
    summary = grouped.agg(lambda v: v.mean(skipna=False))
    summary["dkl_agg_stderr"] = grouped.dkl_agg.sem()
    summary["best"] = summary.dkl_agg == summary.dkl_agg.min()
    return summary.reset_index()


def read_tune(directory: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows, summary) from DIR/tune.csv and DIR/tune_summary.csv, as ``decision-bench
    tune`` wrote them: each must match its checksum file, and the summary must
    summarise this tune.csv (its checksum file records tune.csv's). Raises
    FileNotFoundError or a one-line ValueError naming the file otherwise; files
    without checksum files (made by hand) are read unverified."""
    directory = Path(directory)
    frames = []
    for name in ("tune.csv", "tune_summary.csv"):
        path = directory / name
        if not path.is_file():
            raise FileNotFoundError(f"tune results file not found: {path}")
        data = path.read_bytes()
        rows = verify_results_file(path, data)
        frame = pd.read_csv(io.BytesIO(data))
        if rows is not None and rows != len(frame):
            raise ValueError(f"{path} has {len(frame)} data rows but its checksum file records {rows}")
        frames.append(frame)
    return frames[0], frames[1]


# ----------------------------------------------------------------------------
# decision-bench tune
