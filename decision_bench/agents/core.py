"""The core every agent family shares: hyperparameters as data, one SGD step.

A family defines its functions once per *static* setting (hidden sizes, number
of members, index dimension, number of classes, input dimension, regulariser
mode): a builder cached with ``functools.lru_cache`` returns the same function
objects for the same settings. Every real-valued number (L2 weight, learning
rate, prior scale, dropout rate, the problem's temperature, ...) travels in a
``hyper`` NamedTuple of [] f32 arrays bound to those functions by :func:`bind`.
The Agent record is then a pytree whose leaves are the hyperparameters, so

- a second ``make`` with the same settings gives an agent that reuses every
  compiled program (``fit``, ``run_bandit``, ``estimate_kl``), whatever the
  hyperparameter values;
- a grid of hyperparameters is one vmapped program (``vmap_hyperparameters``).

Functions bound by ``bind`` take ``hyper`` as their first argument and then
follow the Agent's key-first order (agents/base.py): ``init(hyper, key)``,
``update(hyper, key, state, batch)``, ``sample_logits(hyper, key, state, x)``,
``member_logits(hyper, state, x)``, ``fit_data(hyper, key, state, data,
num_train)``, ``diagnose(hyper, state)``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax

from decision_bench.agents.base import Agent, check_key_argument
from decision_bench.agents.regularization import decayed_weight


def as_hyper(cls: type, **values: Any) -> Any:
    """``cls(**values)`` with every value a [] f32 array (a hyperparameter leaf)."""
    return cls(**{name: jnp.asarray(value, jnp.float32) for name, value in values.items()})


def bind(
    hyper: NamedTuple,
    init: Callable,
    update: Callable,
    sample_logits: Callable,
    member_logits: Callable | None = None,
    *,
    fit_data: Callable | None = None,
    diagnose: Callable | None = None,
    **record: Any,
) -> Agent:
    """The Agent whose functions are the given ones with ``hyper`` bound first.

    record: the static fields of the Agent (num_steps, name, update_mode).
    """
    bound = lambda fn: None if fn is None else jax.tree_util.Partial(fn, hyper)  # noqa: E731
    return Agent(
        bound(_key_checked(init, "init")),
        bound(_key_checked(update, "update")),
        bound(_key_checked(sample_logits, "sample_logits")),
        bound(member_logits),
        fit_data=bound(fit_data),
        diagnose=bound(diagnose),
        **record,
    )


@functools.lru_cache(maxsize=None)
def _key_checked(fn: Callable, field: str) -> Callable:
    """``fn(hyper, key, ...)`` that first checks ``key`` is a PRNG key
    (base.check_key_argument: a state given first, in the pre-0.2 order, gets one
    line instead of an AttributeError deep inside). Cached, so one family function
    always gets the same wrapper and compiled programs are still shared."""

    @functools.wraps(fn)
    def checked(hyper, key, *args, **kwargs):
        check_key_argument(field, key)
        return fn(hyper, key, *args, **kwargs)

    return checked


def hyperparameters_of(agent: Agent) -> Any:
    """The hyper NamedTuple bound to an agent made by :func:`bind` (None otherwise)."""
    args = agent.init.args
    return args[0] if args else None


def with_hyperparameters(agent: Agent, hyper: Any) -> Agent:
    """The same agent with another ``hyper`` of the same structure bound (e.g. one
    point of a grid, or a grid with a leading axis to vmap over)."""
    rebound = lambda fn: None if fn is None else jax.tree_util.Partial(fn.func, hyper)  # noqa: E731
    return agent.replace(
        init=rebound(agent.init),
        update=rebound(agent.update),
        sample_logits=rebound(agent.sample_logits),
        member_logits=rebound(agent.member_logits),
        fit_data=rebound(agent.fit_data),
        diagnose=rebound(agent.diagnose),
    )


def adam(learning_rate: jax.Array) -> optax.GradientTransformation:
    """Adam with a traced learning rate: built inside the traced function from the
    hyperparameter leaf, so the step size is data, not a compiled-in constant.
    Its state does not depend on the learning rate, so ``init`` may pass any value."""
    return optax.adam(learning_rate)


def sgd_step(
    loss_fn: Callable[..., jax.Array],
    params: Any,
    opt_state: Any,
    learning_rate: jax.Array,
    *loss_args: Any,
) -> tuple[Any, Any]:
    """One optimiser step on ``loss_fn(params, *loss_args)``: (params, opt_state).

    The one gradient -> Adam -> apply step that every trained family uses.
    """
    grads = jax.grad(loss_fn)(params, *loss_args)
    updates, opt_state = adam(learning_rate).update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


def hyper_l2_weight(
    hyper: Any, num_seen: jax.Array, *, input_dim: int, mode: str, num_members: int = 1
) -> jax.Array:
    """``regularization.decayed_weight`` of a family's ``hyper.l2`` at its
    ``hyper.temperature``: the one decayed L2 weight of every family that has an
    ``l2`` hyperparameter. Returns a [] f32."""
    return decayed_weight(
        hyper.l2,
        num_seen,
        input_dim=input_dim,
        temperature=hyper.temperature,
        mode=mode,
        num_members=num_members,
    )
