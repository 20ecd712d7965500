"""logistic_laplace: laplace with no hidden layer, i.e. Bayesian logistic regression
with the Laplace posterior of all its weights (Chapelle and Li, 2011)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from decision_bench import agents, make_testbed_problem
from decision_bench.agents.core import hyper_of, with_hyper
from decision_bench.agents.laplace import last_layer_features


def _fitted(**overrides):
    problem = make_testbed_problem("logistic", input_dim=3, num_train=40, temperature=0.1, seed=2)
    agent = agents.make("logistic_laplace", problem.spec, num_steps=200, **overrides)
    return agent, agents.fit(agent, jax.random.key(1), problem.train_data, problem.spec), problem


def test_it_is_a_linear_model_whose_draws_move_all_its_weights():
    agent, state, _ = _fitted()
    (layer,) = state.params  # no hidden layer: one [d, C] weight matrix and its bias
    assert layer["w"].shape == (3, 2) and layer["b"].shape == (2,)
    x = jax.random.normal(jax.random.key(2), (5, 3), jnp.float32)
    map_logits = x @ layer["w"] + layer["b"]
    np.testing.assert_array_equal(last_layer_features(state.params, x)[:, :3], x)  # features (x, 1)
    draws = jax.vmap(agent.sample_logits, (0, None, None))(jax.random.split(jax.random.key(3), 64), state, x)
    np.testing.assert_allclose(draws.mean(0), map_logits, atol=0.5)  # centred on the MAP
    wide = with_hyper(agent, hyper_of(agent)._replace(posterior_scale=jnp.float32(2.0)))
    key = jax.random.key(4)
    np.testing.assert_allclose(
        wide.sample_logits(key, state, x) - map_logits,
        2.0 * (agent.sample_logits(key, state, x) - map_logits),
        rtol=1e-4, atol=1e-4,
    )


def test_it_plays_the_bandit_through_the_registry():
    from decision_bench.bandit.run import run_bandit

    frame = run_bandit("logistic_laplace", "NeuralBandit-v0", 30, 2, log_every=15, progress=False,
                       env_kwargs={"input_dim": 2, "num_actions": 4}, agent_kwargs={"num_steps": 5})
    assert (frame.error == "").all() and frame.cumulative_regret.notna().all()
