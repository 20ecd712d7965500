"""Times agents on the paper2d testbed sweep (paper 000: 21 settings x tau {1, 10} x 10 seeds
= 420 problems per agent; 1000 test tau-samples and 1000 agent samples each).

    python bench/testbed.py [--json] [--quick] [--agents mlp,ensemble+] [--devices N]

Prints, per agent: problems per second, fit and evaluation seconds, compile
seconds (ahead-of-time XLA compilation, measured separately) and the process's
peak resident memory so far. With --json, one JSON line per agent with keys
agent, sweep, num_problems, seconds_total, seconds_per_problem,
compile_seconds, fit_seconds, eval_seconds, peak_memory_mib, seeds_run,
extrapolated.

--quick runs all 21 settings with 2 of the 10 seeds (a fifth of the problems)
and extrapolates: compilation is per setting and does not grow with seeds
(seeds are one vmapped computation), so total = compile + (fit + eval +
overhead) x 10 / 2. Without --quick the whole sweep runs.

--devices N: the CPU devices to ask for (default: one per usable core, as the
decision-bench program does; 1 = JAX's default); a setting's seeds are spread
over them (``_src/devices.py``).

Reference (the original implementation on this 2-core machine): ~8 s per
problem for mlp, about an hour for the 420-problem sweep. Targets: mlp < 5 min,
ensemble+ (100 members) < 30 min.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import jax

from decision_bench._src.devices import use_cpu_cores
from decision_bench.evaluation import get_sweep, run_testbed

QUICK_SEEDS = 2


def bench_agent(agent: str, quick: bool) -> dict:
    sweep = get_sweep("paper2d")
    seeds = QUICK_SEEDS if quick else sweep.num_seeds
    start = time.perf_counter()
    frame = run_testbed([agent], sweep, seeds, progress=False)
    wall = time.perf_counter() - start
    compile_s = float(frame["compile_seconds"].sum())
    fit_s = float(frame["fit_seconds"].sum())
    eval_s = float(frame["eval_seconds"].sum())
    scale = sweep.num_seeds / seeds
    # Everything but compilation scales with the number of seeds.
    total = compile_s + (wall - compile_s) * scale
    num_problems = sweep.num_problems
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    return {
        "agent": agent,
        "sweep": sweep.name,
        "num_problems": num_problems,
        "seconds_total": round(total, 2),
        "seconds_per_problem": round(total / num_problems, 4),
        "compile_seconds": round(compile_s, 2),
        "fit_seconds": round(fit_s * scale, 2),
        "eval_seconds": round(eval_s * scale, 2),
        "peak_memory_mib": round(peak_mib, 1),
        "seeds_run": seeds,
        "devices": jax.local_device_count(),
        "extrapolated": quick,
        "mean_kl_tau1": round(float(frame.loc[frame.tau == 1, "kl"].mean()), 4),
        "mean_kl_tau10": round(float(frame.loc[frame.tau == 10, "kl"].mean()), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON line per agent")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SEEDS} of 10 seeds, extrapolated")
    parser.add_argument("--agents", default="mlp,ensemble+", help="comma-separated agent names")
    parser.add_argument("--devices", type=int, default=None,
                        help="CPU devices to ask for (default: one per usable core; 1 = JAX's default)")
    args = parser.parse_args()
    if args.devices is not None and args.devices < 1:
        parser.error(f"--devices must be >= 1, got {args.devices}")
    use_cpu_cores(args.devices)  # before the first computation: JAX reads it once
    for agent in [a.strip() for a in args.agents.split(",") if a.strip()]:
        result = bench_agent(agent, args.quick)
        if args.json:
            print(json.dumps(result), flush=True)
            continue
        note = f" (extrapolated from {result['seeds_run']} seeds)" if result["extrapolated"] else ""
        print(
            f"{agent} ({result['devices']} devices): {result['num_problems']} problems in {result['seconds_total']:.1f} s{note} = "
            f"{result['num_problems'] / result['seconds_total']:.2f} problems/s "
            f"({result['seconds_per_problem']:.3f} s/problem); fit {result['fit_seconds']:.1f} s, "
            f"eval {result['eval_seconds']:.1f} s, compile {result['compile_seconds']:.1f} s; "
            f"peak memory {result['peak_memory_mib']:.0f} MiB; mean d_KL^1 {result['mean_kl_tau1']}, "
            f"d_KL^10 {result['mean_kl_tau10']}",
            flush=True,
        )


if __name__ == "__main__":
    main()
