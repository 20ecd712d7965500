"""Hyperparameters are data for hypermodel, epinet, uniform, prior, logistic and
beta_bernoulli: a second identical (or re-valued) make + fit compiles nothing."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from compile_counting import count_compilations

from decision_bench import make_testbed_problem
from decision_bench.agents import fit, make
from decision_bench.agents.core import hyperparameters_of, with_hyperparameters
from decision_bench.envs.testbed import Dataset
from decision_bench.specs import ProblemSpec

NUM_STEPS = 15
TEST_X = jax.random.normal(jax.random.key(9), (7, 2), jnp.float32)
SMALL = {
    "hypermodel": dict(hidden_sizes=(8,), prior_hidden_sizes=(4,), index_dim=3, num_index_samples=2),
    "epinet": dict(hidden_sizes=(8,), epinet_hidden_sizes=(5,), prior_hidden_sizes=(3,),
                   index_dim=3, num_index_samples=2),
    "logistic": {},
    "prior": dict(hidden_sizes=(6,)),
    "uniform": {},
}
# Every real-valued hyperparameter of each trained family, with another value.
OTHER_VALUES = [
    ("hypermodel", "l2", 0.3),
    ("hypermodel", "learning_rate", 3e-3),
    ("hypermodel", "prior_scale", 2.0),
    ("hypermodel", "prior_temperature_power", 1.0),
    ("epinet", "l2", 0.05),
    ("epinet", "l2_exponent", 0.3),
    ("epinet", "learning_rate", 3e-3),
    ("epinet", "prior_scale", 1.0),
    ("logistic", "l2", 30.0),
    ("logistic", "learning_rate", 3e-3),
]


def _problem(temperature=0.1):
    return make_testbed_problem("mlp", input_dim=2, num_train=10, temperature=temperature, tau=1)


def _fit(name, problem, **overrides):
    agent = make(name, problem.spec, **{**SMALL[name], **overrides})
    state = fit(agent, jax.random.key(1), problem.train_data, problem.spec, num_steps=NUM_STEPS)
    logits = agent.sample_logits(jax.random.key(2), state, TEST_X)
    return agent, jax.block_until_ready((state, logits))


def _coins(num_arms=4, n=12):
    spec = ProblemSpec(input_dim=num_arms, num_classes=2, temperature=1.0, num_train=n)
    arms = jax.random.randint(jax.random.key(0), (n,), 0, num_arms)
    y = jax.random.bernoulli(jax.random.key(1), 0.3, (n,)).astype(jnp.int32)
    return spec, Dataset(jax.nn.one_hot(arms, num_arms), y)


def _fit_coins(**overrides):
    spec, data = _coins()
    agent = make("beta_bernoulli", spec, **overrides)
    state = fit(agent, jax.random.key(1), data, spec, batch_size=spec.num_train)
    logits = agent.sample_logits(jax.random.key(2), state, jnp.eye(spec.input_dim))
    return agent, jax.block_until_ready((state, logits))


@pytest.mark.parametrize("name", sorted(SMALL))
def test_second_identical_make_and_fit_compiles_nothing(name):
    problem = _problem()
    _, (_, first) = _fit(name, problem)
    with count_compilations() as seen:
        _, (_, second) = _fit(name, problem)
    assert seen == []
    np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("name, field, value", OTHER_VALUES)
def test_other_hyperparameter_values_reuse_the_program_and_are_used(name, field, value):
    problem = _problem()
    _, (base_state, base_logits) = _fit(name, problem)
    with count_compilations() as seen:
        agent, (state, logits) = _fit(name, problem, **{field: value})
    assert seen == []
    assert float(getattr(hyperparameters_of(agent), field)) == pytest.approx(value)
    # ...and the value is used, not ignored.
    assert not np.allclose(base_logits, logits)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_another_temperature_reuses_the_program(name):
    _, (_, cold) = _fit(name, _problem(temperature=0.1))
    with count_compilations() as seen:
        _, (_, warm) = _fit(name, _problem(temperature=0.5))
    assert seen == []
    if name != "uniform":  # uniform's logits are zero at every temperature
        assert not np.allclose(cold, warm)


def test_prior_temperature_divides_the_raw_logits():
    _, (_, cold) = _fit("prior", _problem(temperature=0.1))
    _, (_, warm) = _fit("prior", _problem(temperature=0.5))
    np.testing.assert_allclose(cold * 0.1, warm * 0.5, rtol=1e-5, atol=1e-6)


def test_beta_bernoulli_second_make_and_other_priors_compile_nothing():
    _, (_, first) = _fit_coins()
    with count_compilations() as seen:
        _, (_, second) = _fit_coins()
        _, (alpha_state, alpha_logits) = _fit_coins(prior_alpha=3.0)
        _, (beta_state, beta_logits) = _fit_coins(prior_beta=0.5)
    assert seen == []
    np.testing.assert_array_equal(first, second)
    assert not np.allclose(first, alpha_logits) and not np.allclose(first, beta_logits)
    # The posterior is the prior plus the counts, whatever the prior.
    _, (state, _) = _fit_coins()
    np.testing.assert_allclose(alpha_state.alpha, state.alpha + 2.0)
    np.testing.assert_allclose(beta_state.beta, state.beta - 0.5)


@pytest.mark.parametrize("name", ["hypermodel", "epinet"])
def test_same_static_setting_gives_the_same_functions(name):
    problem = _problem()
    a = make(name, problem.spec, **SMALL[name])
    b = make(name, problem.spec, **SMALL[name], l2=0.5, learning_rate=2e-3)
    assert a.update.func is b.update.func and a.sample_logits.func is b.sample_logits.func
    assert jax.tree.structure(a) == jax.tree.structure(b)
    c = make(name, problem.spec, **{**SMALL[name], "index_dim": 4})
    assert c.update.func is not a.update.func


@pytest.mark.parametrize("name", ["hypermodel", "epinet"])
def test_a_grid_of_prior_scales_is_one_vmapped_fit_equal_to_separate_fits(name):
    problem = _problem()
    agent = make(name, problem.spec, **SMALL[name])
    values = jnp.array([0.0, 0.5, 3.0], jnp.float32)
    grid = jax.tree.map(lambda leaf: jnp.full(3, leaf), hyperparameters_of(agent))
    grid = grid._replace(prior_scale=values)

    def fit_one(hyper):
        fitted = with_hyperparameters(agent, hyper)
        state = fit(fitted, jax.random.key(1), problem.train_data, problem.spec,
                    num_steps=NUM_STEPS)
        return fitted.sample_logits(jax.random.key(2), state, TEST_X)

    with count_compilations() as seen:
        logits = jax.jit(jax.vmap(fit_one))(grid)
    assert len(seen) == 1
    for i, value in enumerate(np.asarray(values)):
        _, (_, single) = _fit(name, problem, prior_scale=float(value))
        np.testing.assert_allclose(logits[i], single, rtol=1e-5, atol=1e-5)
