"""The realdata cell: one agent on one real data set at one training size, all its seeds.

``RealdataCell`` is the typed form; ``RealdataCell.to_cell`` is its one encoding
as a store ``Cell`` (kind "realdata"), whose id names the stored file, and
``RealdataCell.from_cell`` reads it back. ``decision-bench testbed --sweep
realdata`` builds its cells with ``realdata_cells`` and computes them with
``compute_realdata_cell`` (as ``experiments.testbed_cell`` does for the testbed).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from decision_bench._src.files import sha256_hex
from decision_bench.data import BUNDLED, load_dataset, make_dataset_problem
from decision_bench.evaluation.realdata import run_realdata
from decision_bench.experiments.agent_files import AgentFile, current_make_agent
from decision_bench.experiments.cells import Cell, problem_of, store_cell

KIND = "realdata"


@dataclasses.dataclass(frozen=True)
class RealdataCell:
    """Everything one realdata cell's rows depend on.

    dataset: a bundled name or a .csv/.npz file; file_sha256: the SHA-256 of a
    data file's bytes (None for a bundled data set), so an edited file gets new
    cells rather than the old file's rows; num_train: the training size (None:
    the whole training split); designs: (tau, kappa) pairs; seeds: run together;
    num_test, num_models, method: as ``run_realdata``'s; agent_config: the
    agent's overrides; agent_file_sha256: the SHA-256 of a user's agent file.
    """

    agent: str
    dataset: str
    file_sha256: str | None
    num_train: int | None
    designs: tuple[tuple[int, int | None], ...]
    seeds: tuple[int, ...]
    num_test: int
    num_models: int
    method: str = "auto"
    agent_config: tuple = ()
    agent_file_sha256: str | None = None

    def to_cell(self) -> Cell:
        """The store's cell: its problem holds the data set, its file's digest, the
        training size, the designs as (tau, kappa) pairs, num_test, num_models and method."""
        problem = {
            "dataset": self.dataset,
            "file_sha256": self.file_sha256,
            "num_train": self.num_train,
            "designs": tuple(self.designs),
            "num_test": self.num_test,
            "num_models": self.num_models,
            "method": self.method,
        }
        return store_cell(KIND, self, problem)

    @classmethod
    def from_cell(cls, cell: Cell) -> RealdataCell:
        """The typed cell of a store cell in this encoding (ValueError otherwise)."""
        problem = problem_of(cell, KIND)
        try:
            return cls(
                agent=cell.agent,
                dataset=problem["dataset"],
                file_sha256=problem["file_sha256"],
                num_train=problem["num_train"],
                designs=tuple((tau, kappa) for tau, kappa in problem["designs"]),
                seeds=cell.seeds,
                num_test=problem["num_test"],
                num_models=problem["num_models"],
                method=problem["method"],
                agent_config=cell.agent_config,
                agent_file_sha256=cell.agent_file_sha256,
            )
        except KeyError as missing:
            raise ValueError(f"realdata cell {cell.id} lacks {missing}") from None


def realdata_cells(
    agents: Sequence[str],
    datasets: Sequence[str],
    sizes: Sequence[int | None],
    seeds: Sequence[int],
    designs: Sequence[tuple[int, int | None]],
    num_test: int,
    num_models: int,
    method: str,
    agent_configs: Mapping[str, Mapping[str, Any]] | None = None,
    agent_files: Sequence[AgentFile] = (),
) -> tuple[Cell, ...]:
    """One cell per (agent, data set, T) with all seeds, in ``run_realdata``'s row
    order; a T above a data set's training split is no cell (run_realdata skips it).
    agent_configs and agent_files: as ``experiments.testbed_cell.sweep_cells``.

    A data file's cell also holds the SHA-256 of its bytes: an edited file gets
    new cells rather than the old file's rows.
    """

    # (data set, its training split's size, its file's digest), loaded once.
    sources = []
    for dataset in datasets:
        data = load_dataset(dataset)
        available = make_dataset_problem(data, None, 1, None, seeds[0]).spec.num_train
        digest = None if dataset in BUNDLED else sha256_hex(Path(dataset).read_bytes())
        sources.append((dataset, available, digest))
    digests = {f.name: f.sha256 for f in agent_files}
    cells = []
    for agent in agents:
        for dataset, available, digest in sources:
            for size in sizes:
                if size is not None and size > available:
                    continue
                cells.append(RealdataCell(
                    agent=agent, dataset=dataset, file_sha256=digest, num_train=size, designs=tuple(designs),
                    seeds=tuple(seeds), num_test=num_test, num_models=num_models, method=method,
                    agent_config=tuple(dict((agent_configs or {}).get(agent, {})).items()),
                    agent_file_sha256=digests.get(agent),
                ).to_cell())
    return tuple(cells)


def compute_realdata_cell(cell: Cell, agent_files: Sequence[tuple[str, str]] = ()) -> pd.DataFrame:
    """The rows of one realdata cell: ``run_realdata`` on its one (data set, T).

    agent_files: ((name, path), ...) of the run's agent files, whose ``make_agent``
    must still be the file the cell was planned with (``agent_files.current_make_agent``).
    """
    typed = RealdataCell.from_cell(cell)
    paths = dict(agent_files)
    agent: Any = cell.agent
    if cell.agent in paths:
        agent = {cell.agent: current_make_agent(paths[cell.agent], cell.agent_file_sha256)}
    overrides = {cell.agent: {k: tuple(v) if isinstance(v, list) else v for k, v in typed.agent_config}}
    return run_realdata(
        agent,
        overrides=overrides if typed.agent_config else None,
        datasets=[typed.dataset],
        num_train=[typed.num_train],
        seeds=list(typed.seeds),
        designs=typed.designs,
        num_test=typed.num_test,
        num_models=typed.num_models,
        method=typed.method,
        progress=False,
    )


def describe_realdata_cell(cell: Cell) -> str:
    """A short label for a progress bar: agent, data set file name, T."""
    typed = RealdataCell.from_cell(cell)
    size = "full" if typed.num_train is None else typed.num_train
    return f"{cell.agent} {Path(typed.dataset).name} T={size}"
