"""Stochastic-gradient MCMC: SGLD (Welling and Teh, 2011) and its momentum
variant SGHMC (Chen et al., 2014); paper 000, App. C.5.

Target: the posterior over the weights theta of a ReLU MLP (``hidden_sizes``;
``()`` is multinomial logistic regression) with energy

    U(theta) = n * mean_batch[cross-entropy] + n * w(n) * |theta|^2,

n = max(num_seen, 1), w(n) = ``decayed_weight(1 / prior_variance, n, ...)``. The
data term is the minibatch estimate of the full-data negative log-likelihood.
The prior term n * w(n) * |theta|^2 is a Gaussian prior N(0, s^2 I) with
s^2 = prior_variance / (2 d sqrt(beta)) in testbed mode (the reference's
"Gaussian prior as L2 decay" with scale d sqrt(beta) / (prior_variance T)) and
s^2 = prior_variance / (4 sqrt(beta)) in sequential mode.

Update (grad = -grad U, the gradient of the log posterior; xi ~ N(0, I)):

    v     <- momentum * v + h / 2 * grad + sqrt((1 - momentum) * h) * xi
    theta <- theta + v

With momentum = 0 this is the Langevin step theta += h/2 grad + N(0, h); with
momentum > 0 it is SGHMC with friction 1 - momentum. Both leave the posterior
invariant as h -> 0.

Step size h: with ``per_example_lr`` (default, the reference's convention)
h = 2 * learning_rate / n, so learning_rate multiplies the gradient of the
MEAN loss exactly like SGD's learning rate, and one value works across data
sizes (this reproduces the reference optimiser: step sqrt(lr)^2 on the mean
loss, noise of temperature 1/T). With ``per_example_lr=False``, h =
learning_rate directly (the textbook form theta += lr/2 grad log p + N(0, lr)).

Kept models: after ``burn_in`` steps, the parameters are copied into a
fixed-size buffer every ``keep_every`` steps; the buffer holds
num_kept = (num_steps - burn_in) // keep_every models. Beyond num_steps
(sequential use) the buffer is a ring holding the most recent num_kept models.
``member_logits`` enumerates the kept models with equal weight; while fewer than
num_kept are filled, the filled ones are repeated cyclically (unequal weights
up to one repetition), and with none filled the current parameters stand in.
``sample_logits`` picks one filled model uniformly.

Registered presets: ``sgmcmc`` (paper: 500,000 steps, burn-in 100,000, keep
every 1000 -> 400 models) and ``sgmcmc_quick`` (5,000 steps, burn-in 1,000,
keep every 50 -> 80 models, learning rate 5e-4 from the paper's sweep to make
up for 100x fewer steps), see ``SGMCMCQuickConfig``. Plain SGLD is either
preset with ``momentum=0``.

Traced (agents/core.py): the learning rate, prior variance, momentum and the
problem's temperature. Static, because they set shapes, loop lengths or branches:
hidden sizes, number of classes, input dimension, regularisation mode,
``per_example_lr``, ``burn_in``, ``keep_every`` and the number of kept models
(from ``num_steps``); num_steps also sets the length of ``fit``'s loop.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from decision_bench._src.validation import check_positive
from decision_bench.agents._src.checks import (
    at_least,
    check_config,
    check_sizes_or_empty,
    unit_interval_open,
)
from decision_bench.agents._src.losses import mean_cross_entropy, sum_of_squares
from decision_bench.agents._src.networks import relu_mlp
from decision_bench.agents.base import Agent, Batch
from decision_bench.agents import core
from decision_bench.agents.regularization import decayed_weight, true_divisor
from decision_bench.agents.entry import AgentEntry
from decision_bench.priors import init_mlp_layers
from decision_bench.specs import ProblemSpec


@dataclasses.dataclass(frozen=True)
class SGMCMCConfig:
    """sgmcmc defaults (paper 000, App. C.5; testbed_facts.md)."""

    hidden_sizes: tuple[int, ...] = (50, 50)  # () gives logistic regression
    learning_rate: float = core.traced(1e-4)
    prior_variance: float = core.traced(0.1)  # see the module docstring for the implied prior
    momentum: float = core.traced(0.9)  # 0 gives plain SGLD
    num_steps: int = 500_000
    burn_in: int = 100_000
    keep_every: int = 1000
    per_example_lr: bool = True  # h = 2 lr / n (True) or h = lr (False)

    def __post_init__(self):
        check_config(
            self,
            hidden_sizes=check_sizes_or_empty,
            prior_variance=check_positive,
            momentum=unit_interval_open,
            num_steps=at_least(1),
            burn_in=at_least(0),
            keep_every=at_least(1),
        )
        if not isinstance(self.per_example_lr, bool):
            raise ValueError(f"per_example_lr must be True or False, got {self.per_example_lr!r}")
        if self.burn_in >= self.num_steps:
            raise ValueError(
                f"burn_in must be < num_steps={self.num_steps}, got burn_in={self.burn_in}"
            )
        if self.num_steps - self.burn_in < self.keep_every:
            raise ValueError(
                f"keep_every must be <= num_steps - burn_in = {self.num_steps - self.burn_in} "
                f"so at least one model is kept, got keep_every={self.keep_every}"
            )

    @property
    def num_kept(self) -> int:
        return (self.num_steps - self.burn_in) // self.keep_every


@dataclasses.dataclass(frozen=True)
class SGMCMCQuickConfig(SGMCMCConfig):
    """The cheap preset registered as "sgmcmc_quick": 100x fewer steps than the
    paper, so a learning rate 5x larger (5e-4, inside the paper's sweep)."""

    learning_rate: float = core.traced(5e-4)
    num_steps: int = 5_000
    burn_in: int = 1_000
    keep_every: int = 50


QUICK_CONFIG = SGMCMCQuickConfig()


class SGMCMCState(NamedTuple):
    params: tuple  # current MLP layers {"w": [in, out], "b": [out]}
    velocity: tuple  # same structure: the momentum buffer v
    kept: tuple  # same structure, every leaf with a leading [num_kept] axis
    num_saved: jax.Array  # [] i32: models saved so far (may exceed num_kept: ring)
    step: jax.Array  # [] i32: updates done so far


class SGMCMCHyper(NamedTuple):
    """The traced hyperparameters of SGMCMCConfig and the problem's temperature, each a
    [] f32 leaf (``core.hyper_class`` checks them against the config)."""

    learning_rate: jax.Array
    prior_variance: jax.Array
    momentum: jax.Array
    temperature: jax.Array


class SGMCMCQuickHyper(NamedTuple):
    """The traced hyperparameters of SGMCMCQuickConfig and the problem's temperature, each a
    [] f32 leaf (``core.hyper_class`` checks them against the config)."""

    learning_rate: jax.Array
    prior_variance: jax.Array
    momentum: jax.Array
    temperature: jax.Array


def _prior_weight(hyper: Any, num_seen: jax.Array, *, input_dim: int, mode: str) -> jax.Array:
    return decayed_weight(
        1.0 / hyper.prior_variance,
        num_seen,
        input_dim=input_dim,
        temperature=hyper.temperature,
        mode=mode,
    )


def prior_weight(spec: ProblemSpec, config: SGMCMCConfig, num_seen: jax.Array) -> jax.Array:
    """w(n) in U = n * mean xent + n * w(n) * |theta|^2. Returns []."""
    return core.config_weight(_prior_weight, spec, config, num_seen)


def _step_size(learning_rate: jax.Array, num_seen: jax.Array, *, per_example_lr: bool) -> jax.Array:
    if per_example_lr:
        return 2.0 * learning_rate / true_divisor(num_seen)
    return jnp.asarray(learning_rate, jnp.float32)


def step_size(config: SGMCMCConfig, num_seen: jax.Array) -> jax.Array:
    """The Langevin step h after num_seen observations. Returns [] f32."""
    return _step_size(
        jnp.asarray(config.learning_rate, jnp.float32),
        num_seen,
        per_example_lr=config.per_example_lr,
    )


@core.cached_functions
def _functions(
    *,
    hidden_sizes: tuple[int, ...],
    num_classes: int,
    input_dim: int,
    regularization: str,
    per_example_lr: bool,
    burn_in: int,
    keep_every: int,
    num_kept: int,
):
    """sgmcmc's functions for one static setting; the same objects for the same
    setting, so every sgmcmc agent of that shape shares its compiled programs."""
    sizes = (input_dim, *hidden_sizes, num_classes)

    def init(hyper: Any, key: jax.Array) -> SGMCMCState:
        del hyper  # the shapes are fixed by the static setting
        params = init_mlp_layers(key, sizes)
        zeros = jax.tree.map(jnp.zeros_like, params)
        kept = jax.tree.map(lambda p: jnp.zeros((num_kept, *p.shape), p.dtype), params)
        return SGMCMCState(
            params=params,
            velocity=zeros,
            kept=kept,
            num_saved=jnp.zeros((), jnp.int32),
            step=jnp.zeros((), jnp.int32),
        )

    def log_posterior(params: tuple, hyper: Any, batch: Batch) -> jax.Array:
        """-U(theta) on this minibatch. Returns []."""
        n = true_divisor(batch.num_seen)
        data = n * mean_cross_entropy(relu_mlp(params, batch.x), batch.y)
        weight = _prior_weight(hyper, batch.num_seen, input_dim=input_dim, mode=regularization)
        prior = n * weight * sum_of_squares(params)
        return -(data + prior)

    def update(hyper: Any, key: jax.Array, state: SGMCMCState, batch: Batch) -> SGMCMCState:
        momentum = hyper.momentum
        h = _step_size(hyper.learning_rate, batch.num_seen, per_example_lr=per_example_lr)
        grads = jax.grad(log_posterior)(state.params, hyper, batch)
        leaves, treedef = jax.tree.flatten(grads)
        keys = jax.random.split(key, len(leaves))
        noise = jax.tree.unflatten(
            treedef, [jax.random.normal(k, g.shape, g.dtype) for k, g in zip(keys, leaves)]
        )
        noise_std = jnp.sqrt((1.0 - momentum) * h)
        velocity = jax.tree.map(
            lambda v, g, xi: momentum * v + 0.5 * h * g + noise_std * xi,
            state.velocity,
            grads,
            noise,
        )
        params = jax.tree.map(jnp.add, state.params, velocity)

        step = state.step + 1
        save = (step > burn_in) & ((step - burn_in) % keep_every == 0)
        slot = state.num_saved % num_kept
        # Write the slot unconditionally (a dynamic-update-slice, in place under
        # scan) with either the new model or what it already held.
        kept = jax.tree.map(
            lambda buf, p: buf.at[slot].set(jnp.where(save, p, buf[slot])), state.kept, params
        )
        return SGMCMCState(
            params=params,
            velocity=velocity,
            kept=kept,
            num_saved=state.num_saved + save.astype(jnp.int32),
            step=step,
        )

    def member_params(state: SGMCMCState) -> tuple:
        """The num_kept models to enumerate: filled slots repeated cyclically, or
        the current parameters when nothing is kept yet. Leaves [num_kept, ...]."""
        filled = jnp.minimum(state.num_saved, num_kept)
        order = jnp.arange(num_kept) % jnp.maximum(filled, 1)
        return jax.tree.map(
            lambda buf, p: jnp.where(filled > 0, buf[order], jnp.broadcast_to(p, buf.shape)),
            state.kept,
            state.params,
        )

    def member_logits(hyper: Any, state: SGMCMCState, x: jax.Array) -> jax.Array:
        """x [n, d] -> [num_kept, n, C]: every kept model."""
        del hyper
        return jax.vmap(relu_mlp, (0, None))(member_params(state), x)

    def sample_logits(
        hyper: Any, key: jax.Array, state: SGMCMCState, x: jax.Array
    ) -> jax.Array:
        """x [n, d] -> [n, C]: one kept model, picked uniformly, for all n inputs."""
        del hyper
        filled = jnp.minimum(state.num_saved, num_kept)
        i = jax.random.randint(key, (), 0, jnp.maximum(filled, 1))
        chosen = jax.tree.map(
            lambda buf, p: jnp.where(filled > 0, buf[i], p), state.kept, state.params
        )
        return relu_mlp(chosen, x)

    return init, update, sample_logits, member_logits


def make_sgmcmc(spec: ProblemSpec, config: SGMCMCConfig = SGMCMCConfig()) -> Agent:
    """SGLD / SGHMC agent for ``spec``. See the module docstring."""
    return core.make_agent(
        _functions,
        spec,
        config,
        name="sgmcmc_quick" if isinstance(config, SGMCMCQuickConfig) else "sgmcmc",
        num_kept=config.num_kept,
    )


ENTRIES = (
    AgentEntry("sgmcmc", SGMCMCConfig, make_sgmcmc, colour="#7f7f7f"),
    AgentEntry("sgmcmc_quick", SGMCMCQuickConfig, make_sgmcmc, colour="#bcbd22"),
)
