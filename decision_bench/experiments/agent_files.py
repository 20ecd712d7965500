"""Users' agent files (``--agent-file``): loading, fingerprinting and their settable options.

One Python file defines ``make_agent(spec, **options) -> decision_bench.agents.Agent``
(or a host agent in the Neural Testbed's signature, ``agent(data, spec) -> sampler``,
which ``agents/host_agent.py`` wraps into an Agent record) and, optionally, ``NAME`` (default: the file's stem). Every command that runs agents
(``reproduce``, ``testbed``, ``bandit``, ``tune``) loads files with
:func:`read_agent_files` and identifies their results by :attr:`AgentFile.sha256`,
the SHA-256 of the file's bytes: an edited file names new cells, new bandit
checkpoints and new tune settings rather than reusing the old file's results.

The keyword parameters of ``make_agent`` after ``spec`` that have defaults are the
agent's options: what ``--set NAME.OPTION=VALUE`` may change (``AgentFile.options``).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import inspect
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from decision_bench._src.files import sha256_hex
from decision_bench._src.validation import repeated, reporting_user_errors, user_code_error


# An agent name is written in comma-separated --agents lists, in --set AGENT.FIELD=VALUE
# items and in cell ids and CSV columns: no comma, '=' or blank, and not empty. The
# registered names fit it (e.g. "ensemble+", "sgmcmc_quick").
AGENT_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
AGENT_NAME_RULE = "letters, digits, '_', '.', '+' and '-', starting with a letter or digit"


def _import(path: Path) -> Any:
    module_spec = importlib.util.spec_from_file_location(f"decision_bench_user_{path.stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except (Exception, SystemExit) as error:  # noqa: BLE001 - the user's code: any error, one line naming file and line
        raise ValueError(user_code_error(path, error, "importing it")) from None
    return module


@dataclasses.dataclass(frozen=True)
class AgentFile:
    """One loaded agent file.

    name: the agent's name (the file's NAME, else its stem); path: the file, resolved;
    sha256: hex SHA-256 of its bytes (what identifies its results); options: the
    keyword parameters of make_agent with their defaults, ((name, default), ...);
    make_agent: the file's function, its errors turned into one-line ValueErrors
    naming the file and line.
    """

    name: str
    path: str
    sha256: str
    options: tuple = ()
    make_agent: Callable = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def fingerprint(self) -> str:
        """The agent's fingerprint in bandit checkpoints and tune settings."""
        return file_fingerprint(self.sha256)

    def factory(self, settings: dict | None = None) -> Callable:
        """make_agent(spec) with ``settings`` (--set options) bound as keywords; the agent
        it returns is checked against the agent contract (``agents.contract``), its
        errors one line naming the agent and this file."""
        who = f"agent {self.name!r} (agent_file {self.path!r})"
        return functools.partial(_checked_make, self.make_agent, who, dict(settings or {}))


def _checked_make(make_agent: Callable, who: str, settings: dict, spec: Any, **overrides: Any) -> Any:
    from decision_bench.agents.contract import check_agent_contract  # noqa: PLC0415 - imports jax

    return check_agent_contract(make_agent(spec, **settings, **overrides), spec, who)


def _hosting(make_agent: Callable, name: str, defaults: dict, spec: Any, **options: Any) -> Any:
    """make_agent(spec, **options), with a plain callable it returns (a host agent in the
    Neural Testbed's signature, ``agent(data, spec) -> sampler``) wrapped into an Agent
    record by ``agents.host_agent``. The file's ``refit_every`` option, when it declares
    one, is the adapter's: ``--set NAME.refit_every=K``, recorded like every option."""
    built = make_agent(spec, **options)
    from decision_bench.agents.base import Agent  # noqa: PLC0415 - imports jax

    if isinstance(built, Agent) or not callable(built):
        return built  # not callable: the contract check names what it is
    from decision_bench.agents.host_agent import host_agent  # noqa: PLC0415

    refit_every = {**defaults, **options}.get("refit_every", 1)
    try:
        return host_agent(built, spec, refit_every=refit_every, name=name)
    except ValueError as error:
        raise ValueError(f"agent {name!r}: {error}") from None


def host_agent_names(files: Iterable[AgentFile]) -> tuple[str, ...]:
    """The names of the files whose make_agent returns a host agent (a plain callable
    ``agent(data, spec) -> sampler``), asked with a small problem; a file whose
    make_agent fails there is left for the run to report."""
    from decision_bench.agents.base import Agent  # noqa: PLC0415 - imports jax
    from decision_bench.specs import ProblemSpec  # noqa: PLC0415

    spec = ProblemSpec(input_dim=2, num_classes=2, num_train=1)
    names = []
    for agent_file in files:
        raw = agent_file.make_agent.args[0] if isinstance(agent_file.make_agent, functools.partial) else None
        try:
            built = raw(spec) if raw is not None else None
        except ValueError:
            continue
        if callable(built) and not isinstance(built, Agent):
            names.append(agent_file.name)
    return tuple(names)


def file_pairs(files: Iterable[AgentFile], agents: Iterable[str] | None = None) -> tuple[tuple[str, str], ...]:
    """((name, path), ...) of ``files`` (of those whose agent is among ``agents`` when
    given): what a cell's compute function takes to re-read an agent file, picklable
    for worker processes and Ray (``current_make_agent``)."""
    wanted = None if agents is None else set(agents)
    return tuple((f.name, f.path) for f in files if wanted is None or f.name in wanted)


def file_fingerprint(sha256: str, settings: dict | None = None) -> str:
    """"file:<sha256>": what identifies an agent file's agent in bandit checkpoints and
    tune settings; its --set options, when any, are appended ("...;num_members=4")."""
    options = "".join(f";{k}={v!r}" for k, v in sorted((settings or {}).items()))
    return f"file:{sha256}{options}"


def read_agent_file(path: str | Path) -> AgentFile:
    """Loads one agent file; ValueError (one line) for a missing file, an error while
    importing it, no callable make_agent, or a NAME (or, without one, a file stem)
    that no --agents list or --set item could name (AGENT_NAME_PATTERN)."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"agent_file {str(path)!r} is a folder; give the path of a .py file")
    if not path.is_file():
        raise ValueError(f"agent_file {str(path)!r} does not exist")
    if path.suffix != ".py":
        # Python's importer finds no loader for another suffix (an AttributeError deep inside).
        raise ValueError(f"agent_file {str(path)!r} must be a Python file ending in .py")
    digest = sha256_hex(path.read_bytes())
    module = _import(path)
    make_agent = getattr(module, "make_agent", None)
    if not callable(make_agent):
        raise ValueError(
            f"agent_file {str(path)!r} must define make_agent(spec) -> decision_bench.agents.Agent"
        )
    try:
        parameters = list(inspect.signature(make_agent).parameters.values())[1:]
    except (TypeError, ValueError):
        parameters = []
    options = tuple(
        (p.name, p.default)
        for p in parameters
        if p.default is not inspect.Parameter.empty
        and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    )
    name = getattr(module, "NAME", path.stem)
    if not isinstance(name, str) or not AGENT_NAME_PATTERN.fullmatch(name):
        where = "its NAME" if hasattr(module, "NAME") else "its NAME (unset, so the file's stem)"
        raise ValueError(
            f"agent_file {str(path)!r}: {where} must be an agent name of {AGENT_NAME_RULE}, got {name!r}"
        )
    return AgentFile(
        name=name,
        path=str(path.resolve()),
        sha256=digest,
        options=options,
        make_agent=functools.partial(
            _hosting, reporting_user_errors(path, make_agent, "in make_agent"), name, dict(options)
        ),
    )


def load_agent_file(path: str | Path) -> tuple[str, Callable]:
    """(name, make_agent) of a user's agent file (see :func:`read_agent_file`)."""
    loaded = read_agent_file(path)
    return loaded.name, loaded.make_agent


def read_agent_files(paths: Iterable[str | Path], registered: Sequence[str] = ()) -> tuple[AgentFile, ...]:
    """Loads every file, in order; ValueError when a file's agent takes the name of a
    registered agent (``registered``) or of another file's agent."""
    files = tuple(read_agent_file(p) for p in paths)
    clash = sorted(set(registered) & {f.name for f in files})
    if clash:
        from decision_bench.agents.registry import names as registry_names  # noqa: PLC0415 - imports every family

        if set(clash) & set(registry_names()):
            raise ValueError(f"agent_file NAME(s) {clash} clash with registered agents; rename them")
        # `registered` is the run's agent list (reproduce: --agents or the experiment
        # file's agents), which named the file's agent beside --agent-file.
        raise ValueError(
            f"the run's agents {list(registered)} already name the agent file agent(s) {clash}; an --agent-file "
            "adds its agent to the run by itself: leave it out of the agents list"
        )
    if repeats := repeated(f.name for f in files):
        raise ValueError(f"agent files name {repeats} twice; give each agent once")
    return files


def current_make_agent(path: str | Path, sha256: str) -> Callable:
    """The make_agent of the file at ``path``, which must still hash to ``sha256``
    (the digest its cells were planned with): rows of an edited file stored under
    the old file's cells would be stale."""
    path = Path(path)
    if sha256_hex(path.read_bytes()) != sha256:
        raise ValueError(
            f"agent_file {str(path)!r} changed while the run was going on; run the command "
            "again (its finished cells are kept) to compute the new version"
        )
    return read_agent_file(path).make_agent
