"""Hyperparameters are data for dropout, bbb and sgmcmc: a second identical make+fit,
another value of any real hyperparameter, or another temperature compiles nothing."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from compile_counting import count_compilations

from decision_bench import make_testbed_problem
from decision_bench.agents import fit, make
from decision_bench.agents.core import hyperparameters_of, with_hyperparameters

# Tiny static settings so each family compiles in seconds.
BASES = {
    "dropout": dict(hidden_sizes=(8,), num_steps=10),
    "bbb": dict(hidden_sizes=(8,), num_index_samples=2, num_steps=10),
    # a mixture prior, so the sampled KL uses sigma_1, sigma_2 and mixture_weight
    "bbb_mixture": dict(hidden_sizes=(8,), num_index_samples=2, num_steps=10, mixture_weight=0.5),
    "sgmcmc": dict(hidden_sizes=(8,), num_steps=20, burn_in=10, keep_every=5),
}

# (base, agent name, overrides): one per real hyperparameter, each far from its default.
OTHER_VALUES = [
    ("dropout", "dropout", {"dropout_rate": 0.4}),
    ("dropout", "dropout", {"length_scale": 5.0}),
    ("dropout", "dropout", {"learning_rate": 1e-2}),
    ("bbb", "bbb", {"learning_rate": 3e-2}),
    ("bbb", "bbb", {"sigma_1": 0.3}),
    ("bbb", "bbb", {"kl_scale": 30.0}),
    ("bbb_mixture", "bbb", {"sigma_1": 0.3}),
    ("bbb_mixture", "bbb", {"sigma_2": 0.2}),
    ("bbb_mixture", "bbb", {"mixture_weight": 0.1}),
    ("sgmcmc", "sgmcmc", {"learning_rate": 1e-2}),
    ("sgmcmc", "sgmcmc", {"prior_variance": 0.01}),
    ("sgmcmc", "sgmcmc", {"momentum": 0.0}),
]


def _problem(temperature=0.1):
    return make_testbed_problem("mlp", input_dim=2, num_train=10, temperature=temperature, tau=1)


def _fit(base, name, problem, spec=None, **overrides):
    spec = problem.spec if spec is None else spec
    agent = make(name, spec, **{**BASES[base], **overrides})
    state = fit(agent, jax.random.key(1), problem.train_data, spec)
    return agent, jax.block_until_ready(state)


def _differs(a, b) -> bool:
    return any(
        not np.allclose(x, y) for x, y in zip(jax.tree.leaves(a.params), jax.tree.leaves(b.params))
    )


@pytest.mark.parametrize("base,name", [("dropout", "dropout"), ("bbb", "bbb"),
                                       ("bbb_mixture", "bbb"), ("sgmcmc", "sgmcmc")])
def test_second_identical_make_and_fit_compiles_nothing(base, name):
    problem = _problem()
    _, first = _fit(base, name, problem)
    with count_compilations() as seen:
        _, second = _fit(base, name, problem)
    assert seen == []
    for x, y in zip(jax.tree.leaves(first), jax.tree.leaves(second)):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("base,name,overrides", OTHER_VALUES)
def test_other_hyperparameter_values_reuse_the_program(base, name, overrides):
    problem = _problem()
    _, first = _fit(base, name, problem)
    with count_compilations() as seen:
        _, other = _fit(base, name, problem, **overrides)
    assert seen == []
    assert _differs(first, other)  # the value is used, not ignored


@pytest.mark.parametrize("base,name", [("dropout", "dropout"), ("bbb", "bbb"),
                                       ("sgmcmc", "sgmcmc")])
def test_another_temperature_reuses_the_fit_program(base, name):
    # The same data, an agent told another temperature: the regulariser's weight changes.
    problem = _problem(temperature=0.1)
    _, first = _fit(base, name, problem)
    with count_compilations() as seen:
        hot = dataclasses.replace(problem.spec, temperature=3.0)
        _, other = _fit(base, name, problem, spec=hot)
    assert seen == []
    assert _differs(first, other)


def test_a_grid_of_dropout_rates_is_one_vmapped_fit_equal_to_separate_fits():
    problem = _problem()
    agent = make("dropout", problem.spec, **BASES["dropout"])
    hyper = hyperparameters_of(agent)
    rates = jnp.array([0.0, 0.2, 0.5], jnp.float32)
    grid = jax.tree.map(lambda leaf: jnp.full(rates.shape, leaf), hyper)
    grid = grid._replace(dropout_rate=rates)

    def fit_one(h):
        return fit(with_hyperparameters(agent, h), jax.random.key(1), problem.train_data,
                   problem.spec)

    states = jax.jit(jax.vmap(fit_one))(grid)
    for i, rate in enumerate(np.asarray(rates)):
        _, single = _fit("dropout", "dropout", problem, dropout_rate=float(rate))
        for x, y in zip(jax.tree.leaves(states.params), jax.tree.leaves(single.params)):
            np.testing.assert_allclose(x[i], y, rtol=1e-5, atol=1e-6)
