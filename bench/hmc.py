"""Wall time and mixing of one hmc fit on the testbed's d = 2 problems.

    python bench/hmc.py                  # T = 10 and T = 100, d = 2, the defaults
    python bench/hmc.py --num-train 10 100 1000 --repeats 2
    python bench/hmc.py --num-train 100 --set algorithm=nuts --set num_samples=1000 --set thinning=1

For each T: ``fit`` is compiled ahead of time (compile seconds, reported
separately), then run ``--repeats`` times with fresh keys; ``fit_s`` is the
fastest run. A fit is one HMC run: num_chains chains of num_warmup +
num_samples * thinning transitions of num_integration_steps leapfrog steps, so
``gradients`` (per chain) is the work. The diagnostics of the last run are
printed with it (max split R-hat, min bulk ESS over the monitored quantities,
``lp_ess`` the bulk ESS of the log density, acceptance, adapted step size,
divergences) and whether they pass ``hmc.diagnostics_pass``. ``--set`` overrides
an hmc option. Printed figures are for the machine at hand; never assert on them.

Figures measured when the defaults were chosen (d = 2, T = 100, seed 0, 4 chains,
on the development CPU; they go stale with the hardware and the libraries):

- NUTS (1000 warm-up, 100 kept of 1000 per chain) built trees of ~180 leapfrog
  steps per transition and reached a bulk ESS of ~330 on the log density in
  260 s; fixed-length HMC with 16 steps, ~90-130 in 10-20 s; the defaults (32
  steps, 500 warm-up, 500 sampling transitions thinned by 5) ~190-300 in ~9 s:
  about eight times more effective samples per gradient than NUTS, which is why
  ``algorithm="hmc"`` is the default.
- Step-size jitter, on the prior alone (T = 0, 1000 draws): bulk ESS of the log
  density ~200 without jitter, ~450 with the default ``step_size_jitter=0.5``.
"""

from __future__ import annotations

import argparse
import ast
import json
import time

import jax
import numpy as np

from decision_bench import agents
from decision_bench.agents import hmc
from decision_bench.envs.testbed import make_testbed_problem


def bench_fit(num_train: int, input_dim: int, repeats: int, seed: int, overrides: dict) -> dict:
    problem = make_testbed_problem("mlp", input_dim=input_dim, num_train=num_train, seed=seed)
    agent = agents.make("hmc", problem.spec, **overrides)
    config = agents.config("hmc", **overrides)
    spec, data = problem.spec, problem.train_data

    def run(key, train_data):
        return agents.fit(agent, key, train_data, spec)

    start = time.perf_counter()
    compiled = jax.jit(run).lower(jax.random.key(0), data).compile()
    compile_s = time.perf_counter() - start

    times = []
    for i in range(repeats):
        start = time.perf_counter()
        state = jax.block_until_ready(compiled(jax.random.key(i + 1), data))
        times.append(time.perf_counter() - start)

    d = state.diagnostics
    transitions = config.num_warmup + config.num_samples * config.thinning
    return {
        "input_dim": input_dim,
        "num_train": num_train,
        "fit_s": round(min(times), 2),
        "compile_s": round(compile_s, 2),
        "gradients": transitions * config.num_integration_steps,
        "chains": config.num_chains,
        "members": config.num_members,
        "max_rhat": round(float(np.max(d.rhat)), 3),
        "min_ess": round(float(np.min(d.ess)), 1),
        "lp_ess": round(float(d.ess[0]), 1),
        "acceptance": round(float(np.mean(d.acceptance_rate)), 3),
        "step_size": round(float(np.mean(d.step_size)), 4),
        "divergent": int(np.sum(d.num_divergent)),
        "passes": bool(hmc.diagnostics_pass(d, num_transitions=config.num_samples * config.thinning)),
    }


def _option(text: str) -> tuple[str, object]:
    """'name=value' -> (name, value), the value a Python literal or else the string."""
    name, sep, value = text.partition("=")
    if not sep:
        raise SystemExit(f"--set must be NAME=VALUE, got {text!r}")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-train", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--input-dim", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0, help="the testbed problem's seed")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="an hmc option (a Python literal), e.g. algorithm=nuts; repeatable")
    args = parser.parse_args(argv)
    overrides = dict(_option(text) for text in args.set)

    print(f"hmc: {agents.config('hmc', **overrides)}")
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}")
    for num_train in args.num_train:
        row = bench_fit(num_train, args.input_dim, args.repeats, args.seed, overrides)
        if args.json:
            print(json.dumps(row))
        else:
            print("  ".join(f"{k}={v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
