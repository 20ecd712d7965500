"""SGD throughput and memory of every registered agent at the testbed defaults.

    python bench/agents.py                 # all agents, d = 2, T = 1000, batch 100, 1000 steps
    python bench/agents.py --quick         # 200 steps, ensembles of 10: well under 2 minutes
    python bench/agents.py --agents mlp,ensemble+ --json

For each agent, ``fit`` is compiled once ahead of time (compile seconds, reported
separately), then run ``--repeats`` times with fresh keys; steps/s uses the
fastest run. Memory: ``program_mb`` is XLA's own account of the compiled fit
(arguments + outputs + temporaries, per agent); ``state_mb`` is the fitted
state; ``rss_peak_mb`` is the process's peak resident memory so far
(``getrusage``; cumulative over the agents run before it, so read it as an upper
bound). Printed figures are for the machine at hand; never assert on them.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time

import jax

from decision_bench import agents
from decision_bench.envs.testbed import make_testbed_problem


def _megabytes(num_bytes: float) -> float:
    return num_bytes / 2**20


def _rss_peak_mb() -> float:
    # ru_maxrss is kilobytes on Linux, bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return _megabytes(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale)


def bench_agent(name: str, problem, num_steps: int, batch_size: int, overrides: dict, repeats: int):
    """One row of figures for agent `name`."""
    agent = agents.make(name, problem.spec, **overrides)
    spec, data = problem.spec, problem.train_data
    if agent.fit_data is not None and agent.num_steps == 0:
        num_steps = 0  # a full-batch agent (hmc, knn, random_forest): one whole fit, no updates

    def run(key, train_data):
        return agents.fit(agent, key, train_data, spec, num_steps=num_steps, batch_size=batch_size)

    start = time.perf_counter()
    compiled = jax.jit(run).lower(jax.random.key(0), data).compile()
    compile_s = time.perf_counter() - start

    times = []
    for i in range(repeats):
        key = jax.random.key(i + 1)
        start = time.perf_counter()
        state = jax.block_until_ready(compiled(key, data))
        times.append(time.perf_counter() - start)
    best = min(times)

    memory = compiled.memory_analysis()
    program_bytes = (
        memory.argument_size_in_bytes + memory.output_size_in_bytes + memory.temp_size_in_bytes
        if memory is not None
        else float("nan")
    )
    state_bytes = sum(leaf.nbytes for leaf in jax.tree.leaves(state) if hasattr(leaf, "nbytes"))
    # Data-independent agents (default of 0 steps) have no-op updates that XLA
    # folds away: a steps/s figure for them would be meaningless.
    trains = agent.num_steps > 0
    return {
        "agent": name,
        "overrides": overrides,
        "input_dim": spec.input_dim,
        "num_train": spec.num_train,
        "batch_size": batch_size,
        "num_steps": num_steps,
        "compile_s": round(compile_s, 3),
        "run_s": round(best, 4),
        "trains": trains,
        "full_batch": agent.fit_data is not None,
        "steps_per_s": round(num_steps / best, 1) if num_steps and trains else None,
        "program_mb": round(_megabytes(program_bytes), 2),
        "state_mb": round(_megabytes(state_bytes), 3),
        "rss_peak_mb": round(_rss_peak_mb(), 1),
        "finite": bool(agents.params_are_finite(state)),
        "device": str(jax.devices()[0].platform),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default=None, help="comma-separated names (default: all)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("--quick", action="store_true", help="200 steps, ensembles of 10")
    parser.add_argument("--steps", type=int, default=None, help="SGD steps per fit (default 1000)")
    parser.add_argument("--num-train", type=int, default=1000)
    parser.add_argument("--input-dim", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=None, help="timed runs (default 3, quick 1)")
    args = parser.parse_args(argv)

    names = agents.names() if args.agents is None else tuple(args.agents.split(","))
    unknown = sorted(set(names) - set(agents.names()))
    if unknown:
        parser.error(f"unknown agents {unknown}; registered agents are {list(agents.names())}")
    num_steps = args.steps if args.steps is not None else (200 if args.quick else 1000)
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    problem = make_testbed_problem(input_dim=args.input_dim, num_train=args.num_train, seed=0)

    rows = []
    for name in names:
        # Quick mode shrinks ensembles (the only size knob that changes per-step cost
        # by 10x); everything else stays at the paper defaults.
        overrides = {}
        if args.quick and "num_ensemble" in agents.hyperparameters(name):
            overrides["num_ensemble"] = 10
        row = bench_agent(name, problem, num_steps, args.batch_size, overrides, repeats)
        rows.append(row)
        if args.json:
            print(json.dumps(row), flush=True)

    if not args.json:
        header = (
            f"{'agent':<14}{'steps/s':>10}{'compile s':>11}{'program MB':>12}"
            f"{'state MB':>10}{'RSS peak MB':>13}  notes"
        )
        print(f"# d={args.input_dim} T={args.num_train} batch={args.batch_size} "
              f"steps={num_steps} device={jax.devices()[0].platform} jax={jax.__version__}")
        print(header)
        for row in rows:
            notes = [f"{k}={v}" for k, v in row["overrides"].items()]
            if not row["trains"]:
                notes.append("full batch (no SGD)" if row["full_batch"] else "ignores data (no SGD)")
            if not row["finite"]:
                notes.append("NON-FINITE")
            rate = "-" if row["steps_per_s"] is None else f"{row['steps_per_s']:.0f}"
            print(
                f"{row['agent']:<14}{rate:>10}{row['compile_s']:>11.2f}"
                f"{row['program_mb']:>12.2f}{row['state_mb']:>10.3f}"
                f"{row['rss_peak_mb']:>13.1f}  {', '.join(notes)}"
            )
    return 0 if all(row["finite"] for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
