"""Thompson sampling in the neural bandit (paper 000, Sec. 5 and App. E, Alg. 4).

Modules: ``loop`` (the pure step, scanned over time and vmapped over seeds),
``run`` (``run_bandit``: chunks, progress, checkpoints), ``checkpoints``
(self-checking saves) and ``gym_policy`` (``ThompsonPolicy``, the slow path).

Two doors onto one set of pure functions:

- ``run_bandit``: the whole experiment compiled. Time is a ``jax.lax.scan``,
  seeds are a ``jax.vmap`` axis, and the scan runs in chunks (``chunk_size``
  steps) so that a progress bar advances and the carry is saved after each
  chunk; running again with the same ``out_dir`` continues from the last
  saved chunk (``resume=False`` starts over).
- ``ThompsonPolicy``: the conventional path, driven by the user in a plain
  Gymnasium loop (``a = policy.act(obs); obs2, r, ... = env.step(a);
  policy.observe(obs, a, r)``). It calls the same ``BanditLoop.act`` and
  ``BanditLoop.learn`` as the compiled step, one jitted call each.

Every step: the policy scores the action set (``thompson``: one
``sample_logits`` draw, argmax of P(y = 1) with random tie-breaking; ``greedy``:
the agent's mean prediction; ``uniform``: a random action), the environment
returns the reward, the transition (x of the chosen action, reward) enters a
ring-buffer replay of ``replay_capacity``, then ``steps_per_obs`` optimiser steps
run on batches of ``batch_size`` drawn uniformly with replacement from the
filled part, with ``Batch.num_seen = t`` (observations so far, so the
``sequential`` regulariser decays as 1/t) and ``Batch.index`` = buffer position.

Two documented exceptions: under the ``uniform`` policy the agent is not
trained (it cannot influence the actions or the regret); an agent whose record
says ``update_mode="online"`` (exact Bayesian update, e.g. ``beta_bernoulli``) is fed online: one ``update``
per step with a batch holding only the newest transition, so every
observation counts exactly once (``update_mode="online"``; force either mode
with ``update_mode``).

Key derivation (why the two doors agree). For a seed s:

    root = jax.random.key(s)
    # environment: exactly the Gymnasium adapter's chain (envs/adapters.py), so
    # gymnasium's env.reset(seed=s) produces the same environment and rewards
    k_params, k_reset, k_env = jax.random.split(root, 3)
    every step:  k_env, k_step = jax.random.split(k_env)
    # agent: its own stream, purpose-tagged so it never meets the env chain
    k_agent = fold_in(root, AGENT=1001)
    agent.init key      = fold_in(k_agent, INIT=0)
    step t (t = observations before the step, 0-based):
        act key         = fold_in(fold_in(k_agent, ACT=1), t) -> split: (draw, tie-break)
        learn key       = fold_in(fold_in(k_agent, LEARN=2), t)
        SGD step j      = fold_in(learn key, j) -> split: (batch positions, agent update)

Keys depend on (seed, t) only, never on the chunking or on the other seeds, so
a resumed run, a run with a different chunk size, a single-seed run and the
slow path all draw the same keys. (``split`` and ``fold_in`` coincide on small
counters under JAX's partitionable threefry, hence the large tag 1001.)

Numerical failure: a seed whose agent state becomes non-finite is frozen from
that step on (its regret stops accumulating, its rows after that step are NaN)
and the step is reported in the ``error`` column; other seeds continue.
"""

from decision_bench.bandit.gym_policy import ThompsonPolicy
from decision_bench.bandit.loop import (
    COLUMNS,
    DEFAULT_REGULARIZATION,
    POLICIES,
    BanditLoop,
    BanditLoopConfig,
    bandit_spec,
    make_loop,
    seed_keys,
)
from decision_bench.bandit.run import run_bandit

__all__ = [
    "BanditLoop",
    "BanditLoopConfig",
    "COLUMNS",
    "DEFAULT_REGULARIZATION",
    "POLICIES",
    "ThompsonPolicy",
    "bandit_spec",
    "make_loop",
    "run_bandit",
    "seed_keys",
]
