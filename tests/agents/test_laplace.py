"""The laplace agent's last-layer posterior: its precision is the exact Hessian of
the MAP loss in the last layer, and a draw moves the logits by phi(x) delta."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from decision_bench import agents, make_testbed_problem
from decision_bench.agents.core import hyper_of, with_hyper
from decision_bench.agents.laplace import last_layer_features, last_layer_precision


def test_precision_is_the_hessian_of_the_summed_loss_in_the_last_layer():
    k_phi, k_logits, k_w = jax.random.split(jax.random.key(0), 3)
    phi = jax.random.normal(k_phi, (9, 4), jnp.float32)
    logits = jax.random.normal(k_logits, (9, 3), jnp.float32)
    y = jnp.arange(9) % 3
    w0 = jax.random.normal(k_w, (4, 3), jnp.float32)
    # logits linear in W: the summed cross-entropy at W0 has softmax(phi W0) as its p
    def loss(w):
        log_p = jax.nn.log_softmax(phi @ w, axis=-1)
        return -jnp.take_along_axis(log_p, y[:, None], axis=-1).sum() + 0.5 * 2.5 * jnp.sum(w**2)

    hessian = jax.hessian(lambda flat: loss(flat.reshape(4, 3)))(w0.reshape(-1))
    precision = last_layer_precision(phi, jax.nn.softmax(phi @ w0, axis=-1), jnp.float32(2.5))
    np.testing.assert_allclose(precision, hessian, rtol=1e-4, atol=1e-5)
    del logits


def test_a_draw_moves_the_map_logits_along_the_features_and_scales_with_posterior_scale():
    problem = make_testbed_problem("mlp", input_dim=2, num_train=20, temperature=0.1, seed=1)
    agent = agents.make("laplace", problem.spec, hidden_sizes=(8,), num_steps=50)
    state = agents.fit(agent, jax.random.key(1), problem.train_data, problem.spec)
    x = jax.random.normal(jax.random.key(2), (5, 2), jnp.float32)
    wide = with_hyper(agent, hyper_of(agent)._replace(posterior_scale=jnp.float32(2.0)))
    from decision_bench.priors import mlp_forward

    map_logits = mlp_forward(state.params, x, "relu")
    one = agent.sample_logits(jax.random.key(3), state, x) - map_logits
    two = wide.sample_logits(jax.random.key(3), state, x) - map_logits
    np.testing.assert_allclose(two, 2.0 * one, rtol=1e-4, atol=1e-5)
    assert float(jnp.abs(one).max()) > 0.0
    # the perturbation lies in the span of phi(x): zero features give zero change
    assert last_layer_features(state.params, x).shape == (5, 9)
