"""Presets: what a reproduction runs (agents, testbed sweeps, bandit settings, sizes).

Each preset's settings were fixed before any of its results were seen; the
comments say what each one trades for speed.

A preset holds one bandit setting or several (``Preset.bandit_env_kwargs``): the
robustness presets run the neural bandit under several generative models (the
testbed's families: activation, hidden sizes) and input dimensions (d = 2, 10,
50 with N = 20 d actions, paper 000 App. E). A setting names ``activation`` and
``hidden_sizes`` only for a family other than the default relu (50, 50), so the
cells of presets made before families existed keep their ids and resume.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from decision_bench._src.memory import check_count
from decision_bench._src.validation import check_choice
from decision_bench.agents.registry import ENTRIES
from decision_bench.envs.bandits import make_bandit
from decision_bench.experiments.cells import seed_groups
from decision_bench.evaluation.sweeps import (
    DEFAULT_ACTIVATION,
    DEFAULT_HIDDEN_SIZES,
    SWEEP_NAMES,
    Sweep,
    TestbedSetting,
    TestDesign,
    get_sweep,
    robustness_activation,
    robustness_quick,
    robustness_width,
)

PRESET_NAMES = ("demo", "quick", "standard", "paper", "paper-dims", "robustness", "robustness-quick")
# Testbed sweeps built here rather than in evaluation.sweeps (see testbed_sweep).
PRESET_SWEEPS = ("demo", "robustness")
# The bandit input dimensions of paper 000's Figs. 16-17 (N = 20 d actions each).
ROBUSTNESS_BANDIT_DIMS = (2, 10, 50)
# Paper 000's seven core agents, in the order of their entries' ``core`` (agents/entry.py).
_CORE_ENTRIES = sorted((entry for entry in ENTRIES if entry.core is not None), key=lambda entry: entry.core)
CORE_AGENTS = tuple(entry.name for entry in _CORE_ENTRIES)


@dataclasses.dataclass(frozen=True)
class Preset:
    """What a reproduction runs. Overrides map agent name -> {hyperparameter: value}."""

    name: str
    agents: tuple[str, ...]
    testbed_sweeps: tuple[str, ...]  # names of evaluation sweeps, or "demo" (built here)
    testbed_seeds: int
    num_test: int
    num_models: int
    testbed_overrides: tuple  # ((agent, ((key, value), ...)), ...)
    bandit_env: str
    # One setting ((key, value), ...) or several (((key, value), ...), ...): env kwargs.
    bandit_env_kwargs: tuple
    bandit_steps: int
    bandit_seeds: int
    bandit_overrides: tuple
    # Agents run on the testbed only (paper 000 leaves sgmcmc out of its bandit: "several
    # orders of magnitude too large to consider in online learning", Sec. 5.2); their
    # testbed cells run after every other cell, since no headline point waits for them.
    testbed_only: tuple[str, ...] = ()
    # ((agent, n), ...): that agent's bandit seeds run as cells of n seeds each rather than
    # one cell of all of them. A cell is the unit a run stores and resumes from: an agent
    # whose every seed costs hours here (the paper preset's 100-member ensembles at d = 50)
    # is split into parts that each finish in one sitting, and the finished parts are kept
    # (and can be carried to another machine, ``reproduce --cells-from``).
    bandit_seeds_per_cell: tuple = ()

    def __post_init__(self):
        # Bad settings fail here, in one line naming the accepted values, before any cell runs.
        if not isinstance(self.testbed_only, tuple) or not all(isinstance(a, str) for a in self.testbed_only):
            raise ValueError(f"testbed_only must be a tuple of agent names, got {self.testbed_only!r}")
        for sweep in self.testbed_sweeps:
            check_choice("testbed sweep", sweep, (*SWEEP_NAMES, *PRESET_SWEEPS))
        for field in ("testbed_seeds", "num_test", "num_models", "bandit_steps", "bandit_seeds"):
            check_count(field, getattr(self, field))
        split = self.bandit_seeds_per_cell
        if not isinstance(split, tuple) or not all(
            isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in split
        ):
            raise ValueError(f"bandit_seeds_per_cell must be ((agent, seeds per cell), ...), got {split!r}")
        if len({agent for agent, _ in split}) != len(split):
            raise ValueError(f"bandit_seeds_per_cell names an agent twice: {split!r}")
        for agent, count in split:
            check_count(f"bandit_seeds_per_cell[{agent!r}]", count)
        settings = self.bandit_settings
        if len(set(settings)) != len(settings):
            raise ValueError(f"preset {self.name!r} lists a bandit setting twice: {list(settings)}")
        for setting in settings:
            make_bandit(self.bandit_env, **dict(setting))

    @property
    def bandit_settings(self) -> tuple[tuple, ...]:
        """The bandit settings, each a key-sorted tuple of (env kwarg, value) pairs."""
        kwargs = tuple(self.bandit_env_kwargs)
        several = bool(kwargs) and all(_is_pairs(item) and item for item in kwargs)
        if not several and not _is_pairs(kwargs):
            raise ValueError(
                f"bandit_env_kwargs must be ((key, value), ...) or a tuple of those, got {self.bandit_env_kwargs!r}"
            )
        settings = tuple(tuple(sorted(s)) for s in (kwargs if several else (kwargs,)))
        for setting in settings:
            keys = [k for k, _ in setting]
            if len(set(keys)) != len(keys):
                raise ValueError(f"a bandit setting names a key twice: {setting!r}")
        return settings

    def runs_bandit(self, agent: str) -> bool:
        """Whether ``agent`` gets bandit cells (every agent but those in ``testbed_only``)."""
        return agent not in self.testbed_only

    def bandit_seed_groups(self, agent: str) -> tuple[tuple[int, ...], ...]:
        """``agent``'s bandit seeds as its cells run them: consecutive groups of its
        ``bandit_seeds_per_cell`` (all seeds in one group when it has none)."""
        seeds = tuple(range(self.bandit_seeds))
        return seed_groups(seeds, dict(self.bandit_seeds_per_cell).get(agent, len(seeds)))

    def overrides(self, which: str, agent: str) -> dict[str, Any]:
        table = dict(self.testbed_overrides if which == "testbed" else self.bandit_overrides)
        return dict(table.get(agent, ()))


def _is_pairs(value: Any) -> bool:
    """True for ((str, value), ...): one bandit setting's env kwargs."""
    return isinstance(value, tuple) and all(
        isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in value
    )


def neural_bandit_setting(
    input_dim: int,
    activation: str = DEFAULT_ACTIVATION,
    hidden_sizes: tuple[int, ...] = DEFAULT_HIDDEN_SIZES,
    temperature: float = 0.1,
) -> tuple:
    """NeuralBandit-v0 kwargs with N = 20 d actions (paper 000 App. E); activation and
    hidden_sizes appear only for a family other than relu (50, 50), as in testbed cells."""
    setting = {"input_dim": input_dim, "num_actions": 20 * input_dim, "temperature": temperature}
    if (activation, tuple(hidden_sizes)) != (DEFAULT_ACTIVATION, DEFAULT_HIDDEN_SIZES):
        setting.update(activation=activation, hidden_sizes=tuple(hidden_sizes))
    make_bandit("NeuralBandit-v0", **setting)  # one-line errors for bad values, here
    return tuple(sorted(setting.items()))


def _families(sweep: Sweep) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The sweep's (activation, hidden_sizes) families in order of first appearance."""
    return tuple(dict.fromkeys((s.activation, s.hidden_sizes) for s in sweep.settings))


def robustness_bandit_settings(families) -> tuple[tuple, ...]:
    """Every family at d = 2 (the regret column of Figs. 10-11), then the default family
    at the other dimensions of ROBUSTNESS_BANDIT_DIMS (Figs. 16-17)."""
    settings = tuple(neural_bandit_setting(2, a, h) for a, h in families)
    return settings + tuple(neural_bandit_setting(d) for d in ROBUSTNESS_BANDIT_DIMS if d != 2)


def sorted_items(mapping: Mapping[str, Mapping[str, Any]]) -> tuple:
    return tuple(sorted((k, tuple(sorted(v.items()))) for k, v in mapping.items()))


def _laptop_preset(
    name: str, sweep: str, *, num_test: int, bandit_steps: int, bandit_seeds: int
) -> Preset:
    """The core agents with 30-member ensembles on the d = 2 testbed ``sweep`` (5 seeds,
    1000 model draws) and the d = 2, 40-action, beta = 0.1 neural bandit."""
    members = sorted_items({"ensemble": {"num_ensemble": 30}, "ensemble+": {"num_ensemble": 30}})
    return Preset(
        name=name,
        agents=CORE_AGENTS,
        testbed_sweeps=(sweep,),
        testbed_seeds=5,
        num_test=num_test,
        num_models=1000,
        testbed_overrides=members,
        bandit_env="NeuralBandit-v0",
        bandit_env_kwargs=(("input_dim", 2), ("num_actions", 40), ("temperature", 0.1)),
        bandit_steps=bandit_steps,
        bandit_seeds=bandit_seeds,
        bandit_overrides=members,
    )


def get_preset(name: str) -> Preset:
    """The preset called ``name``: "demo" (< 3 min on 2 cores), "quick" (< 30 min),
    "standard" (the headline at laptop size, <= 60 min), "paper" (paper 000's Figs. 7-9:
    hours on 2 cores, minutes on a GPU), "paper-dims" (its Figs. 16-17), "robustness"
    (paper 000 Sec. 6 and Figs. 16-17, cluster-sized) and "robustness-quick" (< 45 min)."""
    check_choice("preset", name, PRESET_NAMES)
    if name == "demo":
        # Minutes on a laptop, without cutting any agent below the sizes of the
        # `standard` preset: ensembles of 30 members and every agent's default SGD
        # steps (an earlier demo used 10 members and 500 steps, which put ensemble+
        # and epinet behind mlp at tau = 10, the opposite of the papers). What it
        # saves on is breadth, because compilation (one program per agent and
        # setting) dominates: one testbed setting (d = 2, T = 100, beta = 0.1), 5
        # seeds, 500 test samples, and 3 bandit seeds of 2000 steps; 1000 model draws
        # keep the joint likelihoods of the sampling agents honest.
        return _laptop_preset("demo", "demo", num_test=500, bandit_steps=2000, bandit_seeds=3)
    if name == "quick":
        return _laptop_preset("quick", "quick", num_test=1000, bandit_steps=5000, bandit_seeds=5)
    if name == "standard":
        # Settings fixed before any result of this preset was seen. Every core agent at
        # its paper defaults except the ensemble size: 100-member ensembles cost about
        # 20 minutes of bandit alone on 2 cores (measured: ensemble+ with 100 members,
        # 20 seeds x 3000 steps at d = 2 takes ~8 min), so ensemble and ensemble+ both
        # use 30 members (the reference's own ensemble+ comparison size). The standard
        # sweep covers all three temperatures, T from 1 to 1000, tau 1 / 10 iid / 10
        # dyadic, 5 seeds; the bandit is d = 2 (paper 000 Figs. 16-17: the finding
        # holds for d = 2) with 10 seeds and 10,000 steps.
        return _laptop_preset("standard", "standard", num_test=1000, bandit_steps=10_000, bandit_seeds=10)
    if name == "robustness":
        # Paper 000 Sec. 6 and App. E at full size, for a cluster or GPU (--executor
        # ray): the core agents at their paper defaults on every generative family
        # of Figs. 10 (7 activations at width 50) and 11 (relu at widths 5 to 100),
        # d = 2, T in {10, 100, 1000}, all three temperatures, tau 1 / 10 iid / 10
        # dyadic, 5 seeds (the "robustness" sweep: 11 families x 9 settings); and the
        # paper's bandit (beta = 0.1, 20 seeds, 50,000 steps) under every family at
        # d = 2 and under the default family at d = 10 and 50 (N = 20 d actions).
        return Preset(
            name="robustness",
            agents=CORE_AGENTS,
            testbed_sweeps=("robustness",),
            testbed_seeds=5,
            num_test=1000,
            num_models=1000,
            testbed_overrides=(),
            bandit_env="NeuralBandit-v0",
            bandit_env_kwargs=robustness_bandit_settings(_families(robustness_sweep())),
            bandit_steps=50_000,
            bandit_seeds=20,
            bandit_overrides=(),
        )
    if name == "robustness-quick":
        # Fixed before any result of this preset was seen, from measured costs on 2
        # cores; the target is < 45 minutes in all, compilation included.
        # Testbed: the existing `robustness_quick` sweep unchanged (relu, tanh,
        # sigmoid, gelu at width 50 and relu at width 10; d = 2, T in {10, 100},
        # beta = 0.1; tau 1 / 10 iid / 10 dyadic; 3 seeds), with the demo's sizes
        # (num_test 500, num_models 1000) and 30-member ensembles. The seven agents
        # cost ~84 s per setting at 5 seeds warm (mlp 2, ensemble 11, dropout 13,
        # bbb 14, hypermodel 22, ensemble+ 12, epinet 10), so ~50 s at 3 seeds x 10
        # settings ~ 8.5 min; compilation ~4 s per agent, family and training-set
        # bucket for the fit (2 buckets) plus ~4 s per agent and family for the
        # evaluation: 7 x 5 x 12 s ~ 7 min. Testbed ~ 15.5 min.
        # Bandit: the 5 families at d = 2 (40 actions) and relu (50, 50) at d = 10
        # and 50 (200 and 1000 actions), 3 seeds x 2000 steps (the demo's bandit
        # size): ~51 s per setting at d = 2 (mlp 1, ensemble 13, ensemble+ 16,
        # hypermodel 8, bbb 6, epinet 4, dropout 3); at d = 50, 1000 actions,
        # timings of ensemble+ and hypermodel (1000 steps, 3 seeds, compilation
        # included) were no slower than at d = 2 (24 s and 15 s both), so budget
        # d = 10 and d = 50 at 2x the d = 2 cost to be safe: 5 x 51 s +
        # 2 x 102 s ~ 7.7 min. Total ~ 23 min of the 45: the margin covers a
        # slower machine or a shared one. Not cut further, to keep every core agent
        # and 3 seeds (the bootstrap's unit); not grown, because a 2-core machine
        # shared with other work can be twice as slow.
        members = sorted_items({"ensemble": {"num_ensemble": 30}, "ensemble+": {"num_ensemble": 30}})
        return Preset(
            name="robustness-quick",
            agents=CORE_AGENTS,
            testbed_sweeps=("robustness_quick",),
            testbed_seeds=3,
            num_test=500,
            num_models=1000,
            testbed_overrides=members,
            bandit_env="NeuralBandit-v0",
            bandit_env_kwargs=robustness_bandit_settings(_families(robustness_quick())),
            bandit_steps=2000,
            bandit_seeds=3,
            bandit_overrides=members,
        )
    if name == "paper-dims":
        # Paper 000 Figs. 16-17: the paper preset at the two other input dimensions
        # (d = 2 and 10, N = 20 d actions), the same agents, steps and seeds; its testbed
        # cells are the paper preset's (paper2d), so a run reuses the stored rows.
        return dataclasses.replace(
            _paper_preset(),
            name="paper-dims",
            bandit_env_kwargs=tuple(neural_bandit_setting(d) for d in PAPER_DIMS_BANDIT),
        )
    return _paper_preset()


# Paper 000 App. E.2's bandit agents, in its order, and epinet (this project's core agent,
# reported beside them as not in the paper); sgmcmc joins on the testbed only.
PAPER_BANDIT_AGENTS = ("mlp", "ensemble", "dropout", "bbb", "ensemble+", "hypermodel", "epinet")
PAPER_TESTBED_ONLY = ("sgmcmc",)
PAPER_DIMS_BANDIT = (2, 10)


def _paper_preset() -> Preset:
    """Paper 000's experiment, fixed from the paper before any result was seen: the
    testbed's paper2d sweep with 10 seeds (Figs. 8-9 use 10; the stored ``paper2d``
    baselines hold its rows for the core agents), every agent at its paper defaults
    (100-member ensembles), sgmcmc on the testbed only; the neural bandit of Sec. 5.2
    and App. E.1: d = 50, N = 1000 actions, beta = 0.1, 50,000 steps, 20 seeds."""
    return Preset(
        name="paper",
        agents=PAPER_BANDIT_AGENTS + PAPER_TESTBED_ONLY,
        testbed_sweeps=("paper2d",),
        testbed_seeds=10,
        num_test=1000,
        num_models=1000,
        testbed_overrides=(),
        bandit_env="NeuralBandit-v0",
        bandit_env_kwargs=(("input_dim", 50), ("num_actions", 1000), ("temperature", 0.1)),
        bandit_steps=50_000,
        bandit_seeds=20,
        bandit_overrides=(),
        testbed_only=PAPER_TESTBED_ONLY,
        # The two 100-member ensembles run one seed per cell: their 20-seed runs take about
        # 8 h of one core each at d = 50 (ensemble+ ran 1,000 steps in 10 min alone on a core),
        # longer than a session on a 2-core machine, and a run interrupted mid-cell resumes
        # only on the machine that holds its checkpoint. One seed is also the cheapest per
        # seed (bench/bandit_scaling.py, CPU s per seed-step at 1 / 2 / 5 seeds: ensemble+
        # 0.016 / 0.025 / 0.022, ensemble 0.012 / 0.014 / 0.016), about 10-14 min a cell.
        bandit_seeds_per_cell=(("ensemble", 1), ("ensemble+", 1)),
    )


def robustness_sweep() -> Sweep:
    """Both robustness sweeps in one: every family of ``robustness_activation`` and
    ``robustness_width`` (relu (50, 50), in both, once), the same settings and designs."""
    activation, width = robustness_activation(), robustness_width()
    settings = tuple(dict.fromkeys(activation.settings + width.settings))
    return Sweep("robustness", settings, activation.designs, num_seeds=activation.num_seeds)


def testbed_sweep(name: str) -> Sweep:
    """The evaluation sweep called ``name``, or one built here: the demo's one-setting
    sweep ("demo") and both robustness sweeps in one ("robustness")."""
    if name == "robustness":
        return robustness_sweep()
    if name != "demo":
        return get_sweep(name)
    return Sweep(
        "demo",
        (TestbedSetting(input_dim=2, num_train=100, temperature=0.1),),
        (TestDesign(1), TestDesign(10), TestDesign(10, 2)),
        num_seeds=5,
    )


# What each preset's numbers can and cannot show, printed under its summary.
PRESET_SCOPE = {
    "demo": "Scope: the demo runs one testbed setting (T = 100, beta = 0.1, where the agents' joint "
    "predictions differ little: even the reference implementation's ensemble+ does not beat its mlp "
    "there) and 3 short bandit runs: enough to exercise the whole pipeline and compare the agents, "
    "far too few points for the correlations to confirm or refute the papers' headline; "
    "`--preset standard` (about 20 minutes on 2 cores) is the smallest run meant to answer it.",
    "quick": "Scope: 2 training-set sizes at one temperature; the correlations have wide intervals.",
    "standard": "Scope: all three temperatures, T from 1 to 1000, 5 testbed seeds, the d = 2 bandit with "
    "10 seeds and 10,000 steps, 30-member ensembles: the papers' question at laptop size.",
    "paper": "Scope: paper 000's experiment (Figs. 7-9): the paper2d testbed with 10 seeds and the d = 50, "
    "1000-action bandit with 20 seeds of 50,000 steps, every agent at its paper defaults; sgmcmc on the "
    "testbed only, as in the paper; epinet is not among the paper's bandit agents.",
    "paper-dims": "Scope: paper 000's Figs. 16-17: the paper preset's agents and testbed with the bandit at "
    "d = 2 and 10 (N = 20 d actions), 20 seeds of 50,000 steps each.",
    "robustness": "Scope: paper 000 Sec. 6 (11 generative families, d = 2, T in {10, 100, 1000}, all three "
    "temperatures, 5 seeds) and Figs. 16-17 (bandit d = 2, 10, 50, 20 seeds of 50,000 steps).",
    "robustness-quick": "Scope: 5 generative families at T in {10, 100}, beta = 0.1, 3 testbed seeds; bandits of "
    "3 seeds x 2000 steps per family (d = 2) and at d = 10 and 50: every correlation rests on 7 agents and 3 "
    "seeds, so the intervals are wide; `--preset robustness` is the study's full size.",
}
