"""The deep_kernel agent: a trained network's last layer as a GP kernel (paper 000, App. C.9).

1. Train a ReLU MLP (hidden (50, 50)) by cross-entropy with the mlp's decayed L2
   (``l2 * d * sqrt(beta) / T`` in testbed mode), Adam, 1000 steps.
2. Its normalised last hidden layer phi(x) = h(x) / (1e-6 + |h(x)|) (m = the last
   hidden width) defines the kernel k(x, x') = phi(x)^T phi(x'). Per class i, the
   logits are a GP with that kernel and noise variance sigma^2 on the T training
   inputs, whose posterior covariance at test inputs Phi_s is (App. C.9, via the
   Woodbury identity)

       Sigma = Phi_s (I - Phi^T (sigma^2 I + Phi Phi^T)^-1 Phi) Phi_s^T
             = sigma^2 Phi_s (sigma^2 I + Phi^T Phi)^-1 Phi_s^T,

   the same as a Bayesian linear head w ~ N(0, I_m), z = Phi w + N(0, sigma^2):
   its posterior covariance is (I + Phi^T Phi / sigma^2)^-1 = sigma^2 M^-1 with
   M = sigma^2 I + Phi^T Phi = L L^T.
3. One draw: zeta ~ N(0, I) of shape [m, C], the head perturbation
   delta = sigma L^-T zeta (covariance sigma^2 M^-1 per class), and

       logits(x) = f(x) + c * phi(x) delta,   c = scale_factor / sqrt(n beta),

   where f is the trained network (the paper takes the GP mean to be the network's
   output, since the true logits are never observed) and n the number of
   observations (T in the testbed, t in the bandit). ``c`` is the reference
   release's extra scale (its default scale_factor 2, sigma^2 = 4 beta); c = 1 is
   the paper's formula. One zeta serves all n inputs, so a draw is a joint sample:
   logits at different inputs are correlated through phi, and the joint predictions
   are not products of marginals.

The kernel matrix needs every training input under the final network, so the
state also stores the training rows (agents/data_buffer.py, ``spec.num_train``
rows), and ``sample_logits`` builds M and its Cholesky factor from them (m x m,
m = 50: cheap, and independent of the key, so a vmap over keys computes it
once). ``fit`` hands it the whole training set after the gradient steps
(``fit_data``); in the bandit (``update_mode`` "replay") each update stores its
batch at the ``Batch.index`` positions, so the rows are the replay positions the
minibatches have drawn so far.

Static: hidden_sizes, input_dim, num_classes, num_train, spec.regularization.
Traced (agents/core.py): l2, learning_rate, scale_factor, sigma_squared_factor
and the problem's temperature.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from decision_bench._src.validation import check_positive
from decision_bench.agents import data_buffer
from decision_bench.agents.map_network import MapState, map_training
from decision_bench.agents._src.checks import check_common
from decision_bench.agents._src.networks import relu_features, relu_mlp
from decision_bench.agents.base import Agent
from decision_bench.agents import core
from decision_bench.agents.regularization import true_divisor
from decision_bench.agents.entry import AgentEntry
from decision_bench.envs.testbed import Dataset
from decision_bench.specs import ProblemSpec

# Added to |h(x)| before normalising the features (a dead layer gives phi = 0).
_NORM_EPS = 1e-6


@dataclasses.dataclass(frozen=True)
class DeepKernelConfig:
    """deep_kernel defaults (the reference release's): the mlp's network and training,
    sampling scale_factor 2 and sigma^2 = 4 beta. Its sweep: scale_factor in {1, ..., 6},
    sigma_squared_factor in {0.5, 1, 2, 3, 4}."""

    hidden_sizes: tuple[int, ...] = (50, 50)  # the last width is the feature dimension m
    l2: float = core.traced(1.0)  # weight = l2 * d * sqrt(beta) / T in testbed mode
    learning_rate: float = core.traced(1e-3)
    num_steps: int = 1000
    scale_factor: float = core.traced(2.0)  # c = scale_factor / sqrt(n beta)
    sigma_squared_factor: float = core.traced(4.0)  # sigma^2 = sigma_squared_factor * beta

    def __post_init__(self):
        check_common(self)
        for name in ("scale_factor", "sigma_squared_factor"):
            object.__setattr__(self, name, check_positive(name, getattr(self, name)))


# The MAP network and its stored rows (for the kernel matrix).
DeepKernelState = MapState


class DeepKernelHyper(NamedTuple):
    """The traced hyperparameters of DeepKernelConfig and the problem's temperature, each a
    [] f32 leaf (``core.hyper_class`` checks them against the config)."""

    l2: jax.Array
    learning_rate: jax.Array
    scale_factor: jax.Array
    sigma_squared_factor: jax.Array
    temperature: jax.Array


def features(params: Any, x: jax.Array) -> jax.Array:
    """phi(x) [n, m]: the last hidden layer, each row scaled to unit norm (+1e-6)."""
    h = relu_features(params, x)
    return h / (_NORM_EPS + jnp.linalg.norm(h, axis=-1, keepdims=True))


def head_factor(train_features: jax.Array, sigma_squared: jax.Array) -> jax.Array:
    """A [m, m] with A A^T = sigma^2 (sigma^2 I + Phi^T Phi)^-1: the posterior covariance
    of a linear head w ~ N(0, I) observed as Phi w + N(0, sigma^2) (Phi: [T, m];
    zero rows add nothing). A = sigma L^-T for the Cholesky factor L of sigma^2 I + Phi^T Phi."""
    m = train_features.shape[-1]
    gram = sigma_squared * jnp.eye(m, dtype=jnp.float32) + train_features.T @ train_features
    chol = jnp.linalg.cholesky(gram)
    inv_t = jax.scipy.linalg.solve_triangular(chol, jnp.eye(m, dtype=jnp.float32), lower=True, trans="T")
    return jnp.sqrt(sigma_squared) * inv_t


def _head_factor_of(hyper: Any, state: DeepKernelState) -> jax.Array:
    """head_factor on the stored rows under the current network."""
    phi = features(state.params, state.data.x) * (state.data.seen[:, None] > 0)
    return head_factor(phi, hyper.sigma_squared_factor * hyper.temperature)


def logit_scale(hyper: Any, num_seen: jax.Array) -> jax.Array:
    """c = scale_factor / sqrt(max(n, 1) beta), a [] f32."""
    return hyper.scale_factor / jnp.sqrt(true_divisor(num_seen) * hyper.temperature)


def logit_covariance(hyper: Any, state: DeepKernelState, x: jax.Array) -> jax.Array:
    """The covariance [n, n] across inputs x [n, d] of one class's sampled logit
    (the same for every class; classes are independent): c^2 phi A A^T phi^T."""
    a = _head_factor_of(hyper, state)
    phi_a = features(state.params, x) @ a
    return jnp.square(logit_scale(hyper, state.num_seen)) * phi_a @ phi_a.T


@core.cached_functions
def _functions(
    *, hidden_sizes: tuple[int, ...], input_dim: int, num_classes: int, capacity: int, regularization: str
):
    """deep_kernel's functions for one static setting (the same objects each time)."""
    sizes = (input_dim, *hidden_sizes, num_classes)
    width = hidden_sizes[-1]
    init, update = map_training(sizes=sizes, capacity=capacity, regularization=regularization)

    def fit_data(
        hyper: Any, key: jax.Array, state: DeepKernelState, data: Dataset, num_train: jax.Array
    ) -> DeepKernelState:
        """Stores the first num_train rows of data (x [rows, d], y [rows]) for the kernel."""
        del hyper, key  # the network is trained by update
        return state._replace(
            data=data_buffer.from_dataset(capacity, data, num_train),
            num_seen=jnp.asarray(num_train, jnp.float32),
        )

    def sample_logits(hyper: Any, key: jax.Array, state: DeepKernelState, x: jax.Array) -> jax.Array:
        """One joint draw of the linear head, applied to all of x [n, d] -> [n, C]."""
        zeta = jax.random.normal(key, (width, num_classes), jnp.float32)
        delta = _head_factor_of(hyper, state) @ zeta  # [m, C] ~ N(0, sigma^2 M^-1) per class
        scale = logit_scale(hyper, state.num_seen)
        return relu_mlp(state.params, x) + scale * features(state.params, x) @ delta

    return init, update, sample_logits, None, fit_data


def make_deep_kernel(spec: ProblemSpec, config: DeepKernelConfig) -> Agent:
    # No member_logits: the head's posterior is continuous.
    return core.make_agent(_functions, spec, config, name="deep_kernel", capacity=spec.num_train)


ENTRIES = (AgentEntry("deep_kernel", DeepKernelConfig, make_deep_kernel, colour="#c49c94"),)
