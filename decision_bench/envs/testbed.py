"""Testbed problems: training data and tau-samplers of test inputs from one environment.

The pure functions (``sample_training_data``, ``polyadic_design``,
``polyadic_inputs``, ``sample_polyadic_test``, ``sample_test``) take the prior and environment params explicitly, so they jit
and vmap over seeds. ``TestbedProblem`` bundles one environment sample with its
training data for convenience.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from decision_bench._src.keys import DATA_TAG, ENV_TAG, problem_key
from decision_bench._src.validation import check_int, check_optional_int
from decision_bench.priors import DEFAULT_ACTIVATION, DEFAULT_HIDDEN_SIZES, Prior, make_prior
from decision_bench.specs import Dataset, ProblemSpec


class TestSample(NamedTuple):
    x: jax.Array  # [tau, input_dim]
    y: jax.Array  # [tau] i32
    env_log_likelihood: jax.Array  # [] log p(y_1..tau | x_1..tau) under the environment


TestSample.__test__ = False  # not a pytest test class


class PolyadicTest(NamedTuple):
    """A test tau-sample kept in its design's form: x = inputs[pick].

    With kappa anchors, only kappa of the tau inputs are distinct: an agent needs
    its logits on ``inputs`` alone and can gather them by ``pick``.
    """

    inputs: jax.Array  # [K, input_dim]: the distinct inputs (K = kappa, or tau if iid)
    pick: jax.Array  # [tau] i32: the input each position takes
    y: jax.Array  # [tau] i32
    env_log_likelihood: jax.Array  # [] log p(y_1..tau | x_1..tau) under the environment


PolyadicTest.__test__ = False


def sample_labels(key: jax.Array, prior: Prior, params: Any, x: jax.Array) -> jax.Array:
    """Labels y ~ softmax(prior.logits(params, x)). x: [n, d] -> y: [n] i32."""
    return jax.random.categorical(key, prior.logits(params, x), axis=-1).astype(jnp.int32)


def label_log_likelihood(logits: jax.Array, y: jax.Array) -> jax.Array:
    """Sum over inputs of log softmax(logits)[y]. logits: [..., n, C], y: [..., n] -> [...]."""
    log_p = jax.nn.log_softmax(logits, axis=-1)
    return jnp.take_along_axis(log_p, y[..., None], axis=-1)[..., 0].sum(-1)


def sample_training_data(key: jax.Array, prior: Prior, params: Any, num_train: int) -> Dataset:
    """num_train iid pairs from the environment."""
    k_x, k_y = jax.random.split(key)
    x = prior.sample_inputs(k_x, num_train)
    return Dataset(x, sample_labels(k_y, prior, params, x))


def polyadic_design(
    key: jax.Array, prior: Prior, tau: int, kappa: int | None
) -> tuple[jax.Array, jax.Array]:
    """(inputs [K, d], pick [tau] i32) with x = inputs[pick]: tau iid inputs (K = tau,
    pick = 0..tau-1) when kappa is None, else kappa anchors (K = kappa) drawn
    uniformly with replacement (paper 001, Def. 1)."""
    if kappa is None:
        return prior.sample_inputs(key, tau), jnp.arange(tau, dtype=jnp.int32)
    k_anchor, k_pick = jax.random.split(key)
    anchors = prior.sample_inputs(k_anchor, kappa)
    return anchors, jax.random.randint(k_pick, (tau,), 0, kappa).astype(jnp.int32)


def polyadic_inputs(key: jax.Array, prior: Prior, tau: int, kappa: int | None) -> jax.Array:
    """tau test inputs [tau, d]: iid when kappa is None, else drawn uniformly
    with replacement from kappa anchor inputs (paper 001, Def. 1)."""
    inputs, pick = polyadic_design(key, prior, tau, kappa)
    return inputs[pick]


def sample_polyadic_test(
    key: jax.Array, prior: Prior, params: Any, tau: int, kappa: int | None = None
) -> PolyadicTest:
    """One test tau-sample in its design's form (the same draw as ``sample_test``)."""
    k_x, k_y = jax.random.split(key)
    inputs, pick = polyadic_design(k_x, prior, tau, kappa)
    logits = prior.logits(params, inputs[pick])
    y = jax.random.categorical(k_y, logits, axis=-1).astype(jnp.int32)
    return PolyadicTest(inputs, pick, y, label_log_likelihood(logits, y))


def sample_test(
    key: jax.Array, prior: Prior, params: Any, tau: int, kappa: int | None = None
) -> TestSample:
    """One test tau-sample with its exact environment log-likelihood."""
    test = sample_polyadic_test(key, prior, params, tau, kappa)
    return TestSample(test.inputs[test.pick], test.y, test.env_log_likelihood)


@dataclasses.dataclass(frozen=True)
class TestbedProblem:
    """One sampled environment with its training data and test tau-sampler.

    prior: the generative prior; env_params: the sampled environment (pytree);
    train_data: Dataset of spec.num_train pairs; spec: what agents may know.
    """

    prior: Any
    env_params: Any
    train_data: Dataset
    spec: ProblemSpec

    __test__ = False

    def logits(self, x: jax.Array) -> jax.Array:
        """The environment's true logits (already divided by the temperature). [n, d] -> [n, C]."""
        return self.prior.logits(self.env_params, x)

    def sample_test(self, key: jax.Array) -> TestSample:
        return sample_test(key, self.prior, self.env_params, self.spec.tau, self.spec.kappa)

    def sample_tests(self, key: jax.Array, num_test: int) -> TestSample:
        """num_test independent tau-samples, stacked: x [num_test, tau, d], ..."""
        return jax.vmap(self.sample_test)(jax.random.split(key, num_test))


def sample_environment(key: jax.Array, prior: Prior, num_train: int) -> tuple[Any, Dataset]:
    """Environment params and its training data from a problem key (vmappable over keys).

    key: ``problem_key(...)``; the environment and the data use its ENV_TAG and
    DATA_TAG streams (decision_bench._src.keys), the agent's fit and the
    evaluation use others.
    """
    params = prior.init(jax.random.fold_in(key, ENV_TAG))
    return params, sample_training_data(jax.random.fold_in(key, DATA_TAG), prior, params, num_train)


def make_testbed_problem(
    prior: str = "mlp",
    input_dim: int = 2,
    num_train: int = 10,
    temperature: float = 0.1,
    tau: int = 1,
    kappa: int | None = None,
    seed: int = 0,
    hidden_sizes: tuple[int, ...] = DEFAULT_HIDDEN_SIZES,
    activation: str = DEFAULT_ACTIVATION,
    num_classes: int = 2,
) -> TestbedProblem:
    """A testbed problem: an environment sampled from ``prior`` with seed ``seed``.

    The environment and its training data come from
    ``problem_key(seed, input_dim, num_train, temperature)``: a different
    (num_train, temperature) gives a different environment, as in the reference
    sweeps; tau and kappa do not change it.

    prior: "mlp" | "logistic" | "coins" (for coins, input_dim is the number of coins).
    kappa: None for iid test inputs, 1 for monadic, 2 for dyadic, ...
    """
    num_train = check_int("num_train", num_train, 0)
    tau = check_int("tau", tau, 1)
    kappa = check_optional_int("kappa", kappa, 1)
    seed = check_int("seed", seed, 0)
    gen = make_prior(prior, input_dim, temperature, hidden_sizes, activation, num_classes)
    params, data = sample_environment(
        problem_key(seed, gen.input_dim, num_train, gen.temperature), gen, num_train
    )
    spec = ProblemSpec(
        input_dim=gen.input_dim,
        num_classes=gen.num_classes,
        temperature=gen.temperature,
        num_train=num_train,
        tau=tau,
        kappa=kappa,
    )
    return TestbedProblem(gen, params, data, spec)
