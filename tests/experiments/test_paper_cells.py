"""bench/data/paper_cells holds finished cells of the paper preset, kept across machines
(``reproduce --cells-from``): each file is a current cell of the preset, and its rows
are this code's."""

import json
from pathlib import Path

import numpy as np
import pytest

from decision_bench import __version__
from decision_bench.experiments.cells import agent_fingerprint
from decision_bench.experiments.presets import get_preset
from decision_bench.experiments.reproduce import build_cells
from decision_bench.experiments.store import ResultsStore
from rounding import rtol_for_bandit

FOLDER = Path(__file__).resolve().parents[2] / "bench" / "data" / "paper_cells"
PRESET = get_preset("paper")
CELLS = {cell.id: cell for cell in build_cells(PRESET, PRESET.agents)}
FILES = sorted(FOLDER.glob("*.json"))


def _read(path):
    """(cell, rows) of a kept file that verifies and was made by this package version with the
    agent's current config. (Not its jax: an install with another jax refuses to copy it, as
    it should, but the file is still the right one to keep.)"""
    cell = CELLS.get(path.stem)
    assert cell is not None, f"{path.name} is not a cell of the paper preset (any more)"
    stored, rows, header = ResultsStore._read_file(path)  # raises CorruptCellFile when it does not verify
    assert stored == cell
    assert header["versions"]["decision-bench"] == __version__, f"{path.name}: made by another version"
    assert header["agent_fingerprint"] == agent_fingerprint(cell), f"{path.name}: made with another config"
    return cell, rows


def test_the_folder_holds_only_current_ensemble_cells_of_the_paper_preset_each_run_to_the_end():
    assert FILES, "no finished cells kept"
    for path in FILES:
        cell, rows = _read(path)
        assert cell.kind == "bandit" and cell.agent in ("ensemble", "ensemble+")
        assert sorted(set(rows["seed"])) == list(cell.seeds)
        assert rows["step"].max() == PRESET.bandit_steps and np.isfinite(rows["final_regret"]).all()
        assert (np.diff(rows["cumulative_regret"].to_numpy()) >= 0).all()  # regret never decreases


@pytest.mark.slow
def test_a_kept_cell_recomputes_to_its_rows_over_its_first_steps():
    """A run's first steps do not depend on its length; one seed is its own program."""
    from decision_bench.bandit.run import run_bandit

    cell, rows = _read(FILES[0])
    problem = dict(cell.problem)
    env, total = problem.pop("env"), problem.pop("num_steps")
    steps = 2000
    fresh = run_bandit(cell.agent, env, steps, list(cell.seeds), env_kwargs=problem,
                       log_every=total // 100, progress=False)
    kept = rows[rows["step"] <= steps]
    np.testing.assert_array_equal(fresh["step"].to_numpy(), kept["step"].to_numpy())
    versions = json.loads(FILES[0].read_text())["versions"]
    np.testing.assert_allclose(fresh["cumulative_regret"].to_numpy(), kept["cumulative_regret"].to_numpy(),
                               rtol=rtol_for_bandit(versions), atol=1e-9)
