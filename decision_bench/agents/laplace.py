"""The laplace agent: a MAP ReLU MLP whose last layer gets a Laplace (GGN) posterior.

1. Train the MLP by cross-entropy with the mlp's decayed L2 (``l2 * d *
   sqrt(beta) / T`` in testbed mode), Adam: the MAP estimate theta*. As a
   density over all n observations this loss is ``n * mean cross-entropy + n * w
   * |theta|^2``, i.e. a Gaussian prior of precision ``2 n w`` (w the decayed
   weight after n observations).
2. Keep everything but the last layer at theta*. With phi(x) = (h(x), 1) the
   last hidden layer and a bias input ([m + 1], m the last hidden width), the
   logits are linear in the last layer W [m + 1, C], so the Gauss-Newton matrix
   of the loss in W is its exact Hessian:

       H = sum_i phi_i phi_i^T (x) (diag(p_i) - p_i p_i^T) + 2 n w I,

   p_i the softmax at the i-th training input, (x) the Kronecker product in
   W's row-major order. The Laplace posterior of W is N(W*, H^-1).
3. One Thompson draw: delta = posterior_scale * L^-T zeta with H = L L^T and
   zeta ~ N(0, I) of size (m + 1) C, reshaped to [m + 1, C], and

       logits(x) = f(x) + phi(x) delta.

   One delta serves all n inputs, so a draw is joint across inputs.

The Hessian needs every training input under the final network, so the state
stores the training rows at their ``Batch.index`` positions (agents/data_buffer.py,
``spec.num_train`` rows; in the bandit the replay positions drawn so far), and
``sample_logits`` builds H and its Cholesky factor from them; H does not depend
on the key, so a vmap over keys computes it once.

Static: hidden_sizes, input_dim, num_classes, num_train, spec.regularization.
Traced (agents/core.py): l2, learning_rate, posterior_scale and the problem's
temperature.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from decision_bench._src.validation import check_positive
from decision_bench.agents import core
from decision_bench.agents.map_network import MapState, map_training
from decision_bench.agents._src.checks import check_config
from decision_bench.agents._src.networks import relu_features, relu_mlp
from decision_bench.agents.base import Agent
from decision_bench.agents.regularization import true_divisor
from decision_bench.agents.entry import AgentEntry
from decision_bench.specs import ProblemSpec


@dataclasses.dataclass(frozen=True)
class LaplaceConfig:
    """laplace defaults: the mlp's network and training; the exact Laplace posterior
    of the last layer (posterior_scale 1)."""

    hidden_sizes: tuple[int, ...] = (50, 50)  # the last width is the feature dimension m
    l2: float = core.traced(1.0)  # weight = l2 * d * sqrt(beta) / T in testbed mode
    learning_rate: float = core.traced(1e-3)
    posterior_scale: float = core.traced(1.0)  # multiplies the posterior's standard deviations
    num_steps: int = 1000

    def __post_init__(self):
        check_config(self, posterior_scale=check_positive)


# The MAP network and its stored rows (for the Hessian).
LaplaceState = MapState


class LaplaceHyper(NamedTuple):
    """The traced hyperparameters of LaplaceConfig and the problem's temperature, each a
    [] f32 leaf (``core.hyper_class`` checks them against the config)."""

    l2: jax.Array
    learning_rate: jax.Array
    posterior_scale: jax.Array
    temperature: jax.Array


def last_layer_features(params: tuple, x: jax.Array) -> jax.Array:
    """phi(x) = (last hidden activation, 1): x [n, d] -> [n, m + 1]."""
    h = relu_features(params, x)
    return jnp.concatenate([h, jnp.ones((x.shape[0], 1), h.dtype)], axis=-1)


def last_layer_precision(
    features: jax.Array, probs: jax.Array, prior_precision: jax.Array
) -> jax.Array:
    """H [(m+1) C, (m+1) C]: sum_i phi_i phi_i^T (x) (diag(p_i) - p_i p_i^T) plus
    prior_precision * I, for features [n, m + 1] (zero rows add nothing) and
    softmax probabilities [n, C]."""
    curvature = jax.vmap(jnp.diag)(probs) - probs[:, :, None] * probs[:, None, :]  # [n, C, C]
    blocks = jnp.einsum("nj,nk,nce->jcke", features, features, curvature)
    size = features.shape[-1] * probs.shape[-1]
    return blocks.reshape(size, size) + prior_precision * jnp.eye(size, dtype=jnp.float32)


def _posterior_factor(hyper: Any, state: LaplaceState, input_dim: int, mode: str) -> jax.Array:
    """L^-T [(m+1) C, (m+1) C] for H = L L^T on the stored rows under the current network."""
    seen = state.data.seen[:, None] > 0
    phi = last_layer_features(state.params, state.data.x) * seen
    probs = jax.nn.softmax(relu_mlp(state.params, state.data.x), axis=-1)
    n = true_divisor(state.num_seen)
    prior_precision = 2.0 * n * core.penalty_weight(hyper, state.num_seen, input_dim=input_dim, mode=mode)
    chol = jnp.linalg.cholesky(last_layer_precision(phi, probs, prior_precision))
    eye = jnp.eye(chol.shape[0], dtype=jnp.float32)
    return jax.scipy.linalg.solve_triangular(chol, eye, lower=True, trans="T")


@core.cached_functions
def laplace_functions(
    *, hidden_sizes: tuple[int, ...], input_dim: int, num_classes: int, capacity: int, regularization: str
):
    """laplace's functions for one static setting."""
    sizes = (input_dim, *hidden_sizes, num_classes)
    num_weights = (sizes[-2] + 1) * num_classes  # the last hidden width, or d with no hidden layer
    init, update = map_training(sizes=sizes, capacity=capacity, regularization=regularization)

    def sample_logits(hyper: Any, key: jax.Array, state: LaplaceState, x: jax.Array) -> jax.Array:
        """One joint draw of the last layer, applied to all of x [n, d] -> [n, C]."""
        zeta = jax.random.normal(key, (num_weights,), jnp.float32)
        factor = _posterior_factor(hyper, state, input_dim, regularization)
        delta = (hyper.posterior_scale * (factor @ zeta)).reshape(-1, num_classes)
        return relu_mlp(state.params, x) + last_layer_features(state.params, x) @ delta

    return init, update, sample_logits


def make_laplace(spec: ProblemSpec, config: LaplaceConfig) -> Agent:
    # No member_logits: the last layer's posterior is continuous.
    return core.make_agent(laplace_functions, spec, config, name="laplace", capacity=spec.num_train)


ENTRIES = (AgentEntry("laplace", LaplaceConfig, make_laplace, colour="#9edae5", since="issue 23"),)
