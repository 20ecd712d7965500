"""One record per registered agent, declared beside its family (neural_testbed's
``PaperAgent(default, ctor, sweep)``; STYLE.md, pattern 11).

Each family module ends with ``ENTRIES``, a tuple of :class:`AgentEntry`, one per
name it registers; agents/registry.py lists the modules' ``ENTRIES``, one line per
family. Everything else that knows a fact about an agent reads it from here: the
registry (config, factory, input and reward kinds), ``evaluation.tune.PAPER_GRIDS``,
``experiments.presets.CORE_AGENTS``, ``analysis.figures.AGENT_COLOURS`` and the
registry-wide tests (:class:`TestFacts`, ``since``), so no table elsewhere can drift
from the family.
"""

from __future__ import annotations

import dataclasses
import re
import types
from typing import TYPE_CHECKING, Any, Callable, Mapping

from decision_bench._src.validation import check_choice

if TYPE_CHECKING:
    from decision_bench.agents.base import Agent
    from decision_bench.specs import ProblemSpec

# What an agent's inputs are: real-valued features, or one-hot arm features (a coin per arm).
INPUT_KINDS = ("features", "one_hot")
# What rewards it models: 0/1 labels (sample_logits are class logits), or real-valued
# (Gaussian) rewards (sample_logits are scores (0, sampled mean reward)).
REWARD_KINDS = ("binary", "real")
# The release whose runs' fingerprints tests/_src/test_fingerprints.py pins.
PINNED_RELEASE = "0.2.0"

_COLOUR = re.compile(r"#[0-9a-f]{6}")


@dataclasses.dataclass(frozen=True)
class TestFacts:
    """What the registry-wide contract tests (tests/agents/test_contract.py) may expect."""

    __test__ = False  # not a pytest class

    deterministic: bool = False  # no epistemic index: samples do not depend on the key
    data_independent: bool = False  # ignores the data: no training improvement to check


@dataclasses.dataclass(frozen=True)
class AgentEntry:
    """Everything the package knows about one registered agent.

    name: the registered name. config: its frozen config class (defaults are the
    papers'). make: ``make(spec, config) -> Agent``. colour: '#rrggbb', its colour in
    every figure. inputs, rewards: one of INPUT_KINDS, REWARD_KINDS. paper_grid: the
    real-valued part of paper 000's App. C sweep, {hyperparameter: values} (None: no
    grid). core: its place among paper 000's core agents (the presets' order), None
    if it is not one. since: the release that first shipped it (PINNED_RELEASE for
    every family that release had), else the issue that added it. test: its
    contract-test facts.
    """

    name: str
    config: type
    make: Callable[[ProblemSpec, Any], Agent]
    colour: str
    inputs: str = "features"
    rewards: str = "binary"
    paper_grid: Mapping[str, tuple[float, ...]] | None = None
    core: int | None = None
    since: str = PINNED_RELEASE
    test: TestFacts = TestFacts()

    def __post_init__(self):
        check_choice("inputs", self.inputs, INPUT_KINDS)
        check_choice("rewards", self.rewards, REWARD_KINDS)
        if not _COLOUR.fullmatch(self.colour):
            raise ValueError(f"colour of agent {self.name!r} must be '#rrggbb', got {self.colour!r}")
        if self.paper_grid is not None:
            grid = {key: tuple(values) for key, values in self.paper_grid.items()}
            object.__setattr__(self, "paper_grid", types.MappingProxyType(grid))
