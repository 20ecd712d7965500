"""Experiment files: a preset written as TOML (``reproduce --config FILE``, ``testbed --config FILE``).

Every preset can be written as one (``decision-bench reproduce --preset NAME
--print-config`` prints it) and read back to the equal :class:`Preset`::

    name = "demo"
    agents = ["mlp", "ensemble", ...]

    [testbed]
    sweeps = ["demo"]            # named testbed sweeps (evaluation.sweeps, or demo / robustness)
    seeds = 5
    num_test = 500
    num_models = 1000

    [testbed.overrides.ensemble] # hyperparameters of one agent in the testbed
    num_ensemble = 30

    [bandit]
    env = "NeuralBandit-v0"
    steps = 2000
    seeds = 3

    [[bandit.settings]]          # one table per bandit setting (environment keyword arguments)
    input_dim = 2
    num_actions = 40
    temperature = 0.1

    [bandit.overrides."ensemble+"]
    num_ensemble = 30

    [bandit.seeds_per_cell]      # an agent's bandit seeds run (and are kept) n per cell
    "ensemble+" = 1

Every key is required except the overrides tables, seeds_per_cell and testbed_only; an unknown key is refused in
one line naming the accepted keys, and the values get the checks of ``Preset``.
Python 3.11+ reads TOML with the standard library's tomllib, 3.10 with tomli.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from decision_bench._src.memory import check_count
from decision_bench._src.validation import check_choice
from decision_bench.envs.bandits import BANDITS, make_bandit
from decision_bench.experiments.presets import Preset

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

_TOP = ("name", "agents", "testbed_only", "testbed", "bandit")
_TESTBED = ("sweeps", "seeds", "num_test", "num_models", "overrides")
_BANDIT = ("env", "steps", "seeds", "settings", "overrides", "seeds_per_cell")
_OPTIONAL = ("overrides", "testbed_only", "seeds_per_cell")


def _toml_value(value: Any) -> str:
    """A TOML literal for a str, bool, int, finite float or a list of them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"experiment files hold finite numbers only, got {value!r}")
        return repr(value)  # "0.1", "1e-05", "1000.0": all TOML floats that read back equal
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string: the same escapes
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise ValueError(f"experiment files hold str, bool, numbers and lists, got {type(value).__name__} {value!r}")


def _key(name: str) -> str:
    """A bare TOML key, or a quoted one ("ensemble+")."""
    return name if name.replace("_", "").replace("-", "").isalnum() else json.dumps(name)


def _table(lines: list[str], header: str, pairs) -> None:
    lines.append("")
    lines.append(header)
    lines.extend(f"{_key(k)} = {_toml_value(v)}" for k, v in pairs)


def preset_to_toml(preset: Preset) -> str:
    """The experiment file of ``preset``: :func:`preset_from_toml` reads it back equal."""
    lines = [
        f"# decision-bench experiment file: decision-bench reproduce --config FILE (or testbed --config FILE)",
        f"name = {_toml_value(preset.name)}",
        f"agents = {_toml_value(preset.agents)}",
    ]
    if preset.testbed_only:
        lines.append(f"testbed_only = {_toml_value(preset.testbed_only)}")
    _table(lines, "[testbed]", [
        ("sweeps", preset.testbed_sweeps), ("seeds", preset.testbed_seeds),
        ("num_test", preset.num_test), ("num_models", preset.num_models),
    ])
    for agent, items in preset.testbed_overrides:
        _table(lines, f"[testbed.overrides.{_key(agent)}]", items)
    _table(lines, "[bandit]", [("env", preset.bandit_env), ("steps", preset.bandit_steps), ("seeds", preset.bandit_seeds)])
    for setting in preset.bandit_settings:
        _table(lines, "[[bandit.settings]]", setting)
    for agent, items in preset.bandit_overrides:
        _table(lines, f"[bandit.overrides.{_key(agent)}]", items)
    if preset.bandit_seeds_per_cell:
        _table(lines, "[bandit.seeds_per_cell]", preset.bandit_seeds_per_cell)
    return "\n".join(lines) + "\n"


def _check_keys(where: str, table: Any, accepted: tuple[str, ...]) -> dict:
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table, got {table!r}")
    unknown = sorted(set(table) - set(accepted))
    if unknown:
        raise ValueError(f"{where} has unknown key(s) {unknown}; accepted keys are {list(accepted)}")
    missing = [k for k in accepted if k not in table and k not in _OPTIONAL]
    if missing:
        raise ValueError(f"{where} is missing {missing}")
    return table


def _tuple(value: Any) -> Any:
    return tuple(_tuple(v) for v in value) if isinstance(value, list) else value


def _overrides(where: str, table: Any) -> tuple:
    """{agent: {key: value}} as Preset's ((agent, ((key, value), ...)), ...), sorted."""
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise ValueError(f"{where} must hold one table per agent, e.g. [{where}.ensemble], got {table!r}")
    return tuple(sorted((agent, tuple(sorted((k, _tuple(v)) for k, v in items.items()))) for agent, items in table.items()))


def _strings(where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where} must be a non-empty list of names, got {value!r}")
    return tuple(value)


def _names(where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where} must be a list of agent names, got {value!r}")
    return tuple(value)


def _seeds_per_cell(where: str, table: Any) -> tuple:
    """{agent: n} as Preset's ((agent, n), ...), sorted; each n a count (as [bandit] seeds)."""
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table of agent = seeds per cell, got {table!r}")
    for agent, count in table.items():
        check_count(f"{where} {agent}", count)
    return tuple(sorted(table.items()))


def _check_override_agents(preset: Preset) -> None:
    """An override table or testbed_only entry naming neither an agent the file runs nor
    a registered agent is a typo (``[testbed.overrides.ensembel]``) that would otherwise
    be dropped without a word. A registered agent the file does not run is let through:
    ``--print-config --agents ...`` keeps the preset's tables for the agents it leaves out."""
    from decision_bench.agents.registry import config as agent_config  # noqa: PLC0415 - imports every family
    from decision_bench.agents.registry import names as agent_names  # noqa: PLC0415

    known = set(preset.agents) | set(agent_names())
    for where, named in (
        ("[testbed.overrides]", [a for a, _ in preset.testbed_overrides]),
        ("[bandit.overrides]", [a for a, _ in preset.bandit_overrides]),
        ("testbed_only", list(preset.testbed_only)),
        ("[bandit.seeds_per_cell]", [a for a, _ in preset.bandit_seeds_per_cell]),
    ):
        strangers = sorted(set(named) - known)
        if strangers:
            raise ValueError(
                f"{where} names {strangers}, neither among agents {list(preset.agents)} nor a registered agent"
            )
    # A registered agent's table is its config's keywords, checked as --set checks them
    # (a misspelt key or a refused value is an error here, not in a worker after the run
    # has started); an agent file's options are checked when its file is loaded.
    registered = set(agent_names())
    for where, tables in (("testbed.overrides", preset.testbed_overrides), ("bandit.overrides", preset.bandit_overrides)):
        for agent, items in tables:
            if agent not in registered:
                continue
            try:
                agent_config(agent, **dict(items))
            except (TypeError, ValueError) as error:
                raise ValueError(f"[{where}.{_key(agent)}]: {str(error).splitlines()[0]}") from None


def _check_bandit_settings(env: Any, settings: list[dict]) -> None:
    """Each [[bandit.settings]] table as the environment takes it, its errors named by
    the file's own place (the env key, the table's number) rather than the env's
    argument names."""
    if not isinstance(env, str):
        raise ValueError(f"[bandit] env must be a string, one of {sorted(BANDITS)}, got {env!r}")
    check_choice("[bandit] env", env.split("/", 1)[-1], BANDITS)
    for number, setting in enumerate(settings, 1):
        try:
            make_bandit(env, **{k: _tuple(v) for k, v in setting.items()})
        except (ValueError, TypeError) as error:
            raise ValueError(f"[[bandit.settings]] table {number} of {len(settings)}: {error}") from None


def preset_from_toml(text: str, source: str = "experiment file") -> Preset:
    """The :class:`Preset` an experiment file describes; ValueError (one line naming
    ``source``) for TOML that does not parse, an unknown or missing key, or a value
    the preset refuses."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{source} is not valid TOML: {error}") from None
    try:
        _check_keys(source, data, _TOP)
        testbed = _check_keys(f"{source} [testbed]", data["testbed"], _TESTBED)
        bandit = _check_keys(f"{source} [bandit]", data["bandit"], _BANDIT)
        settings = bandit["settings"]
        if not isinstance(settings, list) or not settings or not all(isinstance(s, dict) for s in settings):
            raise ValueError(f"{source} needs at least one [[bandit.settings]] table, got {settings!r}")
        pairs = tuple(tuple(sorted((k, _tuple(v)) for k, v in s.items())) for s in settings)
        _check_bandit_settings(bandit["env"], settings)
        # The counts with the flags' bounds (check_count: as --seeds, --steps, --num-test
        # refuse them), named by the file's own keys, before a Preset or a cell sees them.
        for table, name, key in (
            (testbed, "[testbed]", "seeds"), (testbed, "[testbed]", "num_test"), (testbed, "[testbed]", "num_models"),
            (bandit, "[bandit]", "steps"), (bandit, "[bandit]", "seeds"),
        ):
            check_count(f"{name} {key}", table[key])
        if not isinstance(data["name"], str) or not data["name"]:
            raise ValueError(f"{source} name must be a non-empty string, got {data['name']!r}")
        preset = Preset(
            name=data["name"],
            agents=_strings(f"{source} agents", data["agents"]),
            testbed_sweeps=_strings(f"{source} [testbed] sweeps", testbed["sweeps"]),
            testbed_seeds=testbed["seeds"],
            num_test=testbed["num_test"],
            num_models=testbed["num_models"],
            testbed_overrides=_overrides("testbed.overrides", testbed.get("overrides", {})),
            bandit_env=bandit["env"],
            # One setting is stored as its pairs, several as a tuple of them (Preset's two forms).
            bandit_env_kwargs=pairs[0] if len(pairs) == 1 else pairs,
            bandit_steps=bandit["steps"],
            bandit_seeds=bandit["seeds"],
            bandit_overrides=_overrides("bandit.overrides", bandit.get("overrides", {})),
            testbed_only=_names(f"{source} testbed_only", data.get("testbed_only", [])),
            bandit_seeds_per_cell=_seeds_per_cell(f"{source} [bandit.seeds_per_cell]", bandit.get("seeds_per_cell", {})),
        )
        _check_override_agents(preset)
        return preset
    except ValueError as error:
        message = str(error)
        raise ValueError(message if message.startswith(source) else f"{source}: {message}") from None


def read_experiment_file(path: str | Path, flag: str = "--config") -> Preset:
    """The preset of the experiment file at ``path``; ValueError naming it otherwise."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{flag} {str(path)!r} does not exist")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{flag} {str(path)!r} is not UTF-8 text") from None
    return preset_from_toml(text, source=f"{flag} {str(path)!r}")
