"""Executors: run a grid's unfinished cells in-process, in local worker processes or
as Ray tasks.

:func:`run_cells` skips finished cells, computes the others with a caller-supplied
``compute_fn(cell) -> DataFrame`` (in-process, in ``workers`` spawned processes, or
as Ray tasks), writes each one to the store as soon as it finishes and returns the
rows of all requested cells in cell order.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

import pandas as pd

from decision_bench._src import worker as worker_module
from decision_bench._src.devices import usable_cores
from decision_bench._src.console import RunFailed
from decision_bench._src.extras import require_extra
from decision_bench._src.files import write_results_csv
from decision_bench._src.validation import repeated
from decision_bench._src.worker import describe_exit, read_message, write_message
from decision_bench.experiments.cells import Cell
from decision_bench.experiments.estimate import LONG_RUN_SECONDS, estimate_cells
from decision_bench.experiments.store import ResultsStore, concat_tables, edit_notes

EXECUTORS = ("local", "ray")
# How long a Ray address may take to accept a connection, and Ray to answer on
# it (Ray spends a few of these before giving up), before the run stops with one line.
RAY_CONNECT_TIMEOUT_S = 10.0
# JAX settings a worker process copies from its parent, so that it reads and writes
# the same persistent compilation cache (see decision_bench._src.compile_cache).
_INHERITED_JAX_SETTINGS = (
    "jax_compilation_cache_dir",
    "jax_persistent_cache_min_compile_time_secs",
    "jax_persistent_cache_min_entry_size_bytes",
    "jax_enable_x64",
)


def run_cells(
    cells: Sequence[Cell],
    compute_fn: Callable[[Cell], pd.DataFrame],
    store: ResultsStore,
    executor: str = "local",
    address: str | None = None,
    progress: bool = True,
    workers: int = 1,
    on_cell_done: Callable[[Cell, pd.DataFrame], None] | None = None,
    cost: Callable[[Cell], float] | None = None,
    *,
    results_csv: Path | None = None,
    announce: bool = False,
    host_agents: tuple[str, ...] = (),
    desc: str = "cells",
    unit: str = "cell",
    describe: Callable[[Cell], str] | None = None,
) -> pd.DataFrame:
    """Computes every cell not yet in `store`, writing each as it finishes.

    Args:
      cells: the grid; ids must be unique.
      compute_fn: cell -> DataFrame of that cell's rows. For the Ray executor it
        must be picklable (cloudpickle: closures are fine, open handles are not).
      store: where finished cells live; finished cells are skipped, corrupt ones
        are reported and recomputed.
      executor: "local" (in this process, one cell at a time) or "ray" (one Ray
        task per cell, on the cluster at `address`, or a local instance; the
        workers must be able to import decision_bench and compute_fn's module).
        If Ray is already initialised, that instance is used and left running.
      address: Ray cluster address (e.g. "auto" or "ray://host:10001"); only for
        executor="ray". None starts a local instance unless Ray is already up.
      progress: show a tqdm bar (cells done / total, rate and time left).
      workers: with executor="local", how many cells run at once: 1 computes them in
        this process; N > 1 starts N worker processes (spawned, each with its own
        JAX, sharing this process's persistent compilation cache) and needs a
        compute_fn that pickles with the standard pickle. Every cell is computed
        from its own keys, so the rows do not depend on the number of workers.
      on_cell_done: called in this process with (cell, rows) after each computed
        cell is stored (e.g. to rewrite a results file that grows with the run).
      cost: cell -> its expected cost (any sortable value, e.g. ``experiments.estimate.cell_seconds``).
        Where cells run at once (worker processes, Ray) the costliest start first, so
        that no long cell is left to run alone at the end while the other cores idle;
        None keeps the grid's order. Which cell runs where never changes its rows.
      results_csv: rewritten after each computed cell with the rows of every finished
        cell, in cell order (atomically, with its checksum: ``analyze`` may read it
        while the run goes on); the caller writes the finished run's file.
      announce: before computing, print to stderr the store's edit notes
        (``store.edit_notes``), how many cells are already done, and the estimate
        (``experiments.estimate``) when the run is long or runs ``host_agents``
        (agent-file names whose cost cannot be estimated).
      desc, unit, describe: the progress bar's label, its unit, and the text shown
        for the cell being computed (default: the start of its id).

    Returns:
      The rows of all `cells`, in cell order (the order does not depend on the
      order cells finished in).

    An exception raised by compute_fn propagates after the cells that already
    finished have been written, so re-running resumes from there. A worker
    process that dies (killed, out of memory) raises :class:`WorkerDied`, a
    ``RunFailed`` whose one-line message names the worker, the cell, how it died
    and where the finished cells are saved.
    """
    cells = tuple(cells)
    for i, cell in enumerate(cells):
        if not isinstance(cell, Cell):
            raise ValueError(f"cells[{i}] must be a Cell, got {type(cell).__name__}")
    if duplicates := repeated(c.id for c in cells):
        raise ValueError(f"cells contain duplicates: {duplicates[:5]}")
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {list(EXECUTORS)}, got {executor!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    if workers > 1 and executor != "local":
        raise ValueError(f"workers is only used with executor='local', got workers={workers}")
    if address is not None and executor != "ray":
        raise ValueError(f"address is only used with executor='ray', got address={address!r}")
    if not callable(compute_fn):
        raise ValueError(f"compute_fn must be callable, got {compute_fn!r}")

    if announce:
        for line in edit_notes(store, cells):
            print(line, file=sys.stderr)
    # Each cell's stored rows, or None for a cell to compute (a corrupt file is warned
    # about by the store and recomputed).
    finished = [store.read(c) for c in cells]
    todo = [c for c, rows in zip(cells, finished) if rows is None]
    if announce:
        _announce(cells, todo, store, host_agents)
    concurrent = executor == "ray" or (workers > 1 and len(todo) > 1)
    if cost is not None and concurrent:
        # Longest first (a stable sort: equal costs keep the grid's order).
        todo = sorted(todo, key=cost, reverse=True)
    position = {c.id: i for i, c in enumerate(cells)}
    bar = _progress_bar(len(cells), len(cells) - len(todo), progress, desc, unit)
    try:
        if todo:
            def save(cell: Cell, frame: pd.DataFrame) -> None:
                store.write(cell, frame)
                finished[position[cell.id]] = frame
                if results_csv is not None:
                    write_results_csv(results_csv, concat_tables([rows for rows in finished if rows is not None]))
                if on_cell_done is not None:
                    on_cell_done(cell, frame)

            label = describe or (lambda cell: cell.id[:40])
            if executor == "local" and (workers == 1 or len(todo) == 1):
                _run_local(todo, compute_fn, save, bar, label)
            elif executor == "local":
                _run_processes(todo, compute_fn, save, bar, min(workers, len(todo)), store.directory)
            else:
                _run_ray(todo, compute_fn, save, bar, address)
    finally:
        bar.close()
    return store.load(cells)


def _announce(cells: Sequence[Cell], todo: Sequence[Cell], store: ResultsStore, host_agents: tuple[str, ...]) -> None:
    """What a command says before it computes: cells already done, and the estimate
    when the run is long or includes agents whose cost cannot be estimated."""
    done = len(cells) - len(todo)
    if done:
        print(f"resuming: {done} of {len(cells)} cells already done in {store.directory}", file=sys.stderr)
    estimate = estimate_cells(todo, host_agents=host_agents)
    if estimate.wall_seconds >= LONG_RUN_SECONDS or {c.agent for c in todo} & set(host_agents):
        print(estimate.line(), file=sys.stderr)


class WorkerDied(RunFailed):
    """A worker process ended while computing a cell (the cell is lost, the
    finished ones are saved)."""


def default_workers(limit: int = 4) -> int:
    """Worker processes for a local run: the cores this process may use, at most
    ``limit`` (each worker's XLA also spreads its larger operations over threads)."""
    return max(1, min(usable_cores(), limit))


def _progress_bar(total: int, initial: int, enabled: bool, desc: str, unit: str):
    from tqdm.auto import tqdm

    # tqdm's rate (hence the time left) counts only cells done in this run, so a
    # resumed run does not claim the skipped cells took no time.
    return tqdm(total=total, initial=initial, disable=not enabled, unit=unit, desc=desc)


def _run_local(todo, compute_fn, save, bar, label: Callable[[Cell], str]) -> None:
    for cell in todo:
        # Shown at once: a cell can take minutes, and the bar should name the one running.
        bar.set_postfix_str(label(cell))
        save(cell, compute_fn(cell))
        bar.update(1)


def _jax_settings() -> dict[str, Any]:
    import jax  # noqa: PLC0415 - only the process-pool path needs it here

    return {name: getattr(jax.config, name) for name in _INHERITED_JAX_SETTINGS}


def _worker_settings(workers: int) -> dict[str, Any]:
    """The JAX settings of each of ``workers`` worker processes: the parent's inherited
    ones and, where the parent asked for several CPU devices (``_src/devices.py``; the
    ``decision-bench`` program asks for one per core), a share of them, at least one:
    2 cores and 2 workers give each worker 1 device, 16 cores and 4 workers give 4,
    over which each worker spreads its cell's seeds."""
    import jax  # noqa: PLC0415 - only the process-pool path needs it here

    settings = _jax_settings()
    asked = int(jax.config.jax_num_cpu_devices)
    if asked > 1:
        settings["jax_num_cpu_devices"] = max(1, asked // workers)
    return settings


def _run_processes(todo, compute_fn, save, bar, workers: int, store_directory) -> None:
    try:
        payload = pickle.dumps(compute_fn)
    except Exception as err:  # pickling raises several types, all with the same meaning here
        raise ValueError(
            f"compute_fn must pickle (standard pickle) to run with workers > 1: {err}"
        ) from err
    jobs = iter(enumerate(todo))
    jobs_lock = threading.Lock()
    results: queue.Queue = queue.Queue()
    pool = [_WorkerProcess(_worker_settings(workers)) for _ in range(workers)]

    def feed(worker: "_WorkerProcess") -> None:
        # One thread per worker: hand it the next cell whenever it is free.
        try:
            while True:
                with jobs_lock:
                    job = next(jobs, None)
                if job is None:
                    return
                index, cell = job
                outcome = worker.compute(payload, cell)
                results.put((index, outcome))
                if isinstance(outcome, _Died):
                    return
        except BaseException as err:  # noqa: BLE001 - carried to the main thread
            results.put((None, err))

    threads = [threading.Thread(target=feed, args=(w,), daemon=True) for w in pool]
    finished = 0
    try:
        for thread in threads:
            thread.start()
        for _ in todo:
            index, outcome = results.get()
            if isinstance(outcome, _Died):
                raise WorkerDied(
                    f"worker process {outcome.pid} died ({outcome.how}) while computing cell "
                    f"{outcome.cell.id}; the finished cells ({finished} in this run) are saved in "
                    f"{store_directory}: run the same command again to resume"
                )
            if index is None:
                raise outcome
            save(todo[index], outcome)
            finished += 1
            bar.update(1)
    finally:
        # On an error or an interrupt the cells already written stay; the rest stop.
        for worker in pool:
            worker.stop()


class _Died(NamedTuple):
    pid: int
    how: str  # describe_exit's words
    cell: Cell


class _WorkerProcess:
    """One worker: a fresh interpreter running decision_bench/_src/worker.py.

    Jobs and results travel as length-prefixed pickles over the worker's stdin and
    stdout (its own prints go to stderr). It runs in a session of its own, so a
    Ctrl-C at the terminal reaches only the parent, which stops it; on Linux it
    also ends when the parent dies (kill -9 included).
    """

    def __init__(self, settings: dict[str, Any]):
        self.process = subprocess.Popen(
            [sys.executable, "-I", worker_module.__file__, str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        # The parent's import path too, so compute_fn unpickles in the worker as it
        # would here (multiprocessing's spawn does the same).
        write_message(self.process.stdin, (list(sys.path), settings))

    def compute(self, payload: bytes, cell: Cell) -> pd.DataFrame:
        """The cell's rows; re-raises the worker's exception; a ``_Died`` record
        (returned, not raised) when the worker process ended."""
        try:
            write_message(self.process.stdin, (payload, cell))
            ok, value = read_message(self.process.stdout)
        except (EOFError, OSError):  # a closed pipe: the worker is gone
            return self._died(cell)
        if not ok:
            raise value
        return value

    def _died(self, cell: Cell) -> "_Died":
        try:
            # Its end of the pipe is closed: it has exited or is about to.
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        return _Died(self.process.pid, describe_exit(self.process.returncode), cell)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:  # a broken pipe to a killed worker
                pass


def _import_ray():
    require_extra("ray", "executor='ray'")
    import ray  # noqa: PLC0415 - optional dependency

    return ray


def _call(compute_fn, cell):
    # Module-level so Ray pickles it by reference; compute_fn travels by value.
    return compute_fn(cell)


def _host_and_port(address: str) -> tuple[str, int] | None:
    """("host", port) of "host:port" or "ray://host:port"; None for "auto" and
    other forms Ray resolves itself."""
    text = address.strip()
    if "://" in text:
        text = text.split("://", 1)[1]
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _check_reachable(address: str, timeout: float = RAY_CONNECT_TIMEOUT_S) -> None:
    """Raises RunFailed, within ``timeout`` seconds, when nothing answers at the
    Ray address: ray.init itself retries an unreachable cluster for minutes.
    A plain TCP connection with a deadline: no thread is left waiting."""
    import socket  # noqa: PLC0415 - only the Ray path needs it

    target = _host_and_port(address)
    if target is None:
        return
    try:
        socket.create_connection(target, timeout=timeout).close()
    except OSError as error:
        if isinstance(error, TimeoutError):
            reason = f"no answer within {timeout:g} s"
        else:
            reason = (error.strerror or str(error)).lower()
        raise RunFailed(
            f"cannot reach the Ray cluster at --address {address!r} ({reason}): check the address "
            "and that the cluster is up, or leave --address out to start a local Ray instance"
        ) from None


@contextlib.contextmanager
def _bounded_ray_connect(address: str | None):
    """While connecting to a cluster: one connection attempt of at most
    RAY_CONNECT_TIMEOUT_S (Ray's own defaults retry an address that accepts
    connections but is no Ray for minutes). Ray reads these environment variables
    as it connects; a value the user set wins; they are restored afterwards."""
    if address is None:
        yield
        return
    settings = {
        "RAY_gcs_server_port_wait_time_s": "1",  # attempts (one a second at most)
        "RAY_py_gcs_connect_timeout_s": str(int(RAY_CONNECT_TIMEOUT_S)),
    }
    added = [name for name in settings if name not in os.environ]
    os.environ.update({name: settings[name] for name in added})
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def _run_ray(todo, compute_fn, save, bar, address) -> None:
    ray = _import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        # A local instance needs no dashboard; a cluster keeps its own settings
        # (and "ray://" client connections reject start-up options).
        options = {"include_dashboard": False} if address is None else {}
        if address is not None:
            _check_reachable(address)
        began = time.monotonic()
        try:
            with _bounded_ray_connect(address):
                ray.init(address=address, **options)
        except (ConnectionError, RuntimeError) as error:
            if address is None:
                raise
            raise RunFailed(
                f"cannot connect to the Ray cluster at --address {address!r} (no Ray answered; gave up "
                f"after {time.monotonic() - began:.0f} s: {str(error).splitlines()[0]}); check the address "
                "and that the cluster is up, or leave --address out to start a local Ray instance"
            ) from None
    try:
        remote_call = ray.remote(_call)
        fn_ref = ray.put(compute_fn)  # shipped once, not once per task
        pending = {remote_call.remote(fn_ref, cell): cell for cell in todo}
        try:
            while pending:
                # The driver writes each result as soon as its task finishes, so an
                # interrupted Ray run keeps everything that completed.
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    cell = pending.pop(ref)
                    save(cell, ray.get(ref))
                    bar.update(1)
        finally:
            for ref in pending:
                ray.cancel(ref)
    finally:
        if started_here:
            ray.shutdown()
