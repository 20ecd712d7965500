"""A ReLU MLP trained to its MAP estimate (mean cross-entropy plus the decayed L2, by
Adam) that keeps every training row it has seen, at its ``Batch.index`` position
(agents/data_buffer.py). laplace puts its last-layer posterior and deep_kernel its
kernel head on this network; both need the rows under the final network at
prediction time, so they share its state, its initialisation and its update.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

from decision_bench.agents import data_buffer, core
from decision_bench.agents.data_buffer import DataBuffer
from decision_bench.agents._src.losses import mean_cross_entropy
from decision_bench.agents._src.networks import relu_mlp
from decision_bench.agents.base import Batch
from decision_bench.priors import init_mlp_layers


class MapState(NamedTuple):
    params: Any  # tuple of {"w", "b"} layers: d -> hidden... -> C
    opt_state: Any  # optax.adam state
    data: DataBuffer  # the training rows seen so far
    num_seen: jax.Array  # [] f32: the latest batch's num_seen (T, or t in the bandit)


def map_training(
    *, sizes: tuple[int, ...], capacity: int, regularization: str
) -> tuple[Callable[..., MapState], Callable[..., MapState]]:
    """(init(hyper, key), update(hyper, key, state, batch)) of the network with layer
    sizes (d, hidden..., C), a row store of ``capacity`` rows and the L2 decay mode
    ``regularization``; the hyper needs ``l2``, ``learning_rate`` and ``temperature``."""
    input_dim = sizes[0]

    def init(hyper: Any, key: jax.Array) -> MapState:
        params = init_mlp_layers(key, sizes)
        return MapState(
            params=params,
            opt_state=core.init_optimizer(hyper, params),
            data=data_buffer.empty(capacity, input_dim),
            num_seen=jnp.zeros((), jnp.float32),
        )

    def loss(params: Any, hyper: Any, state: MapState, batch: Batch, key: jax.Array) -> jax.Array:
        del state, key  # the MAP loss: deterministic, of the params alone
        data_loss = mean_cross_entropy(relu_mlp(params, batch.x), batch.y)
        return data_loss + core.l2_penalty(
            hyper, params, batch.num_seen, input_dim=input_dim, mode=regularization
        )

    train = core.sgd_update(loss)

    def update(hyper: Any, key: jax.Array, state: MapState, batch: Batch) -> MapState:
        """One Adam step towards the MAP; stores the batch's rows."""
        return train(hyper, key, state, batch)._replace(
            data=data_buffer.write(state.data, batch),
            num_seen=jnp.asarray(batch.num_seen, jnp.float32),
        )

    return init, update
