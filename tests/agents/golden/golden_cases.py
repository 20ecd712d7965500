"""The fixed cases behind tests/agents/test_same_results.py (small sizes, fixed keys)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from decision_bench import agents
from decision_bench.agents.registry import ENTRIES
from decision_bench.bandit.run import run_bandit
from decision_bench.envs.testbed import make_testbed_problem

# Small overrides so every family fits in seconds; the same overrides are used when
# the golden file is written and when it is checked, so they test the code, not the
# defaults. Agents not listed run at their defaults.
SMALL = {
    "ensemble": {"num_ensemble": 3},
    "ensemble+": {"num_ensemble": 3},
    "hmc": {"num_chains": 2, "num_warmup": 20, "num_samples": 10, "thinning": 1, "num_integration_steps": 4},
    "sgmcmc": {},
}
# Agents that classify the testbed's 0/1 data of real-valued features (agents of one-hot
# inputs or of real-valued rewards, beta_bernoulli and linear_gaussian, are bandit-only:
# their own bandit cases below).
AGENT_CASES = tuple(
    entry.name
    for entry in sorted(ENTRIES, key=lambda entry: entry.name)
    if entry.inputs == "features" and entry.rewards == "binary"
)
FIT_STEPS = 25


def agent_outputs(name: str) -> dict[str, np.ndarray]:
    """Fit on one d = 2, T = 10 problem, then one joint draw and (if any) the members."""
    problem = make_testbed_problem("mlp", input_dim=2, num_train=10, temperature=0.1, seed=3)
    agent = agents.make(name, problem.spec, **SMALL.get(name, {}))
    steps = None if name == "hmc" else min(FIT_STEPS, agent.num_steps)
    state = agents.fit(agent, jax.random.key(7), problem.train_data, problem.spec, num_steps=steps)
    x = jax.random.normal(jax.random.key(5), (6, 2), jnp.float32)
    out = {"sample_logits": np.asarray(agent.sample_logits(jax.random.key(11), state, x))}
    if agent.member_logits is not None:
        out["member_logits"] = np.asarray(agent.member_logits(state, x))[:4]
    return out


BANDIT_CASES = ("mlp", "ensemble+", "bbb", "beta_bernoulli", "linear_gaussian")
_BANDIT_ENV = {
    "beta_bernoulli": ("BernoulliBandit-v0", {}),
    "linear_gaussian": ("LinearBandit-v0", {}),
}


def bandit_outputs(name: str) -> np.ndarray:
    """Cumulative regret at every logged step of 2 seeds x 40 steps (log every 10)."""
    env, env_kwargs = _BANDIT_ENV.get(name, ("NeuralBandit-v0", {}))
    frame = run_bandit(
        name,
        env,
        40,
        2,
        log_every=10,
        progress=False,
        env_kwargs=env_kwargs,
        agent_kwargs=SMALL.get(name, {}) or None,
    )
    frame = frame.sort_values(["seed", "step"])
    return frame["cumulative_regret"].to_numpy()
