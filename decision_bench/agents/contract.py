"""The agent contract, checked once where an agent enters a run.

An agent built by a factory (a registered family, a user's agent file, a
``make_agent`` function) is traced once with ``jax.eval_shape`` before any fit or
bandit step: no compilation and no computation, milliseconds. Without it a wrong
agent is either scored (logits for 3 classes on a 2-class problem broadcast into a
plausible d_KL) or fails deep inside a jitted fit with a long traceback that names
neither the agent nor its file. The checks:

- ``num_steps`` is an integer >= 0 (a negative count used to fit with 0 steps);
- ``init(key)`` returns a pytree of arrays (a str or None leaf is refused);
- ``update(key, state, batch)`` returns a state of the same structure, shapes and
  dtypes (a changed state would recompile every step, or fail in ``lax.scan``);
- ``sample_logits(key, state, x[n, d])`` returns floating logits [n, num_classes],
  and ``member_logits(state, x)``, when given, [M, n, num_classes].

Every failure is one ValueError line that starts with ``who`` (the agent's name and,
for a user's agent, its file) and says what was returned and what is expected.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from decision_bench._src.memory import check_fits
from decision_bench.agents.base import Agent, Batch
from decision_bench.specs import ProblemSpec

# Inputs of the traced dry run: sizes that cannot be mistaken for each other or for
# num_classes, so a transposed or broadcast output is seen.
_BATCH_ROWS = 7
_NUM_INPUTS = 5


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def _shape_text(value: Any) -> str:
    if isinstance(value, jax.ShapeDtypeStruct):
        return f"{list(value.shape)} {value.dtype}"
    return type(value).__name__


def _traced(who: str, call: str, fn: Any, *args: Any) -> Any:
    try:
        return jax.eval_shape(fn, *args)
    except Exception as error:  # noqa: BLE001 - the agent's code: any error, one line naming the agent
        hint = ""
        if isinstance(error, (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError)):
            hint = (
                " (the function must be traceable by JAX: numpy, torch or Python control flow on "
                "array values fails; or make it a host agent: "
                "docs/custom_agent.md#host-agents-numpy-pytorch-scikit-learn)"
            )
        raise ValueError(f"{who}: {call} fails when traced: {_first_line(error)}{hint}") from None


def _leaf_problems(tree: Any) -> list[str]:
    problems = []
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree, is_leaf=lambda x: x is None):
        if not isinstance(leaf, jax.ShapeDtypeStruct):
            problems.append(f"{jax.tree_util.keystr(path) or 'the state'} is a {type(leaf).__name__}")
    return problems


def check_agent_contract(agent: Any, spec: ProblemSpec, who: str, label_dtype: Any = jnp.int32) -> Agent:
    """Returns ``agent`` when it keeps the agent contract (module docstring) for problems
    of ``spec``; raises ValueError, one line starting with ``who``, otherwise.
    label_dtype: the dtype of ``Batch.y`` (float32 for a bandit's real-valued rewards)."""
    if not isinstance(agent, Agent):
        raise ValueError(f"{who}: the factory returned {type(agent).__name__}, not a decision_bench.agents.Agent")
    steps = agent.num_steps
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"{who}: num_steps must be an integer >= 0, got {steps!r}")
    key = jax.random.key(0)
    state = _traced(who, "init(key)", agent.init, key)
    bad = _leaf_problems(state)
    if bad:
        raise ValueError(f"{who}: init(key) must return a pytree of arrays, but {bad[0]}")
    rows = 1 if agent.update_mode == "online" else _BATCH_ROWS
    batch = Batch(
        x=jax.ShapeDtypeStruct((rows, spec.input_dim), jnp.float32),
        y=jax.ShapeDtypeStruct((rows,), label_dtype),
        num_seen=jax.ShapeDtypeStruct((), jnp.float32),
        index=jax.ShapeDtypeStruct((rows,), jnp.int32),
    )
    updated = _traced(who, "update(key, state, batch)", agent.update, key, state, batch)
    before, after = jax.tree.structure(state), jax.tree.structure(updated)
    if before != after:
        raise ValueError(f"{who}: update(key, state, batch) must return a state of the same structure as init's; "
                         f"got {after}, expected {before}")
    for (path, old), new in zip(jax.tree_util.tree_leaves_with_path(state), jax.tree.leaves(updated)):
        if isinstance(new, jax.ShapeDtypeStruct) and (old.shape, old.dtype) != (new.shape, new.dtype):
            raise ValueError(f"{who}: update(key, state, batch) changed state leaf {jax.tree_util.keystr(path)} "
                             f"from {_shape_text(old)} to {_shape_text(new)}")
    x = jax.ShapeDtypeStruct((_NUM_INPUTS, spec.input_dim), jnp.float32)
    want = f"floating logits [n, num_classes] = [{_NUM_INPUTS}, {spec.num_classes}]"
    logits = _traced(who, "sample_logits(key, state, x)", agent.sample_logits, key, state, x)
    if not (isinstance(logits, jax.ShapeDtypeStruct) and tuple(logits.shape) == (_NUM_INPUTS, spec.num_classes)
            and jnp.issubdtype(logits.dtype, jnp.floating)):
        raise ValueError(f"{who}: sample_logits(key, state, x) returned {_shape_text(logits)} for x of shape "
                         f"[{_NUM_INPUTS}, {spec.input_dim}]; expected {want}")
    if agent.member_logits is not None:
        members = _traced(who, "member_logits(state, x)", agent.member_logits, state, x)
        if not (isinstance(members, jax.ShapeDtypeStruct) and len(members.shape) == 3
                and tuple(members.shape[1:]) == (_NUM_INPUTS, spec.num_classes) and members.shape[0] >= 1
                and jnp.issubdtype(members.dtype, jnp.floating)):
            raise ValueError(f"{who}: member_logits(state, x) returned {_shape_text(members)} for x of shape "
                             f"[{_NUM_INPUTS}, {spec.input_dim}]; expected floating logits "
                             f"[M, n, num_classes] = [M, {_NUM_INPUTS}, {spec.num_classes}]")
    return agent


def state_bytes(agent: Agent) -> int:
    """Bytes of one seed's agent state, from its traced shapes (nothing is allocated)."""
    state = jax.eval_shape(agent.init, jax.random.key(0))
    return sum(int(np.prod(leaf.shape)) * leaf.dtype.itemsize for leaf in jax.tree.leaves(state))


def check_state_fits(agent: Agent, num_seeds: int, who: str, memory: int | None = None) -> None:
    """Refuses, before any work, a run whose agent states alone (``num_seeds`` copies,
    run together) exceed the machine's memory: a huge ``num_ensemble`` (--set) ended in
    an out-of-memory error after its first seconds. A lower bound (optimiser state and
    activations come on top), so a refused run could never have fit."""
    check_fits(f"{who} with {num_seeds} seed(s)",
               {"seeds x the agent's state (its parameters: num_ensemble, hidden sizes, ...)":
                num_seeds * state_bytes(agent)}, memory)
