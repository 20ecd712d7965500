"""The agent core: what every family composes instead of writing it again.

A family module supplies only what is its own: its config (a frozen dataclass),
its network(s) and prior, its index sampler and its loss term(s), and a builder
of its functions for one *static* setting. The core supplies the rest:

- **The hyper.** Config fields declared with :func:`traced` are the family's
  traced hyperparameters: :func:`hyper` turns them (plus the problem's
  temperature) into a NamedTuple of [] f32 leaves, of the class
  :func:`hyper_class` derives from the config class. Every other field is static
  (shapes, modes, loop lengths).
- **Binding.** :func:`make_agent` calls the family's builder with its static
  settings (:func:`cached_functions` makes the same settings give the same
  function objects, so compiled programs are shared) and binds the hyper first
  (:func:`bind`). The Agent is then a pytree whose leaves are the hyper: a second
  ``make`` with other values reuses every compiled program, and a grid of
  values is one vmapped program (:func:`with_hyper`).
- **Checks.** Every bound function checks that its key is a PRNG key, and that
  inputs are [n, input_dim] (and labels [n]) when the input_dim is given, at
  trace time.
- **Training.** The decayed regulariser (:func:`penalty_weight`,
  :func:`l2_penalty`), Adam on the ``learning_rate`` leaf (:func:`init_optimizer`,
  :func:`sgd_step`) and the one-step update of a state with ``params`` and
  ``opt_state`` (:func:`sgd_update`).

Functions bound by :func:`bind` take ``hyper`` first and then follow the Agent's
key-first order (agents/base.py): ``init(hyper, key)``, ``update(hyper, key,
state, batch)``, ``sample_logits(hyper, key, state, x)``, ``member_logits(hyper,
state, x)``, ``fit_data(hyper, key, state, data, num_train)``, ``diagnose(hyper,
state)``.

The regulariser's decay mode is the problem's (``spec.regularization``), not a
config field: :func:`make_agent` passes it to a builder that declares a
``regularization`` argument.

A family in full (a point-estimate MLP; see agents/mlp.py)::

    @dataclasses.dataclass(frozen=True)
    class TinyConfig:
        hidden_sizes: tuple[int, ...] = (50, 50)
        l2: float = traced(1.0)
        learning_rate: float = traced(1e-3)
        num_steps: int = 1000

    @cached_functions
    def _functions(*, hidden_sizes, num_classes, input_dim, regularization):
        net = MLP(hidden_sizes, num_classes)
        def init(hyper, key):
            params = net.init(key, jnp.zeros((1, input_dim)))
            return TrainState(params, init_optimizer(hyper, params))
        def loss(params, hyper, state, batch, key):
            data = cross_entropy(net.apply(params, batch.x), batch.y).mean()
            return data + l2_penalty(hyper, params, batch.num_seen, input_dim=input_dim, mode=regularization)
        def sample_logits(hyper, key, state, x):
            return net.apply(state.params, x)
        return init, sgd_update(loss), sample_logits

    def make_tiny(spec, config):  # the builder gets hidden_sizes and spec.regularization
        return make_agent(_functions, spec, config, name="tiny")
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax

from decision_bench._src import deprecations
from decision_bench.agents._src.checks import check_batch_dim, check_input_dim
from decision_bench.agents._src.losses import cross_entropy, sum_of_squares
from decision_bench.agents.base import Agent, Batch, check_key_argument
from decision_bench.agents.regularization import decayed_weight
from decision_bench.specs import ProblemSpec

# -------------------------------------------------------------------- the hyper

_TRACED = "traced"
_STATIC = "static"


def traced(default: float) -> Any:
    """A config field that is a traced hyperparameter: it travels as a [] f32 leaf
    of the agent's hyper, so another value reuses the compiled programs."""
    return dataclasses.field(default=default, metadata={_TRACED: True})


def static(default: float) -> Any:
    """A real-valued config field that is static all the same: it decides a shape
    or a loop length (so another value compiles another program)."""
    return dataclasses.field(default=default, metadata={_STATIC: True})


def static_fields(config: Any) -> tuple[str, ...]:
    """The names of the real-valued fields a config declares :func:`static`."""
    return tuple(f.name for f in dataclasses.fields(config) if f.metadata.get(_STATIC))


def static_settings(config: Any) -> dict[str, Any]:
    """The config's fields that fix the compiled programs: every field but the
    traced ones and ``num_steps`` (the length of ``fit``'s loop, which ``fit``
    takes as its own static argument). Sequences become tuples, so they hash."""
    traced = set(traced_fields(config))
    return {
        f.name: tuple(value) if isinstance(value, list) else value
        for f in dataclasses.fields(config)
        if f.name not in traced and f.name != "num_steps"
        for value in (getattr(config, f.name),)
    }


def traced_fields(config: Any) -> tuple[str, ...]:
    """The names of the traced hyperparameters of a config (instance or class), in
    field order."""
    return tuple(f.name for f in dataclasses.fields(config) if f.metadata.get(_TRACED))


class L2Hyper(NamedTuple):
    """The traced hyperparameters of a config whose real-valued fields are l2 and
    learning_rate (mlp, ensemble, logistic), and the problem's temperature: [] f32
    leaves. Those families name it ``MLPHyper``, ``EnsembleHyper``, ``LogisticHyper``."""

    l2: jax.Array
    learning_rate: jax.Array
    temperature: jax.Array


@functools.lru_cache(maxsize=None)
def hyper_class(config_class: type) -> type:
    """The NamedTuple of a config class's traced hyperparameters and ``temperature``
    (the problem's beta), each a [] f32, named ``<Family>Hyper``.

    A family declares it in its config's module as a plain NamedTuple (so "go to
    definition" on ``hyper.l2`` lands on code); this returns that class after checking
    that its fields are the config's traced fields and ``temperature``, in that order
    (TypeError naming both otherwise). A config whose module declares none (a user's
    family) gets one built here, placed in the config's module."""
    name = config_class.__name__.removesuffix("Config") + "Hyper"
    expected = (*traced_fields(config_class), "temperature")
    declared = getattr(sys.modules.get(config_class.__module__), name, None)
    if declared is not None:
        if getattr(declared, "_fields", None) != expected:
            raise TypeError(
                f"{config_class.__module__}.{name} must have the fields {expected} (the traced fields "
                f"of {config_class.__name__} and temperature), got {getattr(declared, '_fields', None)}"
            )
        return declared
    cls = NamedTuple(name, [(field, jax.Array) for field in expected])
    cls.__module__ = config_class.__module__
    cls.__doc__ = (
        f"The traced hyperparameters of {config_class.__name__} and the problem's "
        "temperature, [] f32 leaves (agents/core.py)."
    )
    return cls


def as_hyper(cls: type, **values: Any) -> Any:
    """``cls(**values)`` with every value a [] f32 array (a hyperparameter leaf)."""
    return cls(**{name: jnp.asarray(value, jnp.float32) for name, value in values.items()})


def hyper(spec: ProblemSpec, config: Any) -> Any:
    """The hyper of ``config`` on ``spec``: its traced hyperparameters and the
    spec's temperature as [] f32 leaves."""
    values = {name: getattr(config, name) for name in traced_fields(config)}
    return as_hyper(hyper_class(type(config)), **values, temperature=spec.temperature)


# -------------------------------------------------------------------- binding


def cached_functions(builder: Callable[..., tuple]) -> Callable[..., tuple]:
    """A family's builder of its functions, called with static settings by
    keyword only and cached, so the same settings give the same function objects
    (and so the same compiled programs)."""
    cached = functools.lru_cache(maxsize=None)(builder)
    takes_regularization = "regularization" in inspect.signature(builder).parameters

    @functools.wraps(builder)
    def functions(**static: Any) -> tuple:
        return cached(**{k: tuple(v) if isinstance(v, list) else v for k, v in static.items()})

    functions.cache_info = cached.cache_info
    functions.takes_regularization = takes_regularization
    return functions


def make_agent(
    functions: Callable[..., tuple],
    spec: ProblemSpec,
    config: Any,
    *,
    name: str,
    num_steps: int | None = None,
    update_mode: str = "replay",
    **derived: Any,
) -> Agent:
    """The Agent of a family: its ``functions`` (init, update, sample_logits[,
    member_logits[, fit_data[, diagnose]]]; a None is left out) for the static
    setting ``num_classes``, ``input_dim``, every field of :func:`static_settings`,
    ``spec.regularization`` (for a builder that declares ``regularization``) and
    ``derived`` (settings the family derives from the spec or config, e.g. a buffer
    size), with ``hyper(spec, config)`` bound and inputs checked against
    ``spec.input_dim``. num_steps: the default steps of ``fit`` (None:
    ``config.num_steps``)."""
    static = static_settings(config)
    if getattr(functions, "takes_regularization", False):
        static["regularization"] = spec.regularization
    static.update(derived)
    built = functions(num_classes=spec.num_classes, input_dim=spec.input_dim, **static)
    init, update, sample_logits, member_logits, fit_data, diagnose = (*built, *(None,) * (6 - len(built)))
    steps = config.num_steps if num_steps is None else num_steps
    return bind(
        hyper(spec, config),
        init,
        update,
        sample_logits,
        member_logits,
        fit_data=fit_data,
        diagnose=diagnose,
        input_dim=spec.input_dim,
        num_steps=steps,
        name=name,
        update_mode=update_mode,
    )


def bind(
    hyper: NamedTuple,
    init: Callable,
    update: Callable,
    sample_logits: Callable,
    member_logits: Callable | None = None,
    *,
    fit_data: Callable | None = None,
    diagnose: Callable | None = None,
    input_dim: int | None = None,
    **record: Any,
) -> Agent:
    """The Agent whose functions are the given ones with ``hyper`` bound first.

    fit_data, diagnose: the Agent's optional full-batch fit and diagnostic
    (agents/base.py), bound as they are. input_dim: when given, inputs (and labels) are checked to be [n, input_dim]
    (and [n]) while tracing. record: the static fields of the Agent (num_steps,
    name, update_mode).
    """
    where = record.get("name", "agent")
    bound = lambda fn: None if fn is None else jax.tree_util.Partial(fn, hyper)  # noqa: E731
    return Agent(
        bound(_checked(init, "init", None, where)),
        bound(_checked(update, "update", input_dim, where)),
        bound(_checked(sample_logits, "sample_logits", input_dim, where)),
        bound(None if member_logits is None else _checked(member_logits, "member_logits", input_dim, where)),
        fit_data=bound(fit_data),
        diagnose=bound(diagnose),
        **record,
    )


@functools.lru_cache(maxsize=None)
def _checked(fn: Callable, field: str, input_dim: int | None, where: str) -> Callable:
    """``fn`` with its arguments checked at trace time: the key is a PRNG key
    (base.check_key_argument: a state given first, in the pre-0.2 order, gets one
    line instead of an AttributeError deep inside), and inputs are [n, input_dim].
    Cached, so one family function always gets the same wrapper and compiled
    programs are still shared."""

    if field == "member_logits":
        if input_dim is None:
            return fn

        @functools.wraps(fn)
        def checked_members(hyper, state, x):
            check_input_dim(x, input_dim, f"{where} member_logits")
            return fn(hyper, state, x)

        return checked_members

    @functools.wraps(fn)
    def checked(hyper, key, *args, **kwargs):
        check_key_argument(field, key)
        if input_dim is not None and field == "update":
            batch = args[1]
            check_batch_dim(batch.x, batch.y, input_dim, f"{where} update")
        elif input_dim is not None and field == "sample_logits":
            check_input_dim(args[1], input_dim, f"{where} sample_logits")
        return fn(hyper, key, *args, **kwargs)

    return checked


def hyper_of(agent: Agent) -> Any:
    """The hyper bound to an agent made by :func:`bind` (None otherwise)."""
    args = agent.init.args
    return args[0] if args else None


def with_hyper(agent: Agent, hyper: Any) -> Agent:
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


# The names hyper_of and with_hyper had before the vocabulary was fixed, until 0.4.
__getattr__ = deprecations.module_getattr(__name__)


# -------------------------------------------------------------------- training


class TrainState(NamedTuple):
    """The state of a family that is only trained parameters."""

    params: Any  # the family's network parameters
    opt_state: Any  # optax.adam state of params


def penalty_weight(hyper: Any, num_seen: jax.Array, *, mode: str, base: str = "l2", **weight: Any) -> jax.Array:
    """``regularization.decayed_weight`` of the hyper leaf named ``base`` (l2,
    length_scale, kl_scale, ...) at the hyper's temperature in decay ``mode``; ``weight``
    holds its other keywords (input_dim, num_members). Returns a [] f32."""
    return decayed_weight(getattr(hyper, base), num_seen, temperature=hyper.temperature, mode=mode, **weight)


def l2_penalty(hyper: Any, params: Any, num_seen: jax.Array, **weight: Any) -> jax.Array:
    """``penalty_weight(hyper, num_seen, **weight) * sum(params**2)``. Returns []."""
    return penalty_weight(hyper, num_seen, **weight) * sum_of_squares(params)


def config_weight(
    weight: Callable[..., jax.Array], spec: ProblemSpec, config: Any, num_seen: jax.Array, **static: Any
) -> jax.Array:
    """A family's weight function ``weight(hyper, num_seen, input_dim=, mode=, **static)``
    evaluated for a spec and config (for callers that hold no hyper). Returns []."""
    return weight(
        hyper(spec, config), num_seen, input_dim=spec.input_dim, mode=spec.regularization, **static
    )


def init_optimizer(hyper: Any, params: Any) -> Any:
    """The Adam state of ``params``. Adam's state holds no learning rate, so the
    hyper's ``learning_rate`` leaf only enters at :func:`sgd_step`."""
    return optax.adam(hyper.learning_rate).init(params)


def sgd_step(
    loss_fn: Callable[..., jax.Array],
    params: Any,
    opt_state: Any,
    learning_rate: jax.Array,
    *loss_args: Any,
) -> tuple[Any, Any]:
    """One Adam step on ``loss_fn(params, *loss_args)``: (params, opt_state).

    learning_rate may be a traced leaf: Adam is built here, inside the traced
    update, so the step size is data, not a compiled-in constant.
    """
    grads = jax.grad(loss_fn)(params, *loss_args)
    updates, opt_state = optax.adam(learning_rate).update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


def point_estimate(net: Any, *, input_dim: int, regularization: str) -> tuple[Callable, ...]:
    """(init, update, sample_logits, member_logits) of one flax network ``net``
    trained by the batch's mean cross-entropy plus :func:`l2_penalty` (mlp,
    logistic). It has no epistemic index: every draw is the same network, and its
    members are that one network ([1, n, C])."""

    def init(hyper: Any, key: jax.Array) -> TrainState:
        params = net.init(key, jnp.zeros((1, input_dim), jnp.float32))
        return TrainState(params=params, opt_state=init_optimizer(hyper, params))

    def loss(params: Any, hyper: Any, state: TrainState, batch: Batch, key: jax.Array) -> jax.Array:
        del state, key  # a deterministic loss of the params alone
        data_loss = cross_entropy(net.apply(params, batch.x), batch.y).mean()
        return data_loss + l2_penalty(
            hyper, params, batch.num_seen, input_dim=input_dim, mode=regularization
        )

    def sample_logits(hyper: Any, key: jax.Array, state: TrainState, x: jax.Array) -> jax.Array:
        """x [n, d] -> [n, C]; the key is unused: a point estimate has one sample."""
        del hyper, key
        return net.apply(state.params, x)

    def member_logits(hyper: Any, state: TrainState, x: jax.Array) -> jax.Array:
        """x [n, d] -> [1, n, C]: a point estimate is an ensemble of one."""
        del hyper
        return net.apply(state.params, x)[None]

    return init, sgd_update(loss), sample_logits, member_logits


def sgd_update(loss_fn: Callable[..., jax.Array]) -> Callable:
    """``update(hyper, key, state, batch)``: one :func:`sgd_step` on
    ``loss_fn(params, hyper, state, batch, key)`` of a state with ``params`` and
    ``opt_state``; its other fields (fixed priors, bootstrap weights) are kept."""

    def update(hyper: Any, key: jax.Array, state: Any, batch: Batch) -> Any:
        params, opt_state = sgd_step(
            loss_fn, state.params, state.opt_state, hyper.learning_rate, hyper, state, batch, key
        )
        return state._replace(params=params, opt_state=opt_state)

    return update
