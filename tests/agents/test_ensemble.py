"""agents/ensemble.py: fixed prior networks, bootstrap weights and member sampling."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decision_bench import agents
from decision_bench.agents import ensemble
from decision_bench.agents._src.networks import MLP
from decision_bench.priors import mlp_forward

from test_contract import NUM_TRAIN, SPEC, fitted, small_overrides


def test_ensemble_plus_prior_is_fixed_and_members_are_trained():
    agent, data, initial, state = fitted("ensemble+")
    jax.tree.map(np.testing.assert_array_equal, state.prior_params, initial.prior_params)
    changed = jax.tree.map(lambda a, b: bool(jnp.any(a != b)), state.params, initial.params)
    assert all(jax.tree.leaves(changed))
    # The prior contributes prior_scale / sqrt(beta) times a 50-50 ReLU MLP's output,
    # initialised as enn's ensemble MLP with nonzero_bias=True: a truncated-normal
    # first-layer bias of scale 1/sqrt(d), the other biases zero.
    config = agents.config("ensemble+", **small_overrides("ensemble+"))
    member0 = jax.tree.map(lambda p: p[0], state.prior_params)
    first_bias = np.asarray(state.prior_params[0]["b"])
    assert np.all(first_bias != 0) and np.abs(first_bias).max() <= 2 / np.sqrt(2) + 1e-6
    assert all(np.all(np.asarray(layer["b"]) == 0) for layer in member0[1:])
    trained_bias = np.asarray(initial.params["params"]["Dense_0"]["bias"])
    assert np.all(trained_bias != 0) and np.abs(trained_bias).max() <= 2 / np.sqrt(2) + 1e-6
    trained0 = jax.tree.map(lambda p: p[0], state.params)
    net = MLP((50, 50), 2)
    expected = net.apply(trained0, data.x[:4]) + config.prior_scale / math.sqrt(
        SPEC.temperature
    ) * mlp_forward(member0, data.x[:4], "relu")
    members = jax.jit(agent.member_logits)(state, data.x[:4])
    np.testing.assert_allclose(members[0], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["exponential", "bernoulli"])
def test_bootstrap_weights_have_mean_one(kind):
    weights = np.asarray(ensemble.bootstrap_weights(jax.random.key(5), kind, (5, 2000)))
    # Both laws have mean 1 and standard deviation 1: 5 standard errors.
    assert abs(weights.mean() - 1.0) < 5.0 / math.sqrt(weights.size)
    assert np.all(weights >= 0)
    if kind == "bernoulli":
        assert set(np.unique(weights)) == {0.0, 2.0}
    assert np.all(np.asarray(ensemble.bootstrap_weights(jax.random.key(5), "none", (2, 3))) == 1)


def test_bootstrap_weights_are_stored_and_looked_up_by_index():
    agent, data, initial, state = fitted("ensemble+")
    # Default "none": a [M, 1] table of ones, the same for every index.
    assert initial.bootstrap_weights.shape == (5, 1)
    assert np.all(np.asarray(initial.bootstrap_weights) == 1.0)
    # Member 0 has weight 0 on every example, member 1 weight 2; with l2 = 0
    # member 0 gets no gradient at all. Indices 4..7 wrap to 0..3 (modulo 4).
    weights = jnp.zeros((5, 4)).at[1:].set(2.0)
    start = initial._replace(bootstrap_weights=weights)
    # every member in every step, so only the bootstrap weights decide who moves
    update = jax.jit(
        agents.make("ensemble+", SPEC, num_ensemble=5, l2=0.0, member_sampling="all").update
    )
    x = data.x[:4]
    batch = agents.Batch(x, data.y[:4], jnp.float32(NUM_TRAIN), jnp.arange(4) + 4)
    new = update(jax.random.key(8), start, batch)
    moved = jax.tree.map(
        lambda a, b: np.asarray(jnp.any(a != b, axis=tuple(range(1, a.ndim)))),
        new.params,
        start.params,
    )
    for leaf in jax.tree.leaves(moved):
        assert not leaf[0] and leaf[1:].all()


def test_ensemble_members_are_drawn_with_replacement_each_step():
    """The reference averages the loss over M member indices drawn with replacement:
    member weights are counts / M, and about (1 - 1/M)^M of members sit out a step."""
    num_members = 100
    keys = jax.random.split(jax.random.key(0), 200)
    weights = np.asarray(jax.vmap(lambda k: ensemble.member_weights(k, num_members, "with_replacement"))(keys))
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(weights * num_members, np.round(weights * num_members), atol=1e-4)
    idle = (weights == 0).mean()
    expected = (1 - 1 / num_members) ** num_members  # 0.366
    # 20,000 Bernoulli-ish indicators, weakly dependent within a row: 5 standard errors
    assert abs(idle - expected) < 5 * math.sqrt(expected * (1 - expected) / 200)
    np.testing.assert_array_equal(ensemble.member_weights(keys[0], 4, "all"), np.full(4, 0.25))
