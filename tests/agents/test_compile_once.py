"""Hyperparameters are data: a second identical (or re-valued) call compiles nothing."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decision_bench import make_testbed_problem, run_bandit
from decision_bench.agents import fit, make
from decision_bench.agents.core import hyperparameters_of, with_hyperparameters
from decision_bench.evaluation import FittedAgent, estimate_kl

from compile_counting import count_compilations

def _problem(num_train=10, temperature=0.1, tau=1):
    return make_testbed_problem("mlp", input_dim=2, num_train=num_train,
                                temperature=temperature, tau=tau)


def _fit(problem, **overrides):
    agent = make("mlp", problem.spec, **overrides)
    state = fit(agent, jax.random.key(1), problem.train_data, problem.spec, num_steps=20)
    return agent, jax.block_until_ready(state)


def test_counter_sees_a_fresh_compilation():
    with count_compilations() as seen:
        jax.jit(lambda x: x * 3.0 + 1.0)(jnp.ones(7)).block_until_ready()
    assert len(seen) >= 1


def test_second_identical_make_and_fit_compiles_nothing():
    problem = _problem()
    _fit(problem)
    with count_compilations() as seen:
        _fit(problem)
    assert seen == []


@pytest.mark.parametrize("overrides", [{"l2": 0.3}, {"learning_rate": 3e-3}])
def test_other_hyperparameter_values_reuse_the_program(overrides):
    problem = _problem()
    _, base = _fit(problem)
    with count_compilations() as seen:
        _, other = _fit(problem, **overrides)
    assert seen == []
    # ...and the values are used, not ignored.
    assert not np.allclose(jax.tree.leaves(base.params)[0], jax.tree.leaves(other.params)[0])


def test_another_temperature_reuses_the_fit_program():
    _fit(_problem(temperature=0.1))
    with count_compilations() as seen:
        _fit(_problem(temperature=0.5))
    assert seen == []


def test_second_identical_estimate_kl_compiles_nothing():
    problem = _problem(tau=10)
    agent, state = _fit(problem)
    estimate_kl(FittedAgent(agent, state), problem, jax.random.key(2), num_test=20, num_models=5)
    again, state = _fit(problem)
    with count_compilations() as seen:
        estimate_kl(FittedAgent(again, state), problem, jax.random.key(2), num_test=20, num_models=5)
    assert seen == []


def test_second_identical_run_bandit_by_name_compiles_nothing():
    kwargs = dict(env_kwargs={"num_actions": 4}, log_every=10, chunk_size=20, batch_size=8,
                  progress=False)
    first = run_bandit("mlp", "BernoulliBandit-v0", 20, 2, **kwargs)
    with count_compilations() as seen:
        second = run_bandit("mlp", "BernoulliBandit-v0", 20, 2, **kwargs)
    assert seen == []
    np.testing.assert_array_equal(first.cumulative_regret, second.cumulative_regret)


def test_a_grid_of_l2_values_is_one_vmapped_fit_equal_to_separate_fits():
    problem = _problem()
    agent = make("mlp", problem.spec)
    hyper = hyperparameters_of(agent)
    grid_l2 = jnp.array([1e-2, 1.0, 30.0], jnp.float32)
    grid = hyper._replace(
        l2=grid_l2,
        learning_rate=jnp.full(3, hyper.learning_rate),
        temperature=jnp.full(3, hyper.temperature),
    )

    def fit_one(h):
        return fit(with_hyperparameters(agent, h), jax.random.key(1), problem.train_data,
                   problem.spec, num_steps=20)

    with count_compilations() as seen:
        states = jax.jit(jax.vmap(fit_one))(grid)
    assert len(seen) == 1
    for i, l2 in enumerate(np.asarray(grid_l2)):
        _, single = _fit(problem, l2=float(l2))
        np.testing.assert_allclose(jax.tree.leaves(states.params)[0][i],
                                   jax.tree.leaves(single.params)[0], rtol=1e-5, atol=1e-6)


def test_a_testbed_sweep_over_temperatures_compiles_once_per_training_set_bucket():
    from decision_bench.evaluation import run_testbed
    from decision_bench.evaluation.sweeps import custom_sweep

    sweep = custom_sweep(2, [7], [0.05, 0.2, 0.9], taus=[1], num_seeds=2)
    # A step count no other test uses: the first temperature must compile afresh
    # whatever ran before in this process (other tests share the bucket of T = 7).
    overrides = {"mlp": {"num_steps": 13}}
    with count_compilations() as seen:
        rows = run_testbed("mlp", sweep, num_test=20, num_models=5, overrides=overrides,
                           progress=False)
    by_temperature = rows.groupby("temperature").compile_seconds.sum()
    assert by_temperature.loc[0.05] > 0
    assert by_temperature.loc[0.2] == 0 and by_temperature.loc[0.9] == 0
    assert len(seen) > 0
    with count_compilations() as again:
        run_testbed("mlp", sweep, num_test=20, num_models=5, overrides=overrides, progress=False)
    assert again == []
