"""Benchmark of the compiled bandit loop (issues 5 and 25, "Performance").

    python bench/bandit.py [--json] [--quick] [--devices N] [--repeats K] [--seconds S]
                           [--agents mlp,ensemble+] [--dims 2,10,50] [--seeds 1,20]

For mlp and ensemble+ (paper defaults: 100 members) on NeuralBandit-v0 with
d in {2, 10, 50} and 20 d actions, Thompson sampling with one Adam step on a
batch of 128 per observation, it reports per row (agent, d, S seeds):

- seconds per 1000 steps of all S seeds: the median of K timed chunks and their
  range (min-max), each chunk sized to take about S seconds; steps per second
  per seed and summed over the seeds;
- the devices the seeds ran on: the CPU backend is made one device per core
  (``--devices``, default: the usable cores; ``_src/devices.py``) and the seeds
  are spread over as many devices as divide S, as ``run_bandit`` does;
- achieved GFLOP/s: FLOPs of one step of all S seeds times the measured steps
  per second;
- roofline GFLOP/s, and the achieved fraction of it (below).

The roofline model. FLOPs per step are XLA's cost analysis of the compiled step
(forward over the action set, forward and backward on the batch, Adam, sampling;
elementwise work included), compiled for the S seeds on one device. For mlp at
d = 2 (40 actions) this is 2.67 MFLOP per seed-step; a hand count of its
matmuls gives 2.3 MFLOP (forward and backward of 128 x (2-50-50-2): three
128 x 50 x 50 products of 0.64 MFLOP each, plus the 2-wide layers, plus the
forward of 40 actions, 0.22 MFLOP). The roofline is what this process reaches on
the loop's dominant shape, a chain of dense batched matmuls
[S*M, 128, 50] @ [S*M, 50, 50] (M members), placed on the same devices as the
row's seeds: the machine's peak for these shapes, with the work split as the
loop splits it. On a 2-core AMD EPYC (2026-11-25) one device reaches about
120-125 GFLOP/s on it, pinned to one core or not; two devices twice that. The
"machine" column is the same matmul over every device the process has, where
the batch divides: a row whose seeds cannot use every device (one seed) reads
its fraction against its own devices and the machine's peak beside it.

On a GPU the same rows run (``--seeds 1,20,200,2000`` shows how far the seeds
scale), but that matmul is not the GPU's peak, so the roofline columns only model a
CPU core; docs/performance.md quotes GPU rows without them.

Timings exclude compilation: each configuration is compiled and run once,
then timed. The reference figures (``REFERENCE_SECONDS_PER_1000``) are
DeepMind's neural_testbed bandit on the same machine kind, measured in fresh
processes beside ours (bench/data/speed.csv has both, with dates and load).
Nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time

import jax
import jax.numpy as jnp

from decision_bench._src.devices import seed_devices, shard_seeds, use_cpu_cores
from decision_bench.bandit.loop import init_carries, make_loop, run_chunk

# DeepMind's reference bandit on the 2-core machine, s / 1000 steps of one seed: d = 2 and
# d = 50 measured beside ours on 2026-11-25 (bench/data/speed.csv, the median of 4 and 2
# fresh processes), the others in issue 5.
REFERENCE_SECONDS_PER_1000 = {
    ("mlp", 2): 0.52,
    ("mlp", 10): 0.55,
    ("ensemble+", 2): 7.5,
    ("ensemble+", 10): 9.0,
    ("ensemble+", 50): 26.1,
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
    """FLOPs of one step of all seeds, from XLA's cost analysis of the step compiled
    for one device (carry and params unplaced: the count of the whole step)."""
    compiled = jax.jit(lambda c, p: jax.vmap(loop.step)(c, p)).lower(carry, params).compile()
    cost = compiled.cost_analysis()
    if isinstance(cost, list):  # older JAX returned one dict per computation
        cost = cost[0]
    return float(cost.get("flops", float("nan")))


def matmul_roofline_gflops(batch: int, seconds: float, devices: int = 1) -> float:
    """GFLOP/s of [batch, 128, 50] @ [batch, 50, 50], chained in a compiled loop, the
    batch spread over ``devices`` local devices (which must divide it)."""
    a = jax.random.normal(jax.random.key(0), (batch, BATCH, HIDDEN), jnp.float32)
    # Orthogonal factors keep the chained product's scale fixed (no overflow or
    # denormals), so the loop times nothing but the matmuls.
    w, _ = jnp.linalg.qr(jax.random.normal(jax.random.key(1), (batch, HIDDEN, HIDDEN), jnp.float32))
    if devices > 1:
        mesh = jax.sharding.Mesh(jax.local_devices()[:devices], ("seeds",))
        a, w = jax.device_put((a, w), jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("seeds")))

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


def measure(agent: str, d: int, num_seeds: int, seconds: float, repeats: int) -> dict:
    env_kwargs = {"input_dim": d, "num_actions": 20 * d, "temperature": 0.1}
    loop, _ = make_loop(agent, "NeuralBandit-v0", env_kwargs=env_kwargs)
    seeds = jnp.arange(num_seeds, dtype=jnp.int32)
    carry, params = init_carries(loop, seeds)
    flops = step_flops(loop, carry, params)
    # Placed as run_bandit places them: the seeds over the devices that divide S.
    carry, params = shard_seeds((carry, params), num_seeds)
    devices = seed_devices(num_seeds)
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
    length = int(min(20000, max(20, seconds / per_step)))
    carry, out = run_chunk(loop, carry, params, length)  # compile this length
    jax.block_until_ready(out)
    chunk_seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        carry, out = run_chunk(loop, carry, params, length)
        jax.block_until_ready(out)
        chunk_seconds.append(time.perf_counter() - start)
    per_1000 = sorted(1000.0 * c / length for c in chunk_seconds)
    median = statistics.median(per_1000)
    steps_per_second = 1000.0 / median
    members = _members(agent)
    roofline = matmul_roofline_gflops(num_seeds * members, seconds, devices)
    machine = seed_devices(num_seeds * members)  # every device, where they divide the batch
    machine_peak = roofline if machine == devices else matmul_roofline_gflops(num_seeds * members, seconds, machine)
    gflops = flops * steps_per_second / 1e9
    reference = REFERENCE_SECONDS_PER_1000.get((agent, d))
    return {
        "agent": agent,
        "input_dim": d,
        "num_actions": 20 * d,
        "num_seeds": num_seeds,
        "devices": devices,
        "seconds_per_1000_steps": median,
        "seconds_per_1000_steps_min": per_1000[0],
        "seconds_per_1000_steps_max": per_1000[-1],
        "repeats": repeats,
        "steps_per_second_per_seed": steps_per_second,
        "steps_per_second_total": steps_per_second * num_seeds,
        "gflops": gflops,
        "roofline_gflops": roofline,
        "roofline_fraction": gflops / roofline,
        "machine_devices": machine,
        "machine_roofline_gflops": machine_peak,
        "machine_fraction": gflops / machine_peak,
        "peak_memory_mib": peak_memory_mib(),
        "reference_seconds_per_1000_steps": reference,
        # reference steps/s = 1000 / reference seconds
        "speedup_per_seed": None if reference is None else steps_per_second * reference / 1000.0,
        "speedup_total": None if reference is None else steps_per_second * num_seeds * reference / 1000.0,
        "flops_per_step": flops,
        "timed_steps": length,
        "first_call_seconds": compile_seconds,
        "device": jax.devices()[0].device_kind,
        "local_devices": jax.local_device_count(),
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


def _counts(flag: str, text: str, parser: argparse.ArgumentParser) -> list[int]:
    """Positive integers from "1,20,200"; a parser error naming the flag otherwise."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        parser.error(f"{flag} must be comma-separated integers >= 1, got {text!r}")
    return values


def _names(flag: str, text: str, accepted: tuple[str, ...], parser: argparse.ArgumentParser) -> list[str]:
    names = text.split(",")
    unknown = [n for n in names if n not in accepted]
    if unknown:
        parser.error(f"{flag}: unknown {unknown[0]!r}; accepted: {','.join(accepted)}")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("--quick", action="store_true", help="a subset (mlp 1 and 20 seeds at d = 2, ensemble+ at d = 50)")
    parser.add_argument("--seconds", type=float, default=None, help="target time per timed chunk (default 1, 3 without --quick)")
    parser.add_argument("--repeats", type=int, default=5, help="timed chunks per row (default 5): the median and range are reported")
    parser.add_argument("--agents", default=None, help="comma-separated agents (default: mlp,ensemble+)")
    parser.add_argument("--dims", default=None, help="comma-separated input dimensions d (default: 2,10,50)")
    parser.add_argument("--seeds", default=None,
                        help="comma-separated seed counts S, each one vmapped program (default: 1,20); "
                             "e.g. 1,20,200,2000 on a GPU")
    parser.add_argument("--devices", type=int, default=None,
                        help="CPU devices to ask for (default: one per usable core; 1 = JAX's default)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    if args.devices is not None and args.devices < 1:
        parser.error(f"--devices must be >= 1, got {args.devices}")
    use_cpu_cores(args.devices)  # before the first computation: JAX reads it once
    chosen = [args.agents, args.dims, args.seeds]
    if args.quick and any(chosen):
        parser.error("--quick is a fixed grid: leave out --agents, --dims and --seeds, or --quick")
    agents = _names("--agents", args.agents or "mlp,ensemble+", ("mlp", "ensemble+"), parser)
    dims = _counts("--dims", args.dims or "2,10,50", parser)
    seed_counts = _counts("--seeds", args.seeds or "1,20", parser)
    if args.quick:
        grid = [("mlp", 2, 1), ("mlp", 2, 20), ("ensemble+", 50, 1)]
    else:
        grid = [(a, d, s) for a in agents for d in dims for s in seed_counts]
    seconds = args.seconds or (1.0 if args.quick else 3.0)
    if not args.json:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"# {jax.devices()[0].device_kind}, {os.cpu_count()} cpus, {jax.local_device_count()} devices, "
              f"load average {load:.1f}; s/1000: median [min, max] of {args.repeats} chunks")
        print(
            f"{'agent':10} {'d':>3} {'A':>5} {'S':>3} {'dev':>3} {'s/1000':>7} {'[min, max]':>15} {'steps/s':>9} "
            f"{'ref':>6} {'x ref':>6} {'x ref tot':>9} {'GFLOP/s':>8} {'roofline':>8} {'frac':>5} "
            f"{'machine':>8} {'frac':>5} {'peak MiB':>8}"
        )
    for agent, d, num_seeds in grid:
        row = measure(agent, d, num_seeds, seconds, args.repeats)
        if args.json:
            print(json.dumps(row), flush=True)
            continue
        ref = row["reference_seconds_per_1000_steps"]
        spread = f"[{row['seconds_per_1000_steps_min']:.3f}, {row['seconds_per_1000_steps_max']:.3f}]"
        print(
            f"{agent:10} {d:3d} {row['num_actions']:5d} {num_seeds:3d} {row['devices']:3d} "
            f"{row['seconds_per_1000_steps']:7.3f} {spread:>15} {row['steps_per_second_total']:9.1f} "
            f"{ref if ref else float('nan'):6.2f} {row['speedup_per_seed'] or float('nan'):6.1f} "
            f"{row['speedup_total'] or float('nan'):9.1f} {row['gflops']:8.1f} {row['roofline_gflops']:8.1f} "
            f"{row['roofline_fraction']:5.2f} {row['machine_roofline_gflops']:8.1f} {row['machine_fraction']:5.2f} "
            f"{row['peak_memory_mib']:8.0f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
