"""The agents' entries (agents/entry.py) are the one source of every per-agent table:
the tables derived from them are exactly the literals they replaced (issue 37)."""

from __future__ import annotations

import dataclasses

import pytest

from decision_bench import agents
from decision_bench.agents import registry
from decision_bench.agents.entry import AgentEntry
from decision_bench.analysis.figures import AGENT_COLOURS
from decision_bench.evaluation.tune import PAPER_GRIDS
from decision_bench.experiments.presets import CORE_AGENTS

# Literal copies of the tables as they were before the entries replaced them.
_LAMBDAS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)
PAPER_GRIDS_BEFORE = {
    "mlp": {"l2": _LAMBDAS},
    "ensemble": {"l2": _LAMBDAS},
    "ensemble+": {"l2": (0.1, 0.3, 1.0, 3.0, 10.0)},
    "hypermodel": {"l2": (0.1, 0.3, 1.0, 3.0, 10.0)},
    "dropout": {
        "dropout_rate": (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
        "length_scale": (1.0, 3.0, 10.0),
    },
}
CORE_AGENTS_BEFORE = ("mlp", "ensemble", "dropout", "bbb", "hypermodel", "ensemble+", "epinet")
AGENT_COLOURS_BEFORE = {
    "mlp": "#1f77b4",
    "ensemble": "#ff7f0e",
    "ensemble+": "#2ca02c",
    "dropout": "#d62728",
    "bbb": "#9467bd",
    "hypermodel": "#8c564b",
    "epinet": "#e377c2",
    "sgmcmc": "#7f7f7f",
    "sgmcmc_quick": "#bcbd22",
    "hmc": "#17becf",
    "uniform": "#aec7e8",
    "prior": "#ffbb78",
    "logistic": "#98df8a",
    "knn": "#ff9896",
    "random_forest": "#c5b0d5",
    "deep_kernel": "#c49c94",
    "beta_bernoulli": "#f7b6d2",
    "linear_gaussian": "#dbdb8d",
    "laplace": "#9edae5",
}
CONFIGS_BEFORE = {
    "mlp": ("MLPConfig", "make_mlp"),
    "ensemble": ("EnsembleConfig", "make_ensemble"),
    "ensemble+": ("EnsemblePlusConfig", "make_ensemble_plus"),
    "dropout": ("DropoutConfig", "make_dropout"),
    "uniform": ("UniformConfig", "make_uniform"),
    "prior": ("PriorConfig", "make_prior_agent"),
    "logistic": ("LogisticConfig", "make_logistic"),
    "bbb": ("BBBConfig", "make_bbb"),
    "hypermodel": ("HypermodelConfig", "make_hypermodel"),
    "epinet": ("EpinetConfig", "make_epinet"),
    "sgmcmc": ("SGMCMCConfig", "make_sgmcmc"),
    "sgmcmc_quick": ("SGMCMCQuickConfig", "make_sgmcmc"),
    "hmc": ("HMCConfig", "make_hmc"),
    "beta_bernoulli": ("BetaBernoulliConfig", "make_beta_bernoulli"),
    "linear_gaussian": ("LinearGaussianConfig", "make_linear_gaussian"),
    "knn": ("KNNConfig", "make_knn"),
    "random_forest": ("RandomForestConfig", "make_random_forest"),
    "deep_kernel": ("DeepKernelConfig", "make_deep_kernel"),
    "laplace": ("LaplaceConfig", "make_laplace"),
}
DETERMINISTIC_BEFORE = {"mlp", "uniform", "logistic", "knn", "random_forest"}
DATA_INDEPENDENT_BEFORE = {"uniform", "prior"}
NEW_SINCE_BEFORE = {"laplace"}
# Families registered since the entries came: their entries name a later issue.
ADDED_SINCE = {entry.name for entry in registry.ENTRIES if entry.since not in ("0.2.0", "issue 23")}


def test_derived_tables_equal_the_literals_they_replaced_in_order():
    assert CORE_AGENTS == CORE_AGENTS_BEFORE
    before = {name: colour for name, colour in AGENT_COLOURS.items() if name not in ADDED_SINCE}
    assert list(before.items()) == list(AGENT_COLOURS_BEFORE.items())
    assert PAPER_GRIDS == PAPER_GRIDS_BEFORE
    for name, grid in PAPER_GRIDS.items():  # a grid's key order is grid_points' row-major order
        assert list(grid) == list(PAPER_GRIDS_BEFORE[name]), name
    deterministic = {entry.name for entry in registry.ENTRIES if entry.test.deterministic}
    assert deterministic - ADDED_SINCE == DETERMINISTIC_BEFORE
    data_independent = {entry.name for entry in registry.ENTRIES if entry.test.data_independent}
    assert data_independent - ADDED_SINCE == DATA_INDEPENDENT_BEFORE
    new_since = {entry.name for entry in registry.ENTRIES if entry.since != "0.2.0"}
    assert new_since - ADDED_SINCE == NEW_SINCE_BEFORE
    assert registry.ONE_HOT_AGENTS == ("beta_bernoulli",)
    assert registry.REAL_REWARD_AGENTS == ("linear_gaussian",)


def test_every_name_has_the_config_and_factory_it_had():
    assert set(registry.names()) - ADDED_SINCE == set(CONFIGS_BEFORE)
    for name, (config_name, make_name) in CONFIGS_BEFORE.items():
        entry = registry.entry(name)
        assert (entry.config.__name__, entry.make.__name__) == (config_name, make_name), name
        assert getattr(agents, config_name) is entry.config


def test_every_entry_is_declared_beside_its_family():
    for entry in registry.ENTRIES:
        assert entry.make.__module__ == entry.config.__module__, entry.name


def test_entries_are_frozen_and_their_grids_read_only():
    entry = registry.entry("mlp")
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.colour = "#000000"
    with pytest.raises(TypeError):
        entry.paper_grid["l2"] = (1.0,)


@pytest.mark.parametrize(
    "fields, parameter",
    [
        (dict(inputs="pixels"), "inputs"),
        (dict(rewards="counts"), "rewards"),
        (dict(colour="blue"), "colour"),
    ],
)
def test_a_bad_entry_fails_at_import_naming_the_field(fields, parameter):
    with pytest.raises(ValueError, match=parameter):
        AgentEntry("x", agents.MLPConfig, lambda spec, config: None, **{"colour": "#000000", **fields})
