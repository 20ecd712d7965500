"""Benchmark of the compiled bandit loop (issue 5, "Performance").

    python bench/bandit.py [--json] [--quick]

For mlp and ensemble+ (paper defaults: 100 members) on NeuralBandit-v0 with
d in {2, 10, 50} and 20 d actions, Thompson sampling with one Adam step on a
batch of 128 per observation, it reports:

- steps per second per seed, and summed over the vmapped seeds (1 and 20);
- achieved GFLOP/s: XLA's cost analysis of one compiled step (forward, backward
  and sampling; all seeds) times the measured steps per second;
- roofline GFLOP/s: the same process on a dense batched matmul of the loop's
  dominant shape, [S*M, 128, 50] @ [S*M, 50, 50] (S seeds, M members);
- peak memory: device peak where the backend reports it, else the process's
  peak resident set (MiB).

Timings exclude compilation: each configuration is compiled and run once,
then a chunk sized to take about ``--seconds`` is timed. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

import jax
import jax.numpy as jnp

from decision_bench.bandit.loop import init_carries, make_loop, run_chunk

# Paper 000 reference implementation on the 2-core machine (issue 5): s / 1000 steps.
REFERENCE_SECONDS_PER_1000 = {
    ("mlp", 2): 0.55,
    ("mlp", 10): 0.55,
    ("ensemble+", 2): 7.5,
    ("ensemble+", 10): 9.0,
    ("ensemble+", 50): 22.6,
}
HIDDEN = 50
BATCH = 128


def _members(agent: str) -> int:
    return 100 if agent == "ensemble+" else 1


def peak_memory_mib() -> float:
    stats = jax.devices()[0].memory_stats() or {}
    if "peak_bytes_in_use" in stats:
        return stats["peak_bytes_in_use"] / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def step_flops(loop, carry, params) -> float:
    """FLOPs of one step of all seeds, from XLA's cost analysis of the compiled step."""
    compiled = jax.jit(lambda c, p: jax.vmap(loop.step)(c, p)).lower(carry, params).compile()
    cost = compiled.cost_analysis()
    if isinstance(cost, list):  # older JAX returned one dict per computation
        cost = cost[0]
    return float(cost.get("flops", float("nan")))


def matmul_roofline_gflops(batch: int, seconds: float) -> float:
    """GFLOP/s of [batch, 128, 50] @ [batch, 50, 50], chained in a compiled loop."""
    a = jax.random.normal(jax.random.key(0), (batch, BATCH, HIDDEN), jnp.float32)
    # Orthogonal factors keep the chained product's scale fixed (no overflow or
    # denormals), so the loop times nothing but the matmuls.
    w, _ = jnp.linalg.qr(jax.random.normal(jax.random.key(1), (batch, HIDDEN, HIDDEN), jnp.float32))

    @jax.jit
    def chain(a, w, reps):
        # Each product feeds the next, so nothing is hoisted or skipped.
        return jax.lax.fori_loop(0, reps, lambda _, x: x @ w, a)

    reps = 8
    jax.block_until_ready(chain(a, w, reps))
    while True:
        start = time.perf_counter()
        jax.block_until_ready(chain(a, w, reps))
        elapsed = time.perf_counter() - start
        if elapsed > seconds / 4 or reps >= 1 << 20:
            break
        reps *= 4
    return 2.0 * batch * BATCH * HIDDEN * HIDDEN * reps / elapsed / 1e9


def measure(agent: str, d: int, num_seeds: int, seconds: float) -> dict:
    env_kwargs = {"input_dim": d, "num_actions": 20 * d, "temperature": 0.1}
    loop, _ = make_loop(agent, "NeuralBandit-v0", env_kwargs=env_kwargs)
    seeds = jnp.arange(num_seeds, dtype=jnp.int32)
    carry, params = init_carries(loop, seeds)
    flops = step_flops(loop, carry, params)
    # Calibrate: a short compiled chunk, then one sized to take about `seconds`.
    length = 20
    compile_start = time.perf_counter()
    carry, out = run_chunk(loop, carry, params, length)
    jax.block_until_ready(out)
    compile_seconds = time.perf_counter() - compile_start
    start = time.perf_counter()
    carry, out = run_chunk(loop, carry, params, length)
    jax.block_until_ready(out)
    per_step = (time.perf_counter() - start) / length
    length = int(min(5000, max(20, seconds / per_step)))
    carry, out = run_chunk(loop, carry, params, length)  # compile this length
    jax.block_until_ready(out)
    start = time.perf_counter()
    carry, out = run_chunk(loop, carry, params, length)
    jax.block_until_ready(out)
    elapsed = time.perf_counter() - start
    steps_per_second = length / elapsed
    reference = REFERENCE_SECONDS_PER_1000.get((agent, d))
    return {
        "agent": agent,
        "input_dim": d,
        "num_actions": 20 * d,
        "num_seeds": num_seeds,
        "steps_per_second_per_seed": steps_per_second,
        "steps_per_second_total": steps_per_second * num_seeds,
        "gflops": flops * steps_per_second / 1e9,
        "roofline_gflops": matmul_roofline_gflops(num_seeds * _members(agent), seconds),
        "peak_memory_mib": peak_memory_mib(),
        "seconds_per_1000_steps": 1000.0 / steps_per_second,
        "reference_seconds_per_1000_steps": reference,
        # reference steps/s = 1000 / reference seconds
        "speedup_per_seed": None if reference is None else steps_per_second * reference / 1000.0,
        "speedup_total": None
        if reference is None
        else steps_per_second * num_seeds * reference / 1000.0,
        "flops_per_step": flops,
        "timed_steps": length,
        "first_call_seconds": compile_seconds,
        "device": jax.devices()[0].device_kind,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("--quick", action="store_true", help="a subset, in under two minutes")
    parser.add_argument("--seconds", type=float, default=None, help="target time per measurement")
    args = parser.parse_args(argv)
    if args.quick:
        grid = [("mlp", 2, 1), ("mlp", 2, 20), ("ensemble+", 50, 1)]
    else:
        grid = [(a, d, s) for a in ("mlp", "ensemble+") for d in (2, 10, 50) for s in (1, 20)]
    seconds = args.seconds or (1.0 if args.quick else 3.0)
    if not args.json:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"# {jax.devices()[0].device_kind}, {os.cpu_count()} cpus, load average {load:.1f}")
        print(
            f"{'agent':10} {'d':>3} {'A':>5} {'S':>3} {'steps/s/seed':>12} {'steps/s':>10} "
            f"{'s/1000':>8} {'ref':>6} {'x ref':>6} {'x ref tot':>9} {'GFLOP/s':>8} {'roofline':>8} {'peak MiB':>9}"
        )
    for agent, d, num_seeds in grid:
        row = measure(agent, d, num_seeds, seconds)
        if args.json:
            print(json.dumps(row), flush=True)
            continue
        ref = row["reference_seconds_per_1000_steps"]
        print(
            f"{agent:10} {d:3d} {row['num_actions']:5d} {num_seeds:3d} "
            f"{row['steps_per_second_per_seed']:12.1f} {row['steps_per_second_total']:10.1f} "
            f"{row['seconds_per_1000_steps']:8.3f} {ref if ref else float('nan'):6.2f} "
            f"{row['speedup_per_seed'] or float('nan'):6.1f} {row['speedup_total'] or float('nan'):9.1f} "
            f"{row['gflops']:8.1f} "
            f"{row['roofline_gflops']:8.1f} {row['peak_memory_mib']:9.0f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
