"""A sampler's logits must be [n, num_classes]: checked once, before the estimate, in one line."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decision_bench.agents import fit, make
from decision_bench.envs.testbed import make_testbed_problem
from decision_bench.evaluation import FittedAgent, estimate_kl, estimate_nll

NUM_TEST = 500  # with 10 models and tau 1 the sampler sees all 500 inputs in one call


@pytest.fixture(scope="module")
def problem():
    return make_testbed_problem("mlp", 2, 10, 0.1, tau=1, seed=0)  # 2 classes, d = 2


def _constant(shape_of):
    """A sampler returning zeros of shape_of(n) for inputs x [n, d]."""
    return lambda key, x: jnp.zeros(shape_of(x.shape[0]))


BAD_SHAPES = {
    "three classes on a two-class problem": (lambda n: (n, 3), "[500, 3]"),
    "no class axis": (lambda n: (n,), "[500]"),
    "one row whatever n": (lambda n: (1, 2), "[1, 2]"),
    "a trailing axis": (lambda n: (n, 2, 1), "[500, 2, 1]"),
    "one class": (lambda n: (n, 1), "[500, 1]"),
}


@pytest.mark.parametrize("shape_of, shown", BAD_SHAPES.values(), ids=BAD_SHAPES.keys())
def test_wrong_logits_shape_is_one_line_naming_got_and_expected(problem, shape_of, shown):
    with pytest.raises(ValueError) as error:
        estimate_kl(_constant(shape_of), problem, jax.random.key(0), num_test=NUM_TEST, num_models=10)
    assert str(error.value) == (
        f"sampler(key, x) returned logits of shape {shown} for x of shape [500, 2]; "
        "expected [n, num_classes] = [500, 2]"
    )


def test_sampler_returning_a_tuple_is_named(problem):
    sampler = lambda key, x: (jnp.zeros((x.shape[0], 2)),)  # noqa: E731
    with pytest.raises(ValueError, match=r"^sampler\(key, x\) returned a tuple for x of shape \[500, 2\]"):
        estimate_kl(sampler, problem, jax.random.key(0), num_test=NUM_TEST, num_models=10)


def test_shape_check_traces_the_sampler_without_running_it(problem):
    """The check uses jax.eval_shape: the sampler only ever sees abstract inputs."""
    seen = []

    def sampler(key, x):
        seen.append(isinstance(x, jax.core.Tracer))
        return jnp.zeros((x.shape[0], 3))

    with pytest.raises(ValueError, match=r"\[500, 3\]"):
        estimate_kl(sampler, problem, jax.random.key(0), num_test=NUM_TEST, num_models=10)
    assert seen == [True]  # called once, traced


def test_n_is_the_inputs_per_call_of_the_chunked_estimate():
    # tau 10, 50 models, max_rows 1000: 2 tau-samples (20 inputs) per sampler call.
    problem = make_testbed_problem("mlp", 2, 10, 0.1, tau=10, seed=0)
    with pytest.raises(ValueError, match=r"for x of shape \[20, 2\]; expected \[n, num_classes\] = \[20, 2\]$"):
        estimate_kl(_constant(lambda n: (n, 3)), problem, jax.random.key(0), num_test=30, num_models=50,
                    max_rows=1000)


def test_correct_sampler_still_gives_the_uniform_kl(problem):
    # Uniform logits: log p_hat = -log 2 per label, so d_KL = mean env log-lik + log 2.
    result = estimate_kl(_constant(lambda n: (n, 2)), problem, jax.random.key(0), num_test=NUM_TEST, num_models=10)
    expected = result.env_log_likelihood.mean() + np.log(2)
    np.testing.assert_allclose(result.kl, expected, rtol=1e-5)
    assert result.num_models == 10


@pytest.mark.parametrize("method", ["exact", "monte_carlo"])
def test_fitted_agents_pass_the_check(problem, method):
    # The uniform agent: one member for "exact", sample_logits for "monte_carlo".
    agent = make("uniform", problem.spec)
    state = fit(agent, jax.random.key(1), problem.train_data, problem.spec)
    result = estimate_kl(FittedAgent(agent, state), problem, jax.random.key(0), num_test=50, num_models=4,
                         method=method)
    np.testing.assert_allclose(result.kl, result.env_log_likelihood.mean() + np.log(2), rtol=1e-5)
    assert result.num_models == (1 if method == "exact" else 4)


def test_estimate_nll_checks_the_sampler_against_the_labels():
    x = jnp.zeros((40, 2))
    y = jnp.arange(40) % 3  # labels 0..2: at least 3 classes
    with pytest.raises(ValueError) as error:
        estimate_nll(_constant(lambda n: (n, 2)), x, y, jax.random.key(0), num_models=5)
    assert str(error.value) == (
        "sampler(key, x) returned logits of shape [40, 2] for x of shape [40, 2]; "
        "expected [n, num_classes] = [40, C] with C >= 3 (more than the largest label in y)"
    )
    result = estimate_nll(_constant(lambda n: (n, 3)), x, y, jax.random.key(0), num_models=5)
    np.testing.assert_allclose(result.nll, np.log(3), rtol=1e-5)


@pytest.mark.parametrize(
    "method, broken, message",
    [
        ("exact", dict(member_logits=lambda state, x: jnp.zeros((4, x.shape[0], 3))),
         "sampler.agent.member_logits(state, x) returned logits of shape [4, 50, 3] for x of shape [50, 2]; "
         "expected [num_members, n, num_classes] = [M, 50, 2]"),
        ("monte_carlo", dict(sample_logits=lambda key, state, x: jnp.zeros((x.shape[0],))),
         "sampler.agent.sample_logits(key, state, x) returned logits of shape [50] for x of shape [50, 2]; "
         "expected [n, num_classes] = [50, 2]"),
    ],
)
def test_fitted_agent_with_wrong_logits_names_the_agent_function(problem, method, broken, message):
    agent = make("uniform", problem.spec)
    state = fit(agent, jax.random.key(1), problem.train_data, problem.spec)
    with pytest.raises(ValueError) as error:
        estimate_kl(FittedAgent(agent.replace(**broken), state), problem, jax.random.key(0), num_test=50,
                    num_models=4, method=method)
    assert str(error.value) == message
