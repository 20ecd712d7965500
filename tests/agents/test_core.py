"""agents/core.py: the hyper derived from a config, the static settings, the cached
functions and the checks every bound function makes."""

from __future__ import annotations

import dataclasses
import pickle
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decision_bench import agents
from decision_bench.agents import core
from decision_bench.agents.mlp import MLPConfig, MLPHyper
from decision_bench.specs import ProblemSpec

SPEC = ProblemSpec(input_dim=3, num_classes=2, temperature=0.25, num_train=8)


def test_the_hyper_holds_the_traced_fields_and_the_temperature_as_f32_leaves():
    config = MLPConfig(l2=0.5, learning_rate=2e-3)
    hyper = core.hyper(SPEC, config)
    # mlp, ensemble and logistic share one record: their traced fields are the same
    assert type(hyper) is MLPHyper and MLPHyper is core.L2Hyper
    assert hyper._fields == ("l2", "learning_rate", "temperature")
    assert all(leaf.shape == () and leaf.dtype == jnp.float32 for leaf in hyper)
    np.testing.assert_allclose([float(v) for v in hyper], [0.5, 2e-3, 0.25], rtol=1e-6)
    # at module level under its own name, so it pickles
    assert pickle.loads(pickle.dumps(hyper))._fields == hyper._fields


def test_static_settings_are_every_other_field_but_num_steps():
    config = MLPConfig(hidden_sizes=[4, 4], num_steps=7)
    assert core.static_settings(config) == {"hidden_sizes": (4, 4)}  # the decay mode is the spec's
    assert core.traced_fields(MLPConfig) == ("l2", "learning_rate")


def test_a_subclass_that_overrides_a_default_keeps_it_traced():
    quick = agents.config("sgmcmc_quick")
    assert "learning_rate" in core.traced_fields(quick)
    assert float(core.hyper(SPEC, quick).learning_rate) == pytest.approx(5e-4)


def test_cached_functions_give_the_same_objects_for_the_same_setting():
    calls = []

    @core.cached_functions
    def build(*, size):
        calls.append(size)
        return (lambda: size,)

    assert build(size=[1, 2]) is build(size=(1, 2)) and calls == [(1, 2)]
    assert build(size=(3,)) is not build(size=(1, 2))


def test_bound_functions_check_keys_and_input_shapes():
    agent = agents.make("mlp", SPEC, hidden_sizes=(4,))
    state = agent.init(jax.random.key(0))
    with pytest.raises(ValueError, match=r"mlp sample_logits: inputs have shape \(5, 2\).*\[n, 3\]"):
        agent.sample_logits(jax.random.key(1), state, jnp.zeros((5, 2)))
    with pytest.raises(ValueError, match="not a PRNG key"):
        agent.sample_logits(state, jax.random.key(1), jnp.zeros((5, 3)))
    bad = agents.Batch(jnp.zeros((4, 3)), jnp.zeros((3,), jnp.int32), jnp.float32(4), jnp.arange(4))
    with pytest.raises(ValueError, match=r"mlp update: labels have shape \(3,\)"):
        agent.update(jax.random.key(1), state, bad)
    with pytest.raises(ValueError, match=r"mlp member_logits: inputs have shape \(5,\)"):
        agent.member_logits(state, jnp.zeros((5,)))


def test_penalty_weight_reads_the_named_leaf():
    hyper = core.hyper(SPEC, agents.config("dropout", length_scale=3.0))
    one = core.penalty_weight(hyper, 8.0, input_dim=3, mode="testbed", base="length_scale")
    assert float(one) == pytest.approx(3.0 * 3 * 0.5 / 8, rel=1e-6)
    params = {"w": jnp.ones((2, 2))}
    penalty = core.l2_penalty(hyper, params, 8.0, input_dim=3, mode="testbed", base="length_scale")
    assert float(penalty) == pytest.approx(float(one) * 4, rel=1e-6)


def test_with_hyper_rebinds_and_hyper_of_reads_back():
    agent = agents.make("mlp", SPEC)
    other = core.hyper_of(agent)._replace(l2=jnp.float32(9.0))
    rebound = core.with_hyper(agent, other)
    assert float(core.hyper_of(rebound).l2) == 9.0
    assert rebound.update.func is agent.update.func


def test_every_registered_config_is_a_frozen_dataclass():
    for name in agents.names():
        config = agents.config(name)
        assert dataclasses.is_dataclass(config)
        with pytest.raises(dataclasses.FrozenInstanceError):
            config.regularization = "sequential"


def test_every_registered_hyper_is_a_class_declared_in_its_module():
    """"Go to definition" on hyper.l2 lands on code: each family's Hyper is a NamedTuple
    written in its module, the class core.hyper_class returns for its config."""
    import inspect
    import sys

    for name in agents.names():
        hyper = core.hyper_of(agents.make(name, SPEC))
        if hyper is None:
            continue
        cls = type(hyper)
        assert getattr(sys.modules[cls.__module__], cls.__name__) is cls, name
        assert f"class {cls.__name__}(NamedTuple):" in inspect.getsource(cls), name
        assert all(leaf.dtype == jnp.float32 for leaf in hyper), name


@dataclasses.dataclass(frozen=True)
class _MisdeclaredConfig:
    l2: float = core.traced(1.0)


class _MisdeclaredHyper(NamedTuple):
    temperature: jax.Array


@dataclasses.dataclass(frozen=True)
class _UndeclaredConfig:
    l2: float = core.traced(1.0)
    width: int = 3


def test_a_declared_hyper_must_match_its_config_and_an_undeclared_one_is_built():
    with pytest.raises(TypeError, match=r"_MisdeclaredHyper must have the fields \('l2', 'temperature'\)"):
        core.hyper_class(_MisdeclaredConfig)
    built = core.hyper_class(_UndeclaredConfig)
    assert built.__name__ == "_UndeclaredHyper" and built._fields == ("l2", "temperature")
    assert built.__module__ == __name__
