"""The testbed cell: one agent on one testbed setting, every test design, all its seeds.

``TestbedCell`` is the typed form; ``TestbedCell.to_cell`` is its one encoding as
a store ``Cell`` (kind "testbed"), whose id names the stored file, and
``TestbedCell.from_cell`` reads it back. ``decision-bench testbed``,
``leaderboard`` and ``reproduce`` build their cells here and compute them with
``compute_testbed_cell``. Cells stored in the older encodings are mapped to
these ids by ``store.migrate_cell``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Sequence

import pandas as pd

from decision_bench.evaluation.runner import Reference, ReferenceFits, run_testbed
from decision_bench.evaluation.sweeps import Sweep, TestbedSetting, TestDesign, hidden_sizes_label
from decision_bench.experiments.agent_files import current_make_agent
from decision_bench.experiments.cells import Cell, problem_of, store_cell

KIND = "testbed"


@dataclasses.dataclass(frozen=True)
class TestbedCell:
    """Everything one testbed cell's rows depend on.

    setting: the generative model and training set size; designs: the test
    designs (tau, kappa) every seed's fit is scored on; seeds: run together;
    num_test, num_models, method: as ``run_testbed``'s; agent_config: the
    agent's overrides; reference, reference_options: the reference agent its
    fidelity is scored against (None: none); sweep: the named sweep the
    setting comes from, when the rows carry it in a "sweep" column (reproduce);
    agent_file_sha256: the SHA-256 of a user's agent file.
    """

    agent: str
    setting: TestbedSetting
    designs: tuple[TestDesign, ...]
    seeds: tuple[int, ...]
    num_test: int
    num_models: int
    method: str = "auto"
    agent_config: tuple = ()
    reference: str | None = None
    reference_options: tuple = ()
    sweep: str | None = None
    agent_file_sha256: str | None = None

    __test__ = False

    def to_cell(self) -> Cell:
        """The store's cell: its problem holds the setting (hidden sizes as a list of
        widths), the designs as [tau, kappa] pairs, num_test, num_models and method;
        the reference and the sweep name only when given."""
        setting = self.setting
        problem: dict[str, Any] = {
            "prior": setting.prior,
            "activation": setting.activation,
            "hidden_sizes": tuple(setting.hidden_sizes),
            "input_dim": setting.input_dim,
            "num_train": setting.num_train,
            "temperature": setting.temperature,
            "designs": tuple((design.tau, design.kappa) for design in self.designs),
            "num_test": self.num_test,
            "num_models": self.num_models,
            "method": self.method,
        }
        if self.reference is not None:
            problem["reference"] = self.reference
            problem["reference_options"] = tuple(sorted(dict(self.reference_options).items()))
        if self.sweep is not None:
            problem["sweep"] = self.sweep
        return store_cell(KIND, self, problem)

    @classmethod
    def from_cell(cls, cell: Cell) -> TestbedCell:
        """The typed cell of a store cell in this encoding (ValueError otherwise)."""
        problem = problem_of(cell, KIND)
        try:
            setting = TestbedSetting(
                input_dim=problem["input_dim"],
                num_train=problem["num_train"],
                temperature=problem["temperature"],
                prior=problem["prior"],
                activation=problem["activation"],
                hidden_sizes=tuple(problem["hidden_sizes"]),
            )
            designs = tuple(TestDesign(tau, kappa) for tau, kappa in problem["designs"])
            return cls(
                agent=cell.agent,
                setting=setting,
                designs=designs,
                seeds=cell.seeds,
                num_test=problem["num_test"],
                num_models=problem["num_models"],
                method=problem["method"],
                agent_config=cell.agent_config,
                reference=problem.get("reference"),
                reference_options=tuple(problem.get("reference_options") or ()),
                sweep=problem.get("sweep"),
                agent_file_sha256=cell.agent_file_sha256,
            )
        except KeyError as missing:
            raise ValueError(f"testbed cell {cell.id} lacks {missing}: it is in an older encoding") from None


def sweep_cells(
    agents: Sequence[str],
    sweep: Sweep,
    seeds: Sequence[int],
    *,
    num_test: int,
    num_models: int,
    method: str = "auto",
    reference: str | None = None,
    reference_options: Mapping[str, Any] | None = None,
    agent_configs: Mapping[str, Mapping[str, Any]] | None = None,
    agent_files: Mapping[str, str] | None = None,
    sweep_name: str | None = None,
) -> tuple[Cell, ...]:
    """One cell per (agent, setting of ``sweep``) with all seeds, agents outermost
    (``run_testbed``'s row order). agent_configs: {agent: overrides};
    agent_files: {agent: SHA-256 of its agent file}; sweep_name: recorded in the
    cells and their rows (reproduce), None to leave it out (it changes no row)."""
    configs, digests = dict(agent_configs or {}), dict(agent_files or {})
    options = tuple(sorted((reference_options or {}).items()))
    return tuple(
        TestbedCell(
            agent=agent,
            setting=setting,
            designs=tuple(sweep.designs),
            seeds=tuple(seeds),
            num_test=num_test,
            num_models=num_models,
            method=method,
            agent_config=tuple(sorted(dict(configs.get(agent, {})).items())),
            reference=reference,
            reference_options=options if reference is not None else (),
            sweep=sweep_name,
            agent_file_sha256=digests.get(agent),
        ).to_cell()
        for agent in agents
        for setting in sweep.settings
    )


def compute_testbed_cell(
    cell: Cell, reference_fits: ReferenceFits | None = None, agent_files: Sequence[tuple[str, str]] = ()
) -> pd.DataFrame:
    """The rows of one testbed cell: ``run_testbed`` on its one setting, built from the
    cell alone, so a stored cell can always be recomputed the same way.

    reference_fits: shared between the cells of a run, so the reference is fitted
    once per setting; agent_files: ((name, path), ...) of the run's agent files,
    whose ``make_agent`` must still be the file the cell was planned with
    (``agent_files.current_make_agent``). With a sweep name the rows get a "sweep" column.
    """
    typed = TestbedCell.from_cell(cell)
    paths = dict(agent_files)
    make_agent = current_make_agent(paths[cell.agent], cell.agent_file_sha256) if cell.agent in paths else None
    sweep = Sweep("cell", (typed.setting,), typed.designs, num_seeds=len(typed.seeds))
    reference = None
    if typed.reference is not None:
        options = dict(typed.reference_options)
        reference = Reference(typed.reference, options, ReferenceFits() if reference_fits is None else reference_fits)
    overrides = {cell.agent: dict(typed.agent_config)} if typed.agent_config else None
    agent = {cell.agent: make_agent} if make_agent is not None else cell.agent
    frame = run_testbed(
        agent, sweep, list(typed.seeds), num_test=typed.num_test, num_models=typed.num_models,
        method=typed.method, overrides=overrides, progress=False, reference=reference,
    )
    if typed.sweep is not None:
        frame["sweep"] = typed.sweep
    return frame


def describe_testbed_cell(cell: Cell) -> str:
    """A short label for a progress bar: agent, family (when not the default), d, T, beta."""
    setting = TestbedCell.from_cell(cell).setting
    family = "" if setting.is_default_family else f" {setting.activation}-{hidden_sizes_label(setting.hidden_sizes)}"
    return f"{cell.agent}{family} d={setting.input_dim} T={setting.num_train} beta={setting.temperature}"
