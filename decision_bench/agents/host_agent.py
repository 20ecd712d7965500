"""Host agents: an agent in the Neural Testbed's own signature, run through host callbacks.

A researcher's agent written in any framework (NumPy, PyTorch, scikit-learn) in
neural_testbed's signature::

    def agent(data, spec) -> sampler          # data.x [T, d] f32, data.y [T] i64 (NumPy)
    def sampler(x, seed) -> logits            # x [n, d] NumPy, seed an int -> [n, C]

(one ``sampler`` call is ONE draw of the epistemic index applied to all n inputs)
becomes an ordinary :class:`~decision_bench.agents.Agent` record with
:func:`host_agent`, so the testbed, the leaderboard, reproduce and the bandit run it
unchanged. An agent file whose ``make_agent(spec, **options)`` returns such a plain
callable is wrapped automatically (``experiments/agent_files.py``). If ``agent``
also takes a ``seed`` parameter it gets an int drawn from the fit's key, so a
bootstrap or a random initialisation is a function of the run's keys.

Design:

- **State** (:class:`HostAgentState`): ``handle`` ([] i32, -1 before the first
  fit) names a fitted sampler in the adapter's table; ``fit_seed`` ([] u32) the seed
  it was fitted with; ``fitted`` ([] i32) the observations it was fitted on; and a
  store of the observed rows (``x [R, d]``, ``y [R]``, ``when [R]``: the 1-based
  observation number of the row, 0 for an empty row), R = ``spec.num_train`` (the
  replay capacity in the bandit).
- **The table** belongs to the adapter instance (:class:`HostAgent`), not the
  module: ``{handle: sampler}``, handles counted up from 0. ``fit_data`` calls
  back once per fit with the first ``num_train`` rows (``jax.pure_callback``,
  ``vmap_method="sequential"``: vmapped seeds each call it, each fitting its own
  sampler); ``sample_logits(key, state, x)`` calls back with the handle, x and a
  seed of 32 bits of the key (``jax.random.bits``), and returns float32 logits
  [n, C]. The same key gives the same seed, so the same draw.
- **Memory.** A table holds at most ``max_samplers`` samplers (default 1024); the
  oldest is dropped first, and sampling a dropped handle raises an error naming
  the setting (the testbed needs one live sampler per seed of the setting being
  evaluated, the bandit one per seed). A bandit refit releases the sampler it
  replaces. The testbed builds one adapter per (agent, setting), and the adapter
  goes with its Agent record (JAX's compilation cache may keep a few recent ones
  alive, each bounded by ``max_samplers``).
- **Bandit** (``update_mode="online"``): ``update`` stores each observation in the
  state's rows and calls back; the host refits from scratch on every row stored
  once ``refit_every`` (K, default 1: every step) observations have come since the
  last fit, and otherwise does nothing (the decision is made on the host, so a
  vmapped loop never runs a refit that is not due). Before the first fit the
  sampler is uniform (zero logits). A state whose handle is not in the table (a
  checkpoint resumed in a new process) is refitted, in the bandit, on the rows it
  was fitted on (those still stored) with its ``fit_seed``, before it samples.
- **Cost.** Every draw is a host call: the testbed's ``num_models`` draws per
  design per seed run one after the other in Python, as in neural_testbed.
  ``--estimate`` cannot measure such an agent and says so. Its seeds run on one
  device (``_src/devices.py``, ``max_devices``): split over several, XLA gathers
  them to the device running the callback and the others' collectives wait on the
  user's code, which XLA:CPU aborts after 40 s.

- **Errors** raised by the agent's own code (its fit or its sampler), a sampler's
  logits of the wrong shape and a dropped sampler are a :class:`HostAgentError` of
  one line naming the agent, its file and line; JAX carries it out of the callback
  in its runtime error, and the command line prints that line alone.

The agent has no ``member_logits`` (its index set is unknown), so the testbed
samples ``num_models`` draws, and ``num_steps=0``.
"""

from __future__ import annotations

import collections
import inspect
import logging
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from decision_bench._src.validation import check_int, user_code_error
from decision_bench.agents.base import Agent, Batch
from decision_bench.specs import ProblemSpec

DEFAULT_MAX_SAMPLERS = 1024
NO_SAMPLER = -1
# Starts the one line of an error raised by a host agent's own code inside a callback;
# JAX wraps it in its runtime error, and the command line prints that line alone.
ERROR_MARKER = "host agent failed: "


class HostAgentError(RuntimeError):
    """An exception raised by a host agent's code (its fit or its sampler), as one line."""


class _QuietHostErrors(logging.Filter):
    """Drops JAX's logged traceback of a HostAgentError ("jax.pure_callback failed"):
    the error reaches the caller anyway, and the command line prints its one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], HostAgentError))


def _quiet_jax_callback_log() -> None:
    logger = logging.getLogger("jax._src.callback")
    if not any(isinstance(f, _QuietHostErrors) for f in logger.filters):
        logger.addFilter(_QuietHostErrors())


def host_error_line(error: BaseException) -> str | None:
    """The one line of a HostAgentError inside ``error``'s text (JAX's runtime error
    that carries it out of a callback), or None when there is none."""
    text = str(error)
    start = text.find(ERROR_MARKER)
    if start < 0:
        return None
    return text[start + len(ERROR_MARKER):].splitlines()[0]


class HostData(NamedTuple):
    """What a host agent is fitted on: x [T, d] float32 and y [T] int64, NumPy arrays."""

    x: np.ndarray
    y: np.ndarray


class HostAgentState(NamedTuple):
    handle: jax.Array  # [] i32: the sampler's key in the adapter's table, -1 for none yet
    fit_seed: jax.Array  # [] u32: the seed the sampler was fitted with
    fitted: jax.Array  # [] i32: observations the sampler was fitted on
    x: jax.Array  # [R, d] f32: rows observed
    y: jax.Array  # [R] i32
    when: jax.Array  # [R] i32: 1-based observation number of each row, 0 if empty


def _takes_seed(fn: Callable) -> bool:
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "seed" in parameters


class HostAgent:
    """The adapter: owns the table of fitted samplers and the Agent record's functions.

    fn: ``agent(data, spec) -> sampler`` (module docstring); spec: the problem's
    ProblemSpec; refit_every: in the bandit, refit after this many new observations;
    max_samplers: the most samplers kept (the oldest are dropped first).
    """

    def __init__(self, fn: Callable, spec: ProblemSpec, *, refit_every: int = 1,
                 max_samplers: int = DEFAULT_MAX_SAMPLERS, name: str = "host_agent"):
        if not callable(fn):
            raise ValueError(f"a host agent must be callable agent(data, spec) -> sampler, got {type(fn).__name__}")
        self.fn = fn
        self.spec = spec
        self.refit_every = check_int("refit_every", refit_every, 1)
        self.max_samplers = check_int("max_samplers", max_samplers, 1)
        self.name = name
        self.samplers: collections.OrderedDict[int, Callable] = collections.OrderedDict()
        self.next_handle = 0
        self.fits = 0  # calls of fn, for tests and reports
        self._takes_seed = _takes_seed(fn)
        _quiet_jax_callback_log()
        # The bandit refits a missing sampler from its rows; the testbed never needs to.
        self._refit_missing = spec.regularization != "testbed"

    # ------------------------------------------------------------ host side

    def _user_call(self, doing: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """fn(*args, **kwargs), its exception a HostAgentError of one line naming the
        agent, the file and line of the user's code, and the error."""
        try:
            return fn(*args, **kwargs)
        except Exception as error:  # noqa: BLE001 - the user's code: any error, one line
            try:
                path = inspect.getsourcefile(self.fn)
            except TypeError:
                path = None
            where = user_code_error(path, error, doing) if path else f"({doing}): {type(error).__name__}: {error}"
            raise HostAgentError(f"{ERROR_MARKER}host agent {self.name!r} {where}".splitlines()[0]) from None

    def _fit(self, x: np.ndarray, y: np.ndarray, seed: int) -> Callable:
        data = HostData(x=np.array(x, np.float32), y=np.array(y, np.int64))
        kwargs = {"seed": int(seed)} if self._takes_seed else {}
        sampler = self._user_call("fitting: agent(data, spec)", self.fn, data, self.spec, **kwargs)
        if not callable(sampler):
            raise HostAgentError(
                f"{ERROR_MARKER}host agent {self.name!r}: agent(data, spec) must return a sampler(x, seed) -> logits, "
                f"got {type(sampler).__name__}"
            )
        self.fits += 1
        return sampler

    def _store(self, sampler: Callable, handle: int | None = None) -> int:
        if handle is None:
            handle = self.next_handle
        self.next_handle = max(self.next_handle, handle + 1)
        self.samplers[handle] = sampler
        while len(self.samplers) > self.max_samplers:
            self.samplers.popitem(last=False)
        return handle

    def release(self, handle: int) -> None:
        """Drops the sampler ``handle`` from the table (nothing if it is not there)."""
        self.samplers.pop(int(handle), None)

    def clear(self) -> None:
        """Drops every sampler."""
        self.samplers.clear()

    def _fit_rows_callback(self, x, y, num_train, seed):
        n = int(num_train)
        sampler = self._fit(np.asarray(x)[:n], np.asarray(y)[:n], int(seed))
        return np.int32(self._store(sampler))

    @staticmethod
    def _rows_upto(x, y, when, fitted):
        when = np.asarray(when)
        rows = (when > 0) & (when <= int(fitted))
        order = np.argsort(when[rows], kind="stable")  # observation order
        return np.asarray(x)[rows][order], np.asarray(y)[rows][order]

    def _update_callback(self, handle, fit_seed, fitted, x, y, when, num_seen, seed):
        handle, num_seen = int(handle), int(num_seen)
        if handle != NO_SAMPLER and num_seen - int(fitted) < self.refit_every:
            return np.int32(handle), np.uint32(fit_seed), np.int32(fitted)
        rows_x, rows_y = self._rows_upto(x, y, when, num_seen)
        sampler = self._fit(rows_x, rows_y, int(seed))
        if handle != NO_SAMPLER:
            self.release(handle)
        return np.int32(self._store(sampler)), np.uint32(seed), np.int32(num_seen)

    def _sampler(self, handle: int, refit: tuple | None) -> Callable | None:
        if handle == NO_SAMPLER:
            return None
        sampler = self.samplers.get(handle)
        if sampler is not None:
            return sampler
        if refit is None:
            raise HostAgentError(
                f"{ERROR_MARKER}host agent {self.name!r}: sampler {handle} is no longer kept (the adapter keeps at most "
                f"max_samplers={self.max_samplers}; raise it with host_agent(..., max_samplers=...))"
            )
        fit_seed, fitted, x, y, when = refit  # a state from another process (a resumed checkpoint)
        sampler = self._fit(*self._rows_upto(x, y, when, fitted), int(fit_seed))
        self._store(sampler, handle)
        return sampler

    def _sample_callback(self, handle, x, seed, *refit):
        sampler = self._sampler(int(handle), refit or None)
        shape = (np.shape(x)[0], self.spec.num_classes)
        if sampler is None:
            return np.zeros(shape, np.float32)
        logits = np.asarray(
            self._user_call("sampling: sampler(x, seed)", sampler, np.asarray(x, np.float32), int(seed)),
            dtype=np.float32,
        )
        if logits.shape != shape:
            raise HostAgentError(
                f"{ERROR_MARKER}host agent {self.name!r}: sampler(x, seed) returned logits of shape {list(logits.shape)} "
                f"for x of shape {list(np.shape(x))}; expected [n, num_classes] = {list(shape)}"
            )
        # NaN (or +inf) is no probability: the bandit's choice among NaN logits is action 0
        # and its seed is never marked failed (the state is a handle); -inf is probability 0.
        bad = np.isnan(logits) | np.isposinf(logits)
        if bad.any():
            raise HostAgentError(
                f"{ERROR_MARKER}host agent {self.name!r}: sampler(x, seed) returned NaN or +inf logits "
                f"({int(bad.sum())} of {bad.size} entries); logits must be numbers (-inf for probability 0)"
            )
        return logits

    # ------------------------------------------------------------ JAX side

    def _scalars(self):
        return (
            jax.ShapeDtypeStruct((), jnp.int32),
            jax.ShapeDtypeStruct((), jnp.uint32),
            jax.ShapeDtypeStruct((), jnp.int32),
        )

    def init(self, key: jax.Array) -> HostAgentState:
        del key
        rows, d = self.spec.num_train, self.spec.input_dim
        return HostAgentState(
            handle=jnp.int32(NO_SAMPLER),
            fit_seed=jnp.uint32(0),
            fitted=jnp.int32(0),
            x=jnp.zeros((rows, d), jnp.float32),
            y=jnp.zeros((rows,), jnp.int32),
            when=jnp.zeros((rows,), jnp.int32),
        )

    def fit_data(self, key: jax.Array, state: HostAgentState, data: Any, num_train: jax.Array) -> HostAgentState:
        """Fits a sampler on the first num_train rows of data (one host call per seed)."""
        seed = jax.random.bits(key, (), jnp.uint32)
        num_train = jnp.asarray(num_train, jnp.int32)
        handle = jax.pure_callback(
            self._fit_rows_callback, jax.ShapeDtypeStruct((), jnp.int32),
            data.x, data.y, num_train, seed, vmap_method="sequential",
        )
        rows = state.x.shape[0]
        position = jnp.arange(data.x.shape[0], dtype=jnp.int32)
        index = jnp.where(position < num_train, position, rows)  # past the end: dropped
        return HostAgentState(
            handle=handle,
            fit_seed=seed,
            fitted=num_train,
            x=state.x.at[index].set(data.x.astype(jnp.float32), mode="drop"),
            y=state.y.at[index].set(data.y.astype(jnp.int32), mode="drop"),
            when=state.when.at[index].set(position + 1, mode="drop"),
        )

    def update(self, key: jax.Array, state: HostAgentState, batch: Batch) -> HostAgentState:
        """Stores the batch's observations (at ``batch.index``, observation number
        ``batch.num_seen``) and refits on the host when ``refit_every`` have come."""
        num_seen = jnp.asarray(batch.num_seen, jnp.int32)
        x = state.x.at[batch.index].set(batch.x.astype(jnp.float32), mode="drop")
        y = state.y.at[batch.index].set(batch.y.astype(jnp.int32), mode="drop")
        when = state.when.at[batch.index].set(num_seen, mode="drop")
        seed = jax.random.bits(key, (), jnp.uint32)
        handle, fit_seed, fitted = jax.pure_callback(
            self._update_callback, self._scalars(),
            state.handle, state.fit_seed, state.fitted, x, y, when, num_seen, seed,
            vmap_method="sequential",
        )
        return HostAgentState(handle=handle, fit_seed=fit_seed, fitted=fitted, x=x, y=y, when=when)

    def sample_logits(self, key: jax.Array, state: HostAgentState, x: jax.Array) -> jax.Array:
        """One draw: the sampler called with x [n, d] and 32 bits of the key as its seed."""
        seed = jax.random.bits(key, (), jnp.uint32)
        refit = (state.fit_seed, state.fitted, state.x, state.y, state.when) if self._refit_missing else ()
        shape = jax.ShapeDtypeStruct((x.shape[0], self.spec.num_classes), jnp.float32)
        return jax.pure_callback(
            self._sample_callback, shape, state.handle, x.astype(jnp.float32), seed, *refit,
            vmap_method="sequential",
        )

    def agent(self) -> Agent:
        return Agent(
            init=self.init,
            update=self.update,
            sample_logits=self.sample_logits,
            member_logits=None,
            num_steps=0,
            name=self.name,
            update_mode="online",
            fit_data=self.fit_data,
        )


def host_agent(fn: Callable, spec: ProblemSpec, *, refit_every: int = 1,
               max_samplers: int = DEFAULT_MAX_SAMPLERS, name: str = "host_agent") -> Agent:
    """The Agent record of a host agent ``fn(data, spec) -> sampler`` (module docstring)."""
    return HostAgent(fn, spec, refit_every=refit_every, max_samplers=max_samplers, name=name).agent()


def adapter_of(agent: Agent) -> HostAgent | None:
    """The HostAgent behind an Agent record, or None for an ordinary (JAX) agent."""
    owner = getattr(getattr(agent.sample_logits, "func", None), "__self__", None)
    return owner if isinstance(owner, HostAgent) else None


def is_host_agent(agent: Any) -> bool:
    return isinstance(agent, Agent) and adapter_of(agent) is not None


__all__ = ["HostAgent", "HostAgentState", "HostData", "host_agent", "adapter_of", "is_host_agent"]
