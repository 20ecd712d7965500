"""A run stored by decision-bench 0.2.0 resumes with nothing recomputed.

data/store_0_2_0/ holds result files written by 0.2.0's own code
(data/make_store_0_2_0.py, run on main before issue 23): reproduce's cells of the
robustness-quick preset for two agents, in that version's testbed encoding, and a
cell of its testbed command."""

from __future__ import annotations

import json
import pathlib
import shutil
import warnings

import pytest

from decision_bench._src.versions import environment_info
from decision_bench.evaluation.sweeps import custom_sweep
from decision_bench.experiments.cells import Cell
from decision_bench.experiments.executors import run_cells
from decision_bench.experiments.presets import get_preset
from decision_bench.experiments.reproduce import build_cells
from decision_bench.experiments.store import FIRST_FORMAT, FORMAT, ResultsStore, migrate_cell
from decision_bench.experiments.testbed_cell import TestbedCell, sweep_cells

STORED = pathlib.Path(__file__).resolve().parent / "data" / "store_0_2_0"


def _cells_now() -> tuple[Cell, ...]:
    """The cells today's code plans for the same runs."""
    preset = get_preset("robustness-quick")
    testbed = sweep_cells(["mlp"], custom_sweep(2, 3, 0.1, taus=[1], num_seeds=1), (0,), num_test=20, num_models=20)
    return build_cells(preset, ("mlp", "ensemble+")) + testbed


def _never(cell: Cell):
    raise AssertionError(f"cell {cell.id} was recomputed")


@pytest.fixture
def stored(tmp_path):
    directory = tmp_path / "cells"
    shutil.copytree(STORED, directory)
    # The files record the package versions that wrote them; a run on other versions
    # is stale by design (recomputed). Here only the cells' encoding is under test.
    for path in directory.glob("*.json"):
        payload = json.loads(path.read_text())
        payload["versions"] = environment_info()
        path.write_text(json.dumps(payload, separators=(",", ":")))
    return directory


def test_a_0_2_0_store_resumes_with_nothing_recomputed(stored):
    cells = _cells_now()
    old_ids = (STORED / "ids.txt").read_text().split()
    assert len(cells) == len(old_ids) == 35
    now_ids = [cell.id for cell in cells]
    moved = [old for old, new in zip(old_ids, now_ids) if old != new]
    # reproduce's testbed cells have the one encoding now; bandit cells and the
    # testbed command's cells keep their ids.
    from_reproduce = [c.id for c in cells if c.kind == "testbed" and dict(c.problem).get("sweep") is not None]
    assert [now_ids[old_ids.index(old)] for old in moved] == from_reproduce and len(moved) == 20
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither corrupt nor stale
        frame = run_cells(cells, _never, ResultsStore(stored), progress=False)
    assert len(frame) == sum(len(cell.seeds) for cell in cells)
    assert list(frame["agent"]) == [cell.agent for cell in cells for _ in cell.seeds]
    names = {path.stem for path in stored.glob("*.json")}
    assert names == set(now_ids)  # renamed, nothing left under an old id
    for cell in cells:
        payload = json.loads((stored / f"{cell.id}.json").read_text())
        assert payload["format"] == (FORMAT if cell.id in set(now_ids) - set(old_ids) else FIRST_FORMAT)
    # A second store on the migrated folder reads the same rows, again computing nothing.
    again = run_cells(cells, _never, ResultsStore(stored), progress=False)
    assert again.equals(frame)


def test_migrate_cell_maps_each_old_testbed_cell_to_the_typed_encoding():
    for path in sorted(STORED.glob("testbed-*.json")):
        old = Cell.from_dict(json.loads(path.read_text())["cell"])
        new = migrate_cell(old, FIRST_FORMAT)
        typed = TestbedCell.from_cell(new)  # the new encoding reads back
        assert typed.to_cell() == new and migrate_cell(new, FORMAT) == new
        problem = dict(old.problem)
        if "designs" in problem:  # the testbed command's cell
            assert new == old
            continue
        assert typed.sweep == problem["sweep"] and typed.method == "auto"
        assert typed.setting.activation == problem.get("activation", "relu")
        assert "-".join(map(str, typed.setting.hidden_sizes)) == problem.get("hidden_sizes", "50-50")
        assert [(d.tau, d.kappa) for d in typed.designs] == [(1, None), (10, None), (10, 2)]
