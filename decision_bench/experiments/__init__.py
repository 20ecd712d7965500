"""Experiments: grids of cells, the results store, executors (local default, Ray),
presets and ``run_preset``.

An evaluation *sweep* (``decision_bench.evaluation.sweeps``) names a set of testbed
settings; an experiment *grid* is the cells a command or preset makes of sweeps
and bandit runs, each stored atomically once finished so a run resumes.
"""

from decision_bench.experiments.cells import Cell, grid
from decision_bench.experiments.executors import run_cells
from decision_bench.experiments.presets import PRESET_NAMES, Preset, get_preset
from decision_bench.experiments.reproduce import run_preset
from decision_bench.experiments.store import ResultsStore

__all__ = ["Cell", "PRESET_NAMES", "Preset", "ResultsStore", "get_preset", "grid", "run_cells", "run_preset"]
