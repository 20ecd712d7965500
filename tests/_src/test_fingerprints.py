"""Fingerprints of registered agents stay what the runs stored before the decay mode
left the agent configs: the values below were computed by that version (0.2.0), so
its stored cells and bandit checkpoints are not taken for stale."""

import pytest

from decision_bench.agents import registry
from decision_bench.agents.entry import PINNED_RELEASE
from decision_bench.bandit.run import default_agent_fingerprint
from decision_bench.experiments.cells import Cell, agent_fingerprint

# name: (testbed cell fingerprint, bandit fingerprint at learning rate 1e-3, no agent_kwargs)
STORED = {
    "bbb": ("18e41bf7c898", "d77789dfa509"),
    "beta_bernoulli": ("f81b82bc1ffe", "0adaa07d482c"),
    "deep_kernel": ("dd8bc647fa18", "99bc8cce5012"),
    "dropout": ("4a21c1d76fb2", "a1d03528d353"),
    "ensemble": ("f6cffce9d96f", "a773d320a895"),
    "ensemble+": ("ee99c82f9259", "6816812048d2"),
    "epinet": ("a78703f6e6cf", "5098eda98bff"),
    "hmc": ("e0f137f5a94f", "db3bd2a85229"),
    "hypermodel": ("1bade7f1136d", "10bc1d64f55c"),
    "knn": ("3be62269224f", "fd8fa7604dd1"),
    "linear_gaussian": ("06f25f490c99", "d75d1b3fff51"),
    "logistic": ("78c88f416a34", "b0999adaa7e9"),
    "mlp": ("b6244df022e5", "ea9aa0664292"),
    "prior": ("6fe3a253883a", "4d0f3e2ec47b"),
    "random_forest": ("1086601064b4", "dfbd9ca69f57"),
    "sgmcmc": ("8669ed27a331", "9b28f43e390e"),
    "sgmcmc_quick": ("758ee3ad0eaa", "ffa9b23a9536"),
    "uniform": ("28e3630ae885", "68ed4aca5dd7"),
}


@pytest.mark.parametrize("name", sorted(STORED))
def test_fingerprints_are_those_stored_before(name):
    testbed, bandit = STORED[name]
    assert agent_fingerprint(Cell("testbed", name, {}, {"input_dim": 2}, (0,))) == testbed
    assert default_agent_fingerprint(name, 1e-3, None) == bandit


def test_every_registered_agent_is_pinned():
    assert set(registry.names()) <= set(STORED) | NEW_SINCE


# Families added after the decay mode became the problem's have no stored fingerprint to
# keep: their entries name the issue that added them, not the release (agents/entry.py).
NEW_SINCE: set[str] = {entry.name for entry in registry.ENTRIES if entry.since != PINNED_RELEASE}
