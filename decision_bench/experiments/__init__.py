"""Experiments: grids of cells, the results store, executors (local default, Ray),
presets and ``run_preset``.

An evaluation *sweep* (``decision_bench.evaluation.sweeps``) names a set of testbed
settings; an experiment *grid* is the cells a command or preset makes of sweeps
and bandit runs, each stored atomically once finished so a run resumes. A testbed
cell has one typed form, ``TestbedCell``, and one encoding, shared by every command.
"""

from decision_bench.experiments.cells import Cell, grid
from decision_bench.experiments.executors import run_cells
from decision_bench.experiments.presets import PRESET_NAMES, Preset, get_preset
from decision_bench.experiments.reproduce import run_preset
from decision_bench.experiments.store import ResultsStore
from decision_bench.experiments.testbed_cell import TestbedCell, compute_testbed_cell, sweep_cells

__all__ = [
    "Cell",
    "PRESET_NAMES",
    "Preset",
    "ResultsStore",
    "TestbedCell",
    "compute_testbed_cell",
    "get_preset",
    "grid",
    "run_cells",
    "run_preset",
    "sweep_cells",
]
