"""Counts XLA compilations and the seconds they take, cold and warm, for `make demo`
and the paper2d mlp testbed sweep.

    python bench/compile.py [--workloads demo,paper2d] [--quick] [--json]

Each workload runs in two fresh processes that share one persistent compilation
cache directory (a new, empty temporary one per workload):

  cold  the first process: an empty cache, every program is compiled and stored;
  warm  a second process with the same cache: what a second `make demo` costs.

Each process starts its work from scratch (its own output directory), so the warm
run recomputes everything and differs from the cold one only by the cache.

Figures per process (JAX's own monitoring events, see COMPILE_SPAN_EVENTS):

  compilations  XLA compilations: backend-compile events minus persistent-cache hits
  cache hits    programs loaded from the persistent cache instead of compiled
  compile s     wall seconds inside tracing, lowering and XLA compilation or cache
                loading (the union of JAX's time spans, so nested traces count once)
  xla s         of which the backend step: XLA compilation or loading from the cache
  compute s     total s - compile s (running programs, data handling, analysis)
  total s       wall seconds of the workload, after imports
  cpu s         CPU seconds of the process over the same span, all threads: less
                sensitive than wall seconds to other jobs sharing the cores
  import s      seconds to import JAX and decision_bench (not in total s)

Workloads:

  demo     ``reproduce("demo")`` with ``--workers auto``: what ``make demo`` runs
           (testbed, bandit and analysis, its cells spread over worker processes).
           The compilations happen in the workers, which the listeners here do not
           see: compile figures are n/a, and cpu s includes the workers.
  demo1    the same in this one process (workers = 1), so that every compilation
           is counted.
  paper2d  ``run_testbed("mlp", "paper2d")``: 21 settings x tau {1, 10} x 10 seeds.
           With --quick, 2 of the 10 seeds: the same programs (seeds are vmapped,
           so compilation does not depend on their number), a fifth of the compute.

The figures depend on the machine and on what else runs on it; the script makes
no assertions. With --json, one JSON line per process instead of the table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKLOADS = ("demo", "demo1", "paper2d")
QUICK_SEEDS = 2

# Event names in JAX 0.10 (jax/_src/dispatch.py, compiler.py, compilation_cache.py).
BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"  # also fires on a cache hit
COMPILE_SPAN_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    BACKEND_COMPILE,
)
CACHE_HITS = "/jax/compilation_cache/cache_hits"
CACHE_MISSES = "/jax/compilation_cache/cache_misses"


# --------------------------------------------------------------------------- child


class CompileRecorder:
    """Collects JAX's monitoring events: counts, summed durations, compile time spans."""

    def __init__(self):
        self.counts: dict[str, int] = {}
        self.seconds: dict[str, float] = {}
        self.spans: list[tuple[float, float]] = []

    def install(self) -> None:
        import jax  # noqa: PLC0415 - the parent process never needs JAX

        jax.monitoring.register_event_listener(self._on_event)
        jax.monitoring.register_event_duration_secs_listener(self._on_duration)
        jax.monitoring.register_event_time_span_listener(self._on_span)

    def _on_event(self, event: str, **kwargs) -> None:
        self.counts[event] = self.counts.get(event, 0) + 1

    def _on_duration(self, event: str, duration_secs: float, **kwargs) -> None:
        self.counts[event] = self.counts.get(event, 0) + 1
        self.seconds[event] = self.seconds.get(event, 0.0) + duration_secs

    def _on_span(self, event: str, start_time: float, end_time: float, **kwargs) -> None:
        if event in COMPILE_SPAN_EVENTS:
            self.spans.append((start_time, end_time))

    def summary(self) -> dict:
        backend = self.counts.get(BACKEND_COMPILE, 0)
        hits = self.counts.get(CACHE_HITS, 0)
        return {
            "compilations": backend - hits,
            "cache_hits": hits,
            "cache_misses": self.counts.get(CACHE_MISSES, 0),
            "compile_seconds": round(union_seconds(self.spans), 2),
            "xla_seconds": round(self.seconds.get(BACKEND_COMPILE, 0.0), 2),
            "events": {
                name: {"count": n, "seconds": round(self.seconds[name], 3)} if name in self.seconds else {"count": n}
                for name, n in sorted(self.counts.items())
            },
        }


def union_seconds(spans: list[tuple[float, float]]) -> float:
    """Total length of the union of [start, end] intervals."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def workload_workers(name: str) -> int:
    """Worker processes a workload runs its cells in: "demo" as ``make demo`` does
    (``--workers auto``), "demo1" in this one process (so every compilation is seen)."""
    if name == "demo":
        from decision_bench.experiments.executors import default_workers  # noqa: PLC0415

        return default_workers()
    return 1


def run_workload(name: str, quick: bool, out: Path) -> None:
    if name in ("demo", "demo1"):
        from decision_bench.cli.reproduce import reproduce  # noqa: PLC0415

        reproduce("demo", out=out / "demo", progress=False, workers=workload_workers(name))
    else:
        from decision_bench.evaluation import run_testbed  # noqa: PLC0415

        run_testbed("mlp", "paper2d", QUICK_SEEDS if quick else None, progress=False)


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children (the workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def child(workload: str, quick: bool, cache_dir: Path, result_file: Path) -> None:
    """One measured process: writes its figures as JSON to result_file."""
    started = time.perf_counter()
    # Listeners before decision_bench is imported, so nothing compiled at import
    # time could escape them.
    recorder = CompileRecorder()
    recorder.install()
    from decision_bench._src.compile_cache import enable_compile_cache  # noqa: PLC0415

    if enable_compile_cache(cache_dir) is None:
        raise SystemExit(f"cannot use {cache_dir} as the compilation cache")
    import decision_bench.evaluation  # noqa: F401, PLC0415 - counted as import time
    import decision_bench.cli.reproduce  # noqa: F401, PLC0415

    imported, cpu_start = time.perf_counter(), _cpu_seconds()
    with tempfile.TemporaryDirectory(prefix="compile-bench-out-") as out:
        run_workload(workload, quick, Path(out))
    finished, cpu_end = time.perf_counter(), _cpu_seconds()
    figures = recorder.summary()
    total = finished - imported
    workers = workload_workers(workload)
    if workers > 1:
        # The compilations happened in the worker processes, out of the listeners' sight.
        for key in ("compilations", "cache_hits", "cache_misses", "compile_seconds", "xla_seconds"):
            figures[key] = None
    compiling = figures["compile_seconds"]
    figures.update(
        workers=workers,
        total_seconds=round(total, 2),
        compute_seconds=None if compiling is None else round(total - compiling, 2),
        cpu_seconds=round(cpu_end - cpu_start, 2),
        import_seconds=round(imported - started, 2),
    )
    result_file.write_text(json.dumps(figures))


# --------------------------------------------------------------------------- parent


def measure(workload: str, quick: bool) -> list[dict]:
    """Runs `workload` cold then warm in two fresh processes; one dict per process."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="compile-bench-cache-") as cache:
        for process in ("cold", "warm"):
            with tempfile.NamedTemporaryFile(suffix=".json") as result:
                command = [sys.executable, __file__, "--child", workload, "--cache-dir", cache,
                           "--result", result.name] + (["--quick"] if quick else [])  # fmt: skip
                done = subprocess.run(command, capture_output=True, text=True)
                if done.returncode != 0:
                    sys.stderr.write(done.stdout + done.stderr)
                    raise SystemExit(f"the {process} {workload} process failed ({done.returncode})")
                figures = json.loads(Path(result.name).read_text())
            cache_files = sum(1 for p in Path(cache).iterdir() if p.is_file())
            rows.append({"workload": workload, "process": process, "quick": quick,
                         "cache_files": cache_files, **figures})  # fmt: skip
    return rows


COLUMNS = (
    ("workload", "workload", "{}"),
    ("process", "process", "{}"),
    ("workers", "workers", "{:d}"),
    ("compilations", "compilations", "{:d}"),
    ("cache_hits", "cache hits", "{:d}"),
    ("compile_seconds", "compile s", "{:.1f}"),
    ("xla_seconds", "xla s", "{:.1f}"),
    ("compute_seconds", "compute s", "{:.1f}"),
    ("total_seconds", "total s", "{:.1f}"),
    ("cpu_seconds", "cpu s", "{:.1f}"),
    ("import_seconds", "import s", "{:.1f}"),
)


def print_table(rows: list[dict]) -> None:
    cells = [[label for _, label, _ in COLUMNS]]
    cells += [["n/a" if row[key] is None else fmt.format(row[key]) for key, _, fmt in COLUMNS] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    for line in cells:
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))))


def print_events(rows: list[dict]) -> None:
    print("\nJAX monitoring events seen (count, summed seconds where JAX reports a duration):")
    for row in rows:
        print(f"  {row['workload']} {row['process']}:")
        for name, info in row["events"].items():
            seconds = f", {info['seconds']:.2f} s" if "seconds" in info else ""
            print(f"    {name}: {info['count']}{seconds}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0].replace("\n", " "),
        epilog="\n\n".join(__doc__.split("\n\n")[2:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help=f"comma-separated, from {', '.join(WORKLOADS)} (default: all)")  # fmt: skip
    parser.add_argument("--quick", action="store_true",
                        help=f"paper2d with {QUICK_SEEDS} of its 10 seeds (all 21 settings); demo is unchanged")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="one JSON line per process instead of the table")
    parser.add_argument("--child", choices=WORKLOADS, help=argparse.SUPPRESS)
    parser.add_argument("--cache-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.quick, args.cache_dir, args.result)
        return
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = sorted(set(workloads) - set(WORKLOADS))
    if unknown or not workloads:
        parser.error(f"--workloads must name some of {list(WORKLOADS)}, got {args.workloads!r}")
    if not args.json:
        import importlib.metadata  # noqa: PLC0415

        versions = ", ".join(f"{p} {importlib.metadata.version(p)}" for p in ("jax", "jaxlib"))
        print(f"{versions}; {os.cpu_count()} CPU cores; "
              f"paper2d: {'--quick, 2 of 10 seeds' if args.quick else 'all 10 seeds'}", flush=True)  # fmt: skip
    rows = []
    for workload in workloads:
        for row in measure(workload, args.quick):
            rows.append(row)
            if args.json:
                print(json.dumps(row), flush=True)
    if not args.json:
        print_table(rows)
        print_events(rows)


if __name__ == "__main__":
    main()
