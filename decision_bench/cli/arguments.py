"""Command-line values shared by several commands, parsed by one rule each."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Sequence

from decision_bench._src.console import HelpFormatter
from decision_bench._src.memory import MAX_RESAMPLES, check_count
from decision_bench._src.validation import repeated
from decision_bench.agents import Agent, registry
from decision_bench.analysis.correlation import MIN_TAIL_DRAWS, min_resamples
from decision_bench.experiments.agent_files import AgentFile
from decision_bench.experiments.cells import config_label
from decision_bench.specs import ProblemSpec


def add_command(subparsers, name: str, help: str, description: str, epilog: str | None = None):
    """A subcommand's parser with the package's help formatter: ``help`` is its line in
    ``decision-bench --help``, ``description`` and ``epilog`` frame ``NAME --help``."""
    return subparsers.add_parser(name, help=help, description=description, epilog=epilog,
                                 formatter_class=HelpFormatter)


def parse_agent_list(text: str, flag: str = "--agents") -> tuple[str, ...]:
    """"mlp, ensemble+" -> ("mlp", "ensemble+"): the names of a comma-separated
    list, spaces and empty items dropped, order kept.

    One rule for every command that takes --agents: a list naming no agent (""
    or ",") and a name given twice are refused with one line naming ``flag``
    (a repeated agent would run twice and write its rows twice). Whether each
    name exists is the command's own check.
    """
    names = tuple(name.strip() for name in str(text).split(",") if name.strip())
    if not names:
        raise ValueError(f"{flag} must name at least one agent, got {text!r}")
    if repeats := repeated(names):
        raise ValueError(f"{flag} names {', '.join(map(repr, repeats))} twice, got {text!r}; give each agent once")
    return names


# Every option (and positional) that names a file or folder, by argparse dest: an
# empty value would otherwise fall back to a default (--baselines '' -> standard) or
# mean the current folder (--out '' writes into it), silently.
PATH_OPTIONS = {
    "out": ("--out", "a folder ('.' for the current one)"),
    "baselines": ("--baselines", "a stored baseline name or the path of a baselines .json file"),
    "tensorboard": ("--tensorboard", "a folder ('.' for the current one)"),
    "config": ("--config", "an experiment file"),
    "agent_files": ("--agent-file", "a Python file"),
    "directory": ("DIR", "a results folder ('.' for the current one)"),
    "run_dirs": ("RUN_DIR", "the folder of a finished testbed or reproduce run ('.' for the current one)"),
    "folder": ("--folder", "a folder ('.' for the current one)"),
}


def check_path_options(args) -> None:
    """One rule for every command: a path-like option given as '' (or blanks) is
    refused in one line naming it and what it takes. Options a command does not
    have are skipped."""
    for dest, (flag, accepted) in PATH_OPTIONS.items():
        value = getattr(args, dest, None)
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, str) and not item.strip():
                raise ValueError(f"{flag} must name {accepted}, got {item!r}")


def parse_resamples(value: Any, flag: str = "--resamples") -> int:
    """The bootstrap resample count of a command (analyze, reproduce, demo): one rule
    and one message for all of them. At least min_resamples() (10 resamples beyond
    each bound of the 90% interval) and at most MAX_RESAMPLES (more only hold more
    memory); anything else, a non-integer included, is one line naming ``flag``."""
    minimum = min_resamples()
    try:
        count = int(str(value).strip()) if not isinstance(value, (bool, float)) else None
    except ValueError:
        count = None
    if count is None or not minimum <= count <= MAX_RESAMPLES:
        raise ValueError(
            f"{flag} must be an integer in [{minimum}, {MAX_RESAMPLES}] (at least {MIN_TAIL_DRAWS} resamples "
            f"beyond each bound of the 90% interval; more only hold more memory), got {value!r}"
        )
    return count


RESAMPLES_HELP = (
    f"bootstrap resamples, an integer in [{min_resamples()}, {MAX_RESAMPLES}] ({MIN_TAIL_DRAWS} beyond each "
    "bound of the 90%% interval)"
)


SET_HELP = (
    "AGENT.FIELD=VALUE: set one hyperparameter of one of the run's agents (repeatable), e.g. "
    "ensemble.num_ensemble=30; FIELD is a field of the agent's config (or a keyword option of an "
    "--agent-file's make_agent); lists are comma-separated (hidden_sizes=20,20)"
)
AGENT_FILE_HELP = (
    "a Python file defining make_agent(spec) -> Agent and NAME (default: the file's stem); its "
    "agent is then usable by that name; results are keyed by the file's SHA-256; may repeat"
)


def add_agent_options(
    parser, set_note: str = "", agent_file_help: str = AGENT_FILE_HELP
) -> None:
    """Adds --agent-file (args.agent_files) and --set (args.settings), both repeatable, to
    a command that runs agents; ``set_note`` is appended to --set's help (how it combines
    with the command's own flags)."""
    parser.add_argument("--agent-file", action="append", default=[], dest="agent_files", metavar="FILE",
                        help=agent_file_help)
    parser.add_argument("--set", action="append", default=[], dest="settings", metavar="AGENT.FIELD=VALUE",
                        help=SET_HELP + set_note)


def add_display_options(parser, bars: str, logged: str, when: str) -> None:
    """Adds --no-progress (hides the progress ``bars``) and --tensorboard DIR (logs
    ``logged`` as TensorBoard event files ``when``) to a command that runs cells."""
    parser.add_argument("--no-progress", action="store_true", help=f"hide the progress {bars}")
    parser.add_argument("--tensorboard", metavar="DIR", default=None,
                        help=f"also log {logged} as TensorBoard event files in DIR, {when} "
                        "(needs the tensorboard extra: pip install 'decision-bench[tensorboard]')")


def parse_value(text: str, default: Any = None) -> Any:
    """One --set VALUE as the type of the field's ``default``: "30" -> 30, "0.5" -> 0.5
    (and "1" -> 1.0 for a float field, so 1 and 1.0 name the same run), "20,20" -> (20, 20)
    (a one-item tuple for a tuple field), "true"/"false" for a bool field, "none" -> None;
    anything else stays text. Range and type checks are the agent's own."""
    text = text.strip()
    if isinstance(default, bool):
        lowered = text.lower()
        return {"true": True, "false": False}.get(lowered, text)
    if text.lower() == "none":
        return None
    if "," in text or isinstance(default, tuple):
        item_default = default[0] if isinstance(default, tuple) and default else None
        return tuple(parse_value(item, item_default) for item in text.split(",") if item.strip())
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        return float(value) if isinstance(default, float) else value
    return text


def parse_settings(
    items: Sequence[str],
    agents: Sequence[str],
    agent_files: Sequence[AgentFile] = (),
    flag: str = "--set",
) -> dict[str, dict[str, Any]]:
    """["ensemble.num_ensemble=30", ...] -> {"ensemble": {"num_ensemble": 30}}, validated.

    agents: the run's agents (registered names and agent files' names); agent_files:
    the run's loaded files. Refused in one line naming ``flag`` and the item: a
    malformed item, an agent the run does not run (listing the run's agents), a
    field the agent does not have (listing its fields), a field given twice, and a
    value the agent's own config refuses (its message, with the accepted range).
    """
    files = {f.name: f for f in agent_files}
    settings: dict[str, dict[str, Any]] = {}
    raw: dict[str, list[str]] = {}
    for item in items:
        key, sep, text = str(item).partition("=")
        agent, dot, field = key.strip().rpartition(".")
        if not sep or not dot or not agent or not field or not text.strip():
            raise ValueError(f"{flag} must look like AGENT.FIELD=VALUE (e.g. ensemble.num_ensemble=30), got {item!r}")
        if agent not in agents:
            raise ValueError(f"{flag} {item!r}: agent {agent!r} is not in this run; its agents are {', '.join(agents)}")
        fields = _fields(agent, files)
        if field not in fields:
            raise ValueError(f"{flag} {item!r}: {agent!r} has no field {field!r}; its fields are {', '.join(fields) or '(none)'}")
        if field in settings.get(agent, {}):
            raise ValueError(f"{flag} sets {agent}.{field} twice; give it once")
        value = parse_value(text, fields[field])
        if agent in files:
            _check_file_option_type(flag, item, fields[field], value)
        settings.setdefault(agent, {})[field] = value
        raw.setdefault(agent, []).append(str(item))
    for agent, values in settings.items():
        try:
            _check_values(agent, values, files)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{flag} {' '.join(raw[agent])}: {str(error).splitlines()[0]}") from None
    return settings


def _check_file_option_type(flag: str, item: str, default: Any, value: Any) -> None:
    """An agent file's option takes values of its default's type (F24, F25): "4.5" for an
    int option, or "abc" for a number, reached make_agent as given. A default of None or
    of another type says nothing, so any value is passed on."""
    if isinstance(default, bool):
        ok, kind = isinstance(value, bool), "true or false"
    elif isinstance(default, int):
        ok, kind = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif isinstance(default, float):
        ok, kind = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
    else:
        return
    if not ok:
        raise ValueError(f"{flag} {item!r}: the option's default is {default!r}, so its value must be {kind}")


def _fields(agent: str, files: dict[str, AgentFile]) -> dict[str, Any]:
    """{field: default} of a registered agent's config, or an agent file's options."""
    if agent in files:
        return dict(files[agent].options)
    config_class = registry.config(agent).__class__
    return {f.name: getattr(registry.config(agent), f.name) for f in dataclasses.fields(config_class)}


def _check_values(agent: str, values: dict[str, Any], files: dict[str, AgentFile]) -> None:
    """The agent's own checks: its config's (registered), or building it on a small
    stand-in problem (an agent file: building compiles nothing)."""
    if agent in files:
        built = files[agent].make_agent(ProblemSpec(2, 2, 0.1, 10), **values)
        if not isinstance(built, Agent):
            raise ValueError(f"make_agent must return a decision_bench.agents.Agent, got {type(built).__name__}")
    else:
        registry.config(agent, **values)


def settings_label(values: dict[str, Any]) -> str:
    """{"num_ensemble": 3, "l2": 0.5} -> "l2=0.5 num_ensemble=3": an agent's --set
    values as the rows' agent_config column shows them (``experiments.cells.config_label``)."""
    return config_label(values)

def seed_count(flag_value: int | None, default_count: int) -> int:
    """The number of seeds of --seeds N (checked: an integer in [1, 2**31 - 1]), or
    ``default_count`` (a sweep's) when the flag is not given."""
    return default_count if flag_value is None else check_count("--seeds", flag_value)


def check_replay_flags(args: argparse.Namespace, agent: str, update_mode: str) -> None:
    """An agent that updates online (one update per observation: host agents, knn, hmc,
    linear_gaussian, ...) never draws replay minibatches: --steps-per-obs and
    --batch-size given for it would be ignored without a word."""
    if update_mode != "online":
        return
    from decision_bench.bandit.loop import BanditLoopConfig as defaults  # noqa: PLC0415 - imports jax

    given = [f"{flag} {value}" for flag, value, default in (
        ("--steps-per-obs", args.steps_per_obs, defaults.steps_per_obs),
        ("--batch-size", args.batch_size, defaults.batch_size),
    ) if value != default]
    if given:
        raise ValueError(
            f"{' and '.join(given)}: agent {agent!r} updates online (one update per observation, no replay "
            f"minibatches), so these would not apply to it; leave them at their defaults "
            f"({defaults.steps_per_obs}, {defaults.batch_size}) or run {agent!r} in a command of its own"
        )
