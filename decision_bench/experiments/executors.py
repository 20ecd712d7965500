"""Executors: run a grid's unfinished cells in-process or as Ray tasks.

:func:`run_cells` skips finished cells, computes the others with a caller-supplied
``compute_fn(cell) -> DataFrame`` (in-process, or as Ray tasks), writes each one to
the store as soon as it finishes and returns the rows of all requested cells in
cell order.
"""

from __future__ import annotations

from typing import Callable, Sequence

import pandas as pd

from decision_bench.experiments.cells import Cell
from decision_bench.experiments.store import ResultsStore

RAY_INSTALL_HINT = "pip install 'decision-bench[ray]'"


def run_cells(
    cells: Sequence[Cell],
    compute_fn: Callable[[Cell], pd.DataFrame],
    store: ResultsStore,
    executor: str = "local",
    address: str | None = None,
    progress: bool = True,
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

    Returns:
      The rows of all `cells`, in cell order (the order does not depend on the
      order cells finished in).

    An exception raised by compute_fn propagates after the cells that already
    finished have been written, so re-running resumes from there.
    """
    cells = tuple(cells)
    for i, cell in enumerate(cells):
        if not isinstance(cell, Cell):
            raise ValueError(f"cells[{i}] must be a Cell, got {type(cell).__name__}")
    ids = [c.id for c in cells]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"cells contain duplicates: {duplicates[:5]}")
    if executor not in ("local", "ray"):
        raise ValueError(f"executor must be one of ['local', 'ray'], got {executor!r}")
    if address is not None and executor != "ray":
        raise ValueError(f"address is only used with executor='ray', got address={address!r}")
    if not callable(compute_fn):
        raise ValueError(f"compute_fn must be callable, got {compute_fn!r}")

    todo = [c for c in cells if not store.is_done(c)]
    bar = _progress_bar(total=len(cells), initial=len(cells) - len(todo), enabled=progress)
    try:
        if todo:
            if executor == "local":
                _run_local(todo, compute_fn, store, bar)
            else:
                _run_ray(todo, compute_fn, store, bar, address)
    finally:
        bar.close()
    return store.load(cells)


def _progress_bar(total: int, initial: int, enabled: bool):
    from tqdm.auto import tqdm

    # tqdm's rate (hence the time left) counts only cells done in this run, so a
    # resumed run does not claim the skipped cells took no time.
    return tqdm(total=total, initial=initial, disable=not enabled, unit="cell", desc="cells")


def _run_local(todo, compute_fn, store, bar) -> None:
    for cell in todo:
        bar.set_postfix_str(cell.id[:40], refresh=False)
        store.write(cell, compute_fn(cell))
        bar.update(1)


def _import_ray():
    try:
        import ray  # noqa: PLC0415 - optional dependency
    except ImportError as err:
        raise ImportError(
            f"executor='ray' needs Ray, which is not installed. Install it with: {RAY_INSTALL_HINT}"
        ) from err
    return ray


def _call(compute_fn, cell):
    # Module-level so Ray pickles it by reference; compute_fn travels by value.
    return compute_fn(cell)


def _run_ray(todo, compute_fn, store, bar, address) -> None:
    ray = _import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        # A local instance needs no dashboard; a cluster keeps its own settings
        # (and "ray://" client connections reject start-up options).
        options = {"include_dashboard": False} if address is None else {}
        ray.init(address=address, **options)
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
                    store.write(cell, ray.get(ref))
                    bar.update(1)
        finally:
            for ref in pending:
                ray.cancel(ref)
    finally:
        if started_here:
            ray.shutdown()
