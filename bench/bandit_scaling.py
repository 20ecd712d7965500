"""How a bandit agent's cost grows with ensemble members and vmapped seeds: the check
behind the estimate's rules "linear in members" and "linear in seeds" (issue 33).

    python bench/bandit_scaling.py                          # ensemble and ensemble+ at d = 50
    python bench/bandit_scaling.py --agents hypermodel --input-dim 2 --seeds 3,20

For each agent, members (ensembles' num_ensemble; other agents run at their own size) and seed
count, on NeuralBandit-v0 (N = 20 d actions, beta = 0.1): one chunk of --steps steps to
compile and warm, then a second timed chunk. Prints CPU seconds of this process (all its
threads) per seed-step, beside what the cost table (bench/costs.py: 30 members, 3 seeds)
predicts for that size through the estimate's rules, and their ratio. CPU seconds, not
wall: on a shared machine the wall clock measures the other work too. Nothing asserts.
"""

from __future__ import annotations

import argparse
import sys
import time

import jax
import jax.numpy as jnp

from decision_bench import agents
from decision_bench.bandit.loop import init_carries, make_loop, run_chunk
from decision_bench.experiments.estimate import bandit_seed_step_seconds


def seconds_per_seed_step(agent: str, input_dim: int, members: int, seeds: int, steps: int) -> float:
    """CPU seconds per seed-step of a warm chunk of ``steps`` steps."""
    env_kwargs = {"input_dim": input_dim, "num_actions": 20 * input_dim, "temperature": 0.1}
    agent_kwargs = {"num_ensemble": members} if members else None
    loop, _ = make_loop(agent, "NeuralBandit-v0", env_kwargs=env_kwargs, agent_kwargs=agent_kwargs)
    carry, params = init_carries(loop, jnp.arange(seeds, dtype=jnp.int32))
    carry, out = run_chunk(loop, carry, params, steps)  # compiles; the buffer starts filling
    jax.block_until_ready(out)
    start = time.process_time()
    carry, out = run_chunk(loop, carry, params, steps)
    jax.block_until_ready(out)
    return (time.process_time() - start) / steps / seeds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", default="ensemble,ensemble+")
    parser.add_argument("--input-dim", type=int, default=50)
    parser.add_argument("--members", default="30,100", help="ensemble sizes; 0: the agent's own")
    parser.add_argument("--seeds", default="3,20")
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args(argv)
    print(f"{'agent':<11} {'members':>7} {'seeds':>5} {'CPU s/seed-step':>16} {'table rule':>11} {'ratio':>6}")
    for agent in args.agents.split(","):
        has_members = hasattr(agents.config(agent), "num_ensemble")
        for members in sorted({int(m) if has_members else 0 for m in args.members.split(",")}):
            for seeds in (int(s) for s in args.seeds.split(",")):
                measured = seconds_per_seed_step(agent, args.input_dim, members, seeds, args.steps)
                overrides = {"num_ensemble": members} if members else {}
                predicted = bandit_seed_step_seconds(agent, overrides, args.input_dim)
                print(f"{agent:<11} {members or '-':>7} {seeds:>5} {measured:16.5f} {predicted:11.5f} "
                      f"{measured / predicted:6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
