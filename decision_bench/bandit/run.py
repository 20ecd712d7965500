"""``run_bandit``: the whole bandit experiment compiled, in chunks, with progress and
checkpoints; rows of cumulative regret per (seed, logged step)."""

from __future__ import annotations

import hashlib
import inspect
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from decision_bench._src import deprecations
from decision_bench._src.devices import pad_seeds, padded_seed_count, shard_seeds
from decision_bench._src.files import UNFINISHED_RUN
from decision_bench._src.fingerprints import config_text, text_fingerprint
from decision_bench._src.validation import check_int
from decision_bench._src.versions import result_versions
from decision_bench.agents.contract import check_state_fits
from decision_bench.agents.host_agent import is_host_agent
from decision_bench.bandit.checkpoints import (
    PREVIOUS_STATE_FILE,
    STATE_FILE,
    load_checkpoint,
    save_checkpoint,
)
from decision_bench.bandit.loop import (
    COLUMNS,
    DEFAULT_REGULARIZATION,
    BanditLoop,
    BanditLoopConfig,
    check_seeds,
    init_carries,
    make_loop,
    registered_overrides,
    run_chunk,
)


def resolved_agent_text(agent: str, learning_rate: float, agent_kwargs: dict | None, regularization: str) -> str:
    """A registered agent's definition in the bandit: the config it is built with
    (the bandit's learning rate in place of its own default where it declares one,
    then agent_kwargs) and the decay mode, as text (``_src.fingerprints.config_text``)."""
    from decision_bench.agents import registry

    resolved = registry.config(agent, **registered_overrides(agent, learning_rate, agent_kwargs))
    return config_text(resolved, regularization)


def default_agent_fingerprint(
    agent: Any, learning_rate: float, agent_kwargs: dict | None, regularization: str = DEFAULT_REGULARIZATION
) -> str | None:
    """What defines the agent beyond its name, as a short hash: a registered agent's
    resolved config and decay mode (so a changed default is seen); the SHA-256 of the file
    defining a user's ``make_agent`` function; None for an ``Agent`` record (its
    functions cannot be hashed: pass ``agent_fingerprint`` to ``run_bandit``)."""
    if isinstance(agent, str):
        return text_fingerprint(resolved_agent_text(agent, learning_rate, agent_kwargs, regularization))
    try:
        source = inspect.getsourcefile(agent) if callable(agent) else None
    except TypeError:  # a builtin or a callable object without a source file
        source = None
    if source is None or not os.path.isfile(source):
        return None
    with open(source, "rb") as handle:
        return "file:" + hashlib.sha256(handle.read()).hexdigest()


def _log_steps(num_steps: int, log_every: int) -> np.ndarray:
    """Steps (1-based) with a row: every log_every-th step and the last one."""
    steps = set(range(log_every, num_steps + 1, log_every)) | {num_steps}
    return np.array(sorted(steps), np.int64)


def run_bandit(
    agent: Any,
    env: Any,
    num_steps: int,
    seeds: int | Sequence[int],
    config: BanditLoopConfig | None = None,
    *,
    log_every: int | None = None,
    chunk_size: int = 1000,
    out_dir: str | os.PathLike | None = None,
    resume: bool | None = None,
    progress: bool = True,
    env_kwargs: dict | None = None,
    agent_kwargs: dict | None = None,
    callback: Callable[[int], None] | None = None,
    agent_fingerprint: str | None = None,
    on_rows: Callable[[pd.DataFrame], None] | None = None,
    **deprecated_settings: Any,
) -> pd.DataFrame:
    """Runs a bandit experiment for every seed at once; returns one row per (seed, log step).

    agent: a registered name (built with the config's ``learning_rate`` in place of
      its own default where its config declares one, e.g. bbb's 3e-3; ``agent_kwargs``
      override more hyperparameters, ``learning_rate`` among them), a user's
      ``make_agent(spec) -> Agent`` or an ``Agent`` record used as given.
    config: the loop's settings, one ``BanditLoopConfig`` (None: its defaults):
      policy ("thompson", "greedy" or "uniform"), update_mode, steps_per_obs,
      batch_size, replay_capacity (see the module docstring), greedy_samples,
      learning_rate and regularization (how every agent's L2 (or KL) weight decays
      with t: "sequential_linear_beta", the default ``DEFAULT_REGULARIZATION``, or
      "sequential"). Those settings given as keywords (``policy="uniform"``, the
      spelling before 0.3) still work, with a DeprecationWarning, until 0.4
      (``_src/deprecations.py``).
    env: ``"NeuralBandit-v0"``, ``"ContextualNeuralBandit-v0"``,
      ``"BernoulliBandit-v0"``, ``"ClassificationBandit-v0"``, the Showdown's
      Gaussian-reward ``"WheelBandit-v0"``, ``"LinearBandit-v0"``,
      ``"SparseLinearBandit-v0"`` (``decision_bench/`` prefix optional; keyword
      arguments in ``env_kwargs``) or a functional bandit core (e.g. a
      ``TableBandit``). Gaussian-reward bandits take only agents of real-valued
      rewards (``linear_gaussian``) or the uniform policy (docs/showdown.md).
    num_steps: steps per seed. seeds: a count n (seeds 0..n-1) or a list of
      seeds; each seed draws its own environment and agent initialisation.
    log_every: a row every log_every steps and at the last step (default:
      num_steps // 100).
    chunk_size: steps per compiled call; the carry is saved after each chunk to
      ``out_dir`` (if given). resume: None (default) continues a run saved in
      ``out_dir`` with the same config, if there is one, and returns the same
      rows as an uninterrupted run; a saved run of another config is refused
      with the differing arguments named, never overwritten. True is the same
      but needs ``out_dir``; False discards the saved run and starts over. A
      damaged checkpoint is reported, set aside and replaced by the previous
      one (or step 0). A checkpoint made by other code (another decision-bench
      or jax version, or another agent fingerprint) is stale: one warning names
      the cause and the run starts over from step 0. callback(t) is called
      after each chunk.
    on_rows(rows): called with the rows logged so far, after each chunk and
      once before the first when a saved run is resumed (so a results file can
      grow with the run). While steps remain, a seed's rows have final_regret
      NaN and error "unfinished: t of num_steps steps" (``_src.files.UNFINISHED_RUN``);
      the last call gets the rows this function returns.
    agent_fingerprint: what identifies the agent's code in checkpoints; default:
      ``default_agent_fingerprint`` (a registered agent's resolved config, the file
      of a ``make_agent`` function).

    Columns: agent, policy, env, input_dim, num_actions, temperature, seed, step,
    cumulative_regret, final_regret, wall_seconds (the whole vmapped run,
    compilation included, summed over resumed sessions; the same for every
    seed), error ("" or why that seed stopped; its later regrets are NaN).
    """
    from tqdm.auto import tqdm

    settings = deprecations.config_from_keywords("run_bandit", BanditLoopConfig, config, deprecated_settings)
    settings = BanditLoopConfig() if settings is None else settings
    if not isinstance(settings, BanditLoopConfig):
        raise TypeError(
            f"run_bandit's config (its fifth argument) must be a BanditLoopConfig, got "
            f"{type(settings).__name__}; the loop's settings are one config, e.g. "
            "run_bandit(agent, env, num_steps, seeds, BanditLoopConfig(policy='uniform'))"
        )

    num_steps = check_int("num_steps", num_steps, 1)
    seed_list = check_seeds(seeds)
    log_every = max(1, num_steps // 100) if log_every is None else check_int("log_every", log_every, 1)
    chunk_size = check_int("chunk_size", chunk_size, 1)
    if resume and out_dir is None:
        raise ValueError("resume=True needs out_dir, where the run was saved")
    learning_rate, regularization = settings.learning_rate, settings.regularization
    loop, env_id = make_loop(agent, env, settings, env_kwargs=env_kwargs, agent_kwargs=agent_kwargs)
    check_state_fits(loop.agent, len(seed_list), f"agent {loop.agent.name!r}")
    env = loop.env
    log_steps = _log_steps(num_steps, log_every)
    if agent_fingerprint is None:
        agent_fingerprint = default_agent_fingerprint(agent, learning_rate, agent_kwargs, regularization)
    config = {
        "agent": loop.agent.name,
        "agent_kwargs": {k: repr(v) for k, v in sorted((agent_kwargs or {}).items())},
        "env": env_id,
        "env_config": repr(env),
        "num_steps": num_steps,
        "seeds": seed_list,
        "policy": settings.policy,
        "update_mode": loop.update_mode,
        "steps_per_obs": loop.steps_per_obs,
        "batch_size": loop.batch_size,
        "replay_capacity": loop.replay_capacity,
        "learning_rate": float(learning_rate),
        "regularization": regularization,
        "log_every": log_every,
        # Provenance (checkpoints.PROVENANCE_KEYS): when these differ the saved
        # state is stale and recomputed rather than refused.
        "jax_version": jax.__version__,
        "decision_bench_version": dict(result_versions())["decision-bench"],
        "library_versions": {k: v for k, v in result_versions() if k not in ("decision-bench", "jax")},
        "agent_fingerprint": agent_fingerprint,
        # What the fingerprint hashes, readable: the learning rate the agent really got.
        "agent_config": resolved_agent_text(agent, learning_rate, agent_kwargs, regularization)
        if isinstance(agent, str) else None,
    }

    start = time.perf_counter()
    seed_array = jnp.asarray(seed_list, jnp.int32)
    carry, params = init_carries(loop, seed_array)
    t, previous_wall, logged = 0, 0.0, np.zeros((len(seed_list), 0), np.float64)
    out_path = None if out_dir is None else Path(out_dir)
    if out_path is not None:
        out_path.mkdir(parents=True, exist_ok=True)
        if resume is False:
            # The caller asked to start over: only now is saved progress removed.
            for name in (STATE_FILE, PREVIOUS_STATE_FILE):
                (out_path / name).unlink(missing_ok=True)
        else:
            saved = load_checkpoint(out_path, config, carry)
            if saved is not None:
                carry, t, previous_wall, logged = saved
    # Seeds are independent: spread them over the devices (one per core where the
    # process asked for that, _src/devices.py); a seed's numbers do not change. The
    # seeds are padded to a multiple of the devices with copies of the last one (5
    # seeds run as 6, 3 per core), which are never saved or reported: `ours` keeps
    # the run's own seeds of any [S', ...] array.
    # A host agent's seeds stay on one device: its callbacks must not hold up a
    # collective (XLA:CPU aborts one that waits over 40 s on the user's code).
    num_seeds = len(seed_list)
    max_devices = 1 if is_host_agent(loop.agent) else None
    num_run = padded_seed_count(num_seeds, max_devices)
    carry, params = shard_seeds(pad_seeds((carry, params), num_seeds, max_devices), num_run, max_devices)

    def ours(tree: Any) -> Any:
        return tree if num_run == num_seeds else jax.tree.map(lambda leaf: leaf[:num_seeds], tree)
    bar = tqdm(
        total=num_steps,
        initial=t,
        desc=f"{loop.agent.name} on {env_id}",
        unit="step",
        disable=not progress,
    )

    def report_rows() -> pd.DataFrame:
        # wall_seconds: the whole vmapped run so far, compilation included
        return _rows(loop, env_id, seed_list, log_steps, logged, np.asarray(ours(carry.failed_at)),
                     previous_wall + time.perf_counter() - start, steps_done=t)

    rows = None  # the rows last given to on_rows
    if on_rows is not None and 0 < t < num_steps:
        on_rows(report_rows())
    with bar:
        while t < num_steps:
            length = min(chunk_size, num_steps - t)
            # One compiled program per chunk length (at most two: chunk_size and the rest).
            carry, outputs = run_chunk(loop, carry, params, length)
            # [S, length]; one transfer per chunk (actions and rewards stay on device)
            cumulative = np.asarray(ours(outputs.cumulative_regret), np.float64)
            here = log_steps[(log_steps > t) & (log_steps <= t + length)]
            logged = np.concatenate([logged, cumulative[:, here - t - 1]], axis=1)
            t += length
            if out_path is not None:
                wall = previous_wall + time.perf_counter() - start
                save_checkpoint(out_path, config, ours(carry), t, wall, logged)
            bar.update(length)
            if on_rows is not None:
                rows = report_rows()
                on_rows(rows)
            if callback is not None:
                callback(t)
    if on_rows is not None and rows is None:
        rows = report_rows()  # a run resumed from its last chunk
        on_rows(rows)
    return report_rows() if rows is None else rows


def _rows(
    loop: BanditLoop,
    env_id: str,
    seeds: list[int],
    log_steps: np.ndarray,
    logged: np.ndarray,
    failed_at: np.ndarray,
    wall_seconds: float,
    steps_done: int | None = None,
) -> pd.DataFrame:
    """The tidy result: logged [S, k] cumulative regrets at the first k of log_steps,
    failed_at [S]. steps_done < log_steps[-1]: a run in progress, whose seeds that
    have not failed get final_regret NaN and error "unfinished: ...". """
    num_seeds, num_logs = logged.shape
    total_steps = int(log_steps[-1])
    log_steps = log_steps[:num_logs]
    failed = failed_at > 0
    # Rows at or after a failure step carry NaN: the seed stopped there.
    cumulative = np.where(failed[:, None] & (log_steps[None, :] >= failed_at[:, None]), np.nan, logged)
    unfinished = steps_done is not None and steps_done < total_steps
    final = np.where(failed | unfinished, np.nan, logged[:, -1] if num_logs else np.nan)
    errors = [
        f"agent parameters became non-finite at step {int(s)}; seed stopped" if s > 0
        else f"{UNFINISHED_RUN} {steps_done} of {total_steps} steps" if unfinished
        else ""
        for s in failed_at
    ]
    env = loop.env
    return pd.DataFrame(
        {
            "agent": loop.agent.name,
            "policy": loop.policy,
            "env": env_id,
            "input_dim": int(env.input_dim),
            "num_actions": int(env.num_actions),
            "temperature": float(env.temperature),
            "seed": np.repeat(np.asarray(seeds, np.int64), num_logs),
            "step": np.tile(log_steps, num_seeds),
            "cumulative_regret": cumulative.reshape(-1),
            "final_regret": np.repeat(final, num_logs),
            "wall_seconds": float(wall_seconds),
            "error": np.repeat(np.asarray(errors, object), num_logs),
        },
        columns=list(COLUMNS),
    )
