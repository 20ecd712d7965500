"""agents/mlp.py and the point estimate it shares with logistic (core.point_estimate)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from decision_bench import agents
from decision_bench.agents._src.networks import MLP
from decision_bench.specs import ProblemSpec

SPEC = ProblemSpec(input_dim=2, num_classes=3, temperature=0.1, num_train=8)


def test_a_point_estimate_ignores_the_key_and_is_an_ensemble_of_one():
    for name in ("mlp", "logistic"):
        agent = agents.make(name, SPEC, num_steps=3)
        state = agent.init(jax.random.key(0))
        x = jax.random.normal(jax.random.key(1), (5, 2))
        a = agent.sample_logits(jax.random.key(2), state, x)
        b = agent.sample_logits(jax.random.key(3), state, x)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(agent.member_logits(state, x), a[None])
        assert a.shape == (5, 3)


def test_logistic_starts_uniform_and_mlp_biases_start_at_zero():
    logistic = agents.make("logistic", SPEC)
    state = logistic.init(jax.random.key(0))
    np.testing.assert_array_equal(logistic.sample_logits(None, state, jnp.ones((2, 2))), 0.0)
    params = agents.make("mlp", SPEC).init(jax.random.key(0)).params["params"]
    assert all(np.all(np.asarray(layer["bias"]) == 0) for layer in params.values())


def test_nonzero_first_bias_is_a_truncated_normal_over_sqrt_fan_in():
    params = MLP((16,), 2, nonzero_first_bias=True).init(jax.random.key(0), jnp.zeros((1, 4)))
    bias = np.asarray(params["params"]["Dense_0"]["bias"])
    assert np.all(bias != 0) and np.abs(bias).max() <= 2 / np.sqrt(4) + 1e-6
    np.testing.assert_array_equal(params["params"]["Dense_1"]["bias"], 0.0)
