"""Every compatibility shim in _src/deprecations.py: it warns, names its removal
version and the current spelling, and does exactly what the current spelling does."""

from __future__ import annotations

import dataclasses
import importlib
import warnings

import jax
import pytest

from decision_bench import agents
from decision_bench._src import deprecations
from decision_bench.agents import core
from decision_bench.agents._src import checks, losses, networks
from decision_bench.agents.base import Agent
from decision_bench.specs import ProblemSpec

SPEC = ProblemSpec(input_dim=2, num_classes=2, temperature=0.1, num_train=10)
REMOVAL = r"removed in decision_bench 0\.4"


def test_renamed_core_functions_warn_and_are_the_current_ones():
    with pytest.warns(DeprecationWarning, match=rf"agents\.core\.hyperparameters_of .*{REMOVAL}.*core\.hyper_of"):
        assert core.hyperparameters_of is core.hyper_of
    with pytest.warns(DeprecationWarning, match=rf"with_hyperparameters .*{REMOVAL}.*core\.with_hyper"):
        from decision_bench.agents.core import with_hyperparameters
    assert with_hyperparameters is core.with_hyper


@pytest.mark.parametrize(
    "name, home",
    [("MLP", networks), ("check_common", checks), ("cross_entropy", losses), ("sum_of_squares", losses)],
)
def test_names_mlp_re_exported_warn_and_are_their_homes(name, home):
    mlp = importlib.import_module("decision_bench.agents.mlp")
    with pytest.warns(DeprecationWarning, match=rf"agents\.mlp\.{name} .*{REMOVAL}.*{home.__name__}\.{name}"):
        assert getattr(mlp, name) is getattr(home, name)
    assert name not in mlp.__all__


def test_an_unknown_name_is_still_an_attribute_error():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
            core.no_such_name  # noqa: B018
        assert not hasattr(core, "another_missing_name")


def test_agent_replace_alias_warns_and_copies_as_replace():
    agent = agents.make("mlp", SPEC)
    with pytest.warns(DeprecationWarning, match=rf"Agent\._replace .*{REMOVAL}.*Agent\.replace"):
        renamed = agent._replace(name="other")
    assert renamed == agent.replace(name="other") and renamed.name == "other"


def test_pre_0_2_order_is_refused_and_the_key_first_order_accepted():
    def sample_logits(state, key, x):
        return x

    with pytest.raises(ValueError, match=r"Agent\.sample_logits takes \(key, state, x\) since decision_bench 0\.2"):
        Agent(init=lambda key: None, update=lambda key, state, batch: state, sample_logits=sample_logits)
    with pytest.raises(ValueError, match=r"Agent\.init takes \(key\).*2 required positional parameters"):
        Agent(init=lambda key, spec: None, update=lambda key, state, batch: state,
              sample_logits=lambda key, state, x: x)
    agent = Agent(init=lambda key: None, update=lambda key, state, batch: state, sample_logits=lambda key, s, x: x)
    assert isinstance(agent.init, jax.tree_util.Partial)


@dataclasses.dataclass(frozen=True)
class _Settings:
    size: int = 1
    mode: str = "a"


def test_config_from_keywords_maps_onto_the_config_with_one_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        given = _Settings(size=3)
        assert deprecations.config_from_keywords("run", _Settings, given, {}) is given
        assert deprecations.config_from_keywords("run", _Settings, None, {}) is None
    with pytest.warns(DeprecationWarning, match=rf"size=2 to run\(\) .*{REMOVAL}.*run\(\.\.\., config=_Settings\(size=2\)\)"):
        assert deprecations.config_from_keywords("run", _Settings, None, {"size": 2}) == _Settings(size=2)
    with pytest.warns(DeprecationWarning, match=r"dataclasses\.replace\(config, mode='b'\)"):
        assert deprecations.config_from_keywords("run", _Settings, _Settings(size=3), {"mode": "b"}) == _Settings(3, "b")
    with pytest.raises(TypeError, match=r"run\(\) got an unexpected keyword argument 'sise'"):
        deprecations.config_from_keywords("run", _Settings, None, {"sise": 2})


def test_every_shim_names_the_removal_version():
    assert deprecations.REMOVAL_VERSION == "0.4"
    for module, names in {**deprecations.RENAMED, **deprecations.MOVED}.items():
        imported = importlib.import_module(module)
        for name in names:
            with pytest.warns(DeprecationWarning, match=REMOVAL):
                getattr(imported, name)
