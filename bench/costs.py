"""Measures the per-agent costs behind ``decision-bench ... --estimate`` and writes them
to ``decision_bench/experiments/cost_table.json`` (package data).

    python bench/costs.py [--agents mlp,ensemble] [--out PATH]

For every agent (30-member ensembles, as the laptop presets run them):

- testbed: one setting (d = 2, T = 100, beta = 0.1; tau 1, 10 iid, 10 dyadic),
  2 seeds, 500 test samples, 1000 model draws, run twice with ``run_testbed``:
  the first call's compile seconds, and the second call's (another temperature:
  the same compiled programs) fit seconds per seed and evaluation seconds per
  seed, design and 1000 test samples;
- bandit: ``NeuralBandit-v0`` at d = 2 (40 actions) and d = 50 (1000 actions),
  3 vmapped seeds: the first chunk's extra seconds (compilation) and, warm,
  seconds per seed-step.

Costs are CPU seconds of this process (all its threads), not wall seconds: on
a machine shared with other work the wall clock measures the other work too,
while a process's CPU time stays close to what it needs alone. The estimate turns
them back into wall time by dividing by the cores the run keeps busy. The table
records the machine (CPU model, cores, load average during the measurement) and
the date: an estimate made from it is only as good as the likeness of the
machine it is used on. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

from decision_bench.bandit.loop import init_carries, make_loop, run_chunk
from decision_bench.evaluation import run_testbed
from decision_bench.evaluation.sweeps import Sweep, TestbedSetting, TestDesign
from decision_bench.experiments.presets import CORE_AGENTS

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "decision_bench" / "experiments" / "cost_table.json"
MEMBERS = 30  # ensemble sizes measured; the estimate scales ensembles linearly from it
TESTBED_SEEDS = 2
TESTBED_NUM_TEST = 500
BANDIT_SEEDS = 3
BANDIT_TIMED_STEPS = 300


def _overrides(agent: str) -> dict:
    return {"num_ensemble": MEMBERS} if agent in ("ensemble", "ensemble+") else {}


def _sweep(temperature: float) -> Sweep:
    setting = TestbedSetting(input_dim=2, num_train=100, temperature=temperature)
    return Sweep("cost", (setting,), (TestDesign(1), TestDesign(10), TestDesign(10, 2)), num_seeds=TESTBED_SEEDS)


def _clocks() -> tuple[float, float]:
    """(wall, CPU) seconds now; CPU time counts every thread of this process."""
    return time.perf_counter(), time.process_time()


def measure_testbed(agent: str) -> dict:
    overrides = {agent: _overrides(agent)}
    wall0, cpu0 = _clocks()
    run_testbed(agent, _sweep(0.1), TESTBED_SEEDS, num_test=TESTBED_NUM_TEST, overrides=overrides, progress=False)
    wall1, cpu1 = _clocks()
    warm = run_testbed(agent, _sweep(0.5), TESTBED_SEEDS, num_test=TESTBED_NUM_TEST, overrides=overrides,
                       progress=False)
    wall2, cpu2 = _clocks()
    designs = 3
    # The warm call's CPU seconds, split between fit and evaluation as its wall
    # seconds are (run_testbed times each part).
    fit_wall, eval_wall = float(warm["fit_seconds"].sum()), float(warm["eval_seconds"].sum())
    warm_cpu = cpu2 - cpu1
    fit_share = fit_wall / max(fit_wall + eval_wall, 1e-9)
    return {
        "fit_cpu_seconds_per_seed": round(warm_cpu * fit_share / TESTBED_SEEDS, 4),
        "eval_cpu_seconds_per_seed_design_1000_test": round(
            warm_cpu * (1 - fit_share) / TESTBED_SEEDS / designs * (1000 / TESTBED_NUM_TEST), 4),
        # The first call's CPU seconds beyond the warm call's: compiling its programs.
        "compile_cpu_seconds": round(max(0.0, (cpu1 - cpu0) - warm_cpu), 2),
        "warm_wall_seconds": round(wall2 - wall1, 2),
        "first_wall_seconds": round(wall1 - wall0, 2),
    }


def measure_bandit(agent: str, input_dim: int) -> dict:
    env_kwargs = {"input_dim": input_dim, "num_actions": 20 * input_dim, "temperature": 0.1}
    loop, _ = make_loop(agent, "NeuralBandit-v0", env_kwargs=env_kwargs, agent_kwargs=_overrides(agent) or None)
    carry, params = init_carries(loop, jnp.arange(BANDIT_SEEDS, dtype=jnp.int32))
    wall0, cpu0 = _clocks()
    carry, out = run_chunk(loop, carry, params, BANDIT_TIMED_STEPS)
    jax.block_until_ready(out)
    wall1, cpu1 = _clocks()
    carry, out = run_chunk(loop, carry, params, BANDIT_TIMED_STEPS)
    jax.block_until_ready(out)
    wall2, cpu2 = _clocks()
    return {
        "cpu_seconds_per_seed_step": round((cpu2 - cpu1) / BANDIT_TIMED_STEPS / BANDIT_SEEDS, 7),
        "compile_cpu_seconds": round(max(0.0, (cpu1 - cpu0) - (cpu2 - cpu1)), 2),
        "warm_wall_seconds": round(wall2 - wall1, 3),
    }


def machine() -> dict:
    model = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            model = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        model = platform.processor() or "unknown"
    return {"cpu": model, "cores": len(os.sched_getaffinity(0)), "device": jax.devices()[0].device_kind}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", default=",".join(CORE_AGENTS + ("sgmcmc_quick",)))
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args(argv)
    loads = [os.getloadavg()[0]]
    agents = {}
    for agent in args.agents.split(","):
        testbed = measure_testbed(agent)
        loads.append(os.getloadavg()[0])
        bandit = {str(d): measure_bandit(agent, d) for d in (2, 50)}
        loads.append(os.getloadavg()[0])
        agents[agent] = {"testbed": testbed, "bandit": bandit}
        print(agent, json.dumps(agents[agent]), flush=True)
    table = {
        "format": "decision_bench.costs/1",
        "measured": datetime.date.today().isoformat(),
        "command": "python bench/costs.py",
        "machine": {**machine(), "load_average": [round(x, 1) for x in (min(loads), max(loads))]},
        "ensemble_members": MEMBERS,
        "testbed_setting": {"input_dim": 2, "num_train": 100, "seeds": TESTBED_SEEDS, "num_test": TESTBED_NUM_TEST,
                            "num_models": 1000},
        "bandit_setting": {"seeds": BANDIT_SEEDS, "num_actions": "20 d", "timed_steps": BANDIT_TIMED_STEPS},
        "agents": agents,
    }
    Path(args.out).write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
