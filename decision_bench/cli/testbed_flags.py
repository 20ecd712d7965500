"""The ``testbed`` command's flags beyond the shared ones (``cli.arguments``): its
agents, the reference agent, a custom grid (--input-dim, --num-train, --temperature,
--tau, --kappa) and an experiment file (--config), each parsed and checked into
the values the command's plan is built from; ValueError naming the flag otherwise.
Also what OUT/testbed.json records of them (``run_meta``, ``grid_meta``).
"""

from __future__ import annotations

import argparse
import math
from typing import Sequence

from decision_bench._src.memory import INT32_MAX
from decision_bench._src.validation import check_choice, repeated
from decision_bench._src.versions import environment_info
from decision_bench.agents import names as agent_registry
from decision_bench.agents.registry import check_inputs_fit
from decision_bench.agents.registry import config as agent_config
from decision_bench.cli.arguments import parse_agent_list
from decision_bench.evaluation.sweeps import Sweep, custom_sweep
from decision_bench.experiments.agent_files import AgentFile
from decision_bench.experiments.cells import Cell
from decision_bench.experiments.experiment_file import read_experiment_file
from decision_bench.experiments.presets import Preset

# Custom-grid flags (as typed, argparse dest) and their defaults when a grid is
# given; None: required in a grid.
GRID_FLAGS = {
    "--input-dim": ("input_dim", "2"),
    "--num-train": ("num_train", None),
    "--temperature": ("temperature", None),
    "--tau": ("tau", "1,10"),
    "--kappa": ("kappa", None),
}

def parse_agents(text: str, agent_files: Sequence[AgentFile] = ()) -> tuple[str, ...]:
    """"mlp, ensemble+" -> ("mlp", "ensemble+"): registered names or the names of
    ``agent_files`` (the shared rule of ``cli.arguments.parse_agent_list``: none or
    a repeat is refused); ValueError naming --agents otherwise, and for an agent
    file whose agent --agents does not name."""
    listed = parse_agent_list(text)
    file_names = tuple(f.name for f in agent_files)
    for name in listed:
        check_choice("--agents", name, agent_registry() + file_names)
        if name not in file_names:
            # Testbed and real-data inputs are continuous features.
            check_inputs_fit(name, "the testbed", one_hot=False)
    unused = [f"{f.name!r} ({f.path})" for f in agent_files if f.name not in listed]
    if unused:
        raise ValueError(f"--agent-file defines {', '.join(unused)}, which --agents does not name; add it to --agents")
    return listed


def _option_value(text: str):
    """"2" -> 2, "0.5" -> 0.5, "8,8" -> (8, 8), "nuts" -> "nuts"."""
    if "," in text:
        return tuple(_option_value(item.strip()) for item in text.split(",") if item.strip())
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_reference(name: str | None, options: Sequence[str]) -> tuple[str | None, dict]:
    """(reference name or None, its overrides) from --reference and --reference-option;
    ValueError naming the flag for an unknown agent, a malformed or unknown option."""
    if name is None:
        if options:
            raise ValueError("--reference-option needs --reference (e.g. --reference hmc)")
        return None, {}
    name = name.strip()
    check_choice("--reference", name, agent_registry())
    check_inputs_fit(name, "the testbed", one_hot=False)
    overrides = {}
    for option in options:
        key, sep, value = str(option).partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"--reference-option must be NAME=VALUE, got {option!r}")
        overrides[key.strip()] = _option_value(value.strip())
    try:
        agent_config(name, **overrides)
    except (TypeError, ValueError) as error:
        raise ValueError(f"--reference-option: {error}") from None
    return name, overrides


def parse_int_list(flag: str, text: str, minimum: int) -> tuple[int, ...]:
    """"3,30,300" -> (3, 30, 300): distinct integers >= minimum, else a ValueError naming flag."""
    items = [item.strip() for item in str(text).split(",")]
    try:
        values = tuple(int(item) for item in items)
    except ValueError:
        values = ()
    if not values or any(v < minimum for v in values):
        raise ValueError(f"{flag} must be a comma-separated list of integers >= {minimum}, got {text!r}")
    if any(v > INT32_MAX for v in values):
        # JAX indexes with int32.
        raise ValueError(f"{flag} must be a comma-separated list of integers <= 2**31 - 1, got {text!r}")
    _check_distinct(flag, values, text)
    return values


def parse_number_list(flag: str, text: str) -> tuple[float, ...]:
    """"0.01,0.1" -> (0.01, 0.1): distinct finite numbers > 0, else a ValueError naming flag."""
    items = [item.strip() for item in str(text).split(",")]
    try:
        values = tuple(float(item) for item in items)
    except ValueError:
        values = ()
    if not values or any(not math.isfinite(v) or v <= 0 for v in values):
        raise ValueError(f"{flag} must be a comma-separated list of numbers > 0, got {text!r}")
    _check_distinct(flag, values, text)
    return values


def _check_distinct(flag: str, values: tuple, text: str) -> None:
    if repeats := repeated(values):
        shown = ", ".join(f"{v:g}" for v in repeats)
        raise ValueError(f"{flag} must not repeat a value, got {text!r} (repeated: {shown})")


def grid_sweep(args: argparse.Namespace) -> Sweep | None:
    """The custom grid of the command line (sweeps.custom_sweep), or None when no
    grid flag was given. ValueError for --sweep together with grid flags, a
    missing --num-train or --temperature, or a malformed list."""
    given = [flag for flag, (dest, _) in GRID_FLAGS.items() if getattr(args, dest, None) is not None]
    if not given:
        return None
    if getattr(args, "sweep", None) is not None:
        raise ValueError(
            f"--sweep and the custom-grid flags ({', '.join(given)}) are mutually exclusive: "
            "give a named --sweep or a grid (--num-train ... --temperature ...), not both"
        )
    text = {
        flag: default if getattr(args, dest, None) is None else getattr(args, dest)
        for flag, (dest, default) in GRID_FLAGS.items()
    }
    missing = [flag for flag in ("--num-train", "--temperature") if text[flag] is None]
    if missing:
        raise ValueError(
            f"a custom grid needs {' and '.join(missing)} "
            "(e.g. --num-train 10,100 --temperature 0.1), or use a named --sweep"
        )
    kappa = None
    if text["--kappa"] is not None:
        try:
            kappa = int(str(text["--kappa"]).strip())
        except ValueError:
            kappa = 0
        if kappa < 1:
            raise ValueError(f"--kappa must be one integer >= 1, got {text['--kappa']!r}")
    taus = parse_int_list("--tau", text["--tau"], 1)
    if kappa is not None and max(taus) <= 1:
        raise ValueError(
            f"--kappa needs a --tau > 1 (kappa designs are scored for tau > 1), got --tau {text['--tau']!r}"
        )
    return custom_sweep(
        input_dims=parse_int_list("--input-dim", text["--input-dim"], 1),
        num_trains=parse_int_list("--num-train", text["--num-train"], 0),
        temperatures=parse_number_list("--temperature", text["--temperature"]),
        taus=taus,
        kappa=kappa,
    )


def grid_meta(sweep: Sweep) -> dict:
    """The grid of a custom sweep, for testbed.json."""
    return {
        "input_dims": sorted({s.input_dim for s in sweep.settings}),
        "num_trains": sorted({s.num_train for s in sweep.settings}),
        "temperatures": sorted({s.temperature for s in sweep.settings}),
        "designs": [[d.tau, d.kappa] for d in sweep.designs],
    }


# The flags an experiment file (--config) sets: refused beside it.
CONFIG_FLAGS = {
    "--agents": "agents", "--sweep": "sweep", "--seeds": "seeds", "--num-test": "num_test",
    "--num-models": "num_models", "--datasets": "datasets",
    **{flag: dest for flag, (dest, _) in GRID_FLAGS.items()},
}


def experiment_from_flags(args: argparse.Namespace) -> Preset | None:
    """The --config experiment file's preset (None without --config); ValueError when a
    flag the file sets is given beside it. Fills in --num-test and --num-models
    (the file's, else 1000)."""
    config = getattr(args, "config", None)
    experiment = None
    if config is not None:
        given = [flag for flag, dest in CONFIG_FLAGS.items() if getattr(args, dest, None) is not None]
        if given:
            raise ValueError(
                f"--config {config!r} sets the experiment; {', '.join(given)} cannot be given beside it "
                "(edit the file, or drop --config)"
            )
        experiment = read_experiment_file(config)
        args.num_test, args.num_models = experiment.num_test, experiment.num_models
    args.num_test = 1000 if args.num_test is None else args.num_test
    args.num_models = 1000 if args.num_models is None else args.num_models
    return experiment


def run_meta(
    args: argparse.Namespace, sweep: str, seeds: tuple[int, ...], cells: tuple[Cell, ...], **named: object
) -> dict:
    """What OUT/testbed.json (or realdata.json) records of a run: the versions, the sweep,
    ``named`` (e.g. the data sets), the seeds, agents, sizes, method and cell ids."""
    return {
        "versions": environment_info(),
        "sweep": sweep,
        **named,
        "seeds": list(seeds),
        "agents": args.agents,
        "num_test": args.num_test,
        "num_models": args.num_models,
        "method": args.method,
        "cells": [cell.id for cell in cells],
    }
