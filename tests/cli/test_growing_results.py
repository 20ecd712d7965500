"""Results files grow while a run goes on (issue 21, part 3): an interrupted run
keeps the rows of what finished, marks the rest unfinished, every version on disk
verifies, and the resumed run ends with the uninterrupted run's rows. (The testbed
command's growing testbed.csv: tests/cli/test_testbed_resume.py.)"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import decision_bench.experiments.bandit_cell as bandit_cell
from decision_bench._src.files import UNFINISHED_RUN
from decision_bench.analysis.inputs import read_bandit, read_testbed
from decision_bench.analysis.join import bandit_final_regret
from decision_bench.cli.program import main
from decision_bench.experiments.cells import Cell
from decision_bench.experiments.executors import run_cells
from decision_bench.experiments.reproduce import GrowingTables, bandit_table
from decision_bench.experiments.store import ResultsStore

BANDIT = ["bandit", "--agents", "uniform,prior", "--env", "BernoulliBandit-v0", "--num-actions", "4",
          "--batch-size", "8", "--steps", "150", "--chunk-size", "50", "--seeds", "2", "--log-every", "25",
          "--no-progress"]
SAME_ROWS = ["agent", "seed", "step", "cumulative_regret", "final_regret", "error"]


def _interrupt_agent_at(monkeypatch, agent: str, step: int) -> list[pd.DataFrame]:
    """Makes the bandit command's run of ``agent`` stop with Ctrl-C after ``step``
    steps; returns the bandit.csv versions read (verified) after each of its chunks."""
    real_run_bandit = bandit_cell.run_bandit
    versions = []

    def run_bandit(name, *args, **kwargs):
        out = kwargs["out_dir"].parent.parent

        def after_chunk(t):
            versions.append(read_bandit(out / "bandit.csv"))
            if name == agent and t >= step:
                raise KeyboardInterrupt

        return real_run_bandit(name, *args, callback=after_chunk, **kwargs)

    monkeypatch.setattr(bandit_cell, "run_bandit", run_bandit)
    return versions


def test_an_interrupted_bandit_command_leaves_the_finished_agent_and_the_chunks_done(tmp_path, monkeypatch):
    assert main(BANDIT + ["--out", str(tmp_path / "fresh")]) == 0
    fresh = pd.read_csv(tmp_path / "fresh" / "bandit.csv")

    versions = _interrupt_agent_at(monkeypatch, "prior", 100)
    assert main(BANDIT + ["--out", str(tmp_path / "run")]) == 130
    # After every chunk the file verified and had grown: uniform's chunks, then prior's.
    assert [len(v) for v in versions] == [4, 8, 12, 16, 20]
    left = read_bandit(tmp_path / "run" / "bandit.csv")
    uniform, prior = left[left.agent == "uniform"], left[left.agent == "prior"]
    pd.testing.assert_frame_equal(uniform[SAME_ROWS].reset_index(drop=True),
                                  fresh[fresh.agent == "uniform"][SAME_ROWS].reset_index(drop=True),
                                  check_dtype=False)
    assert sorted(prior.step.unique()) == [25, 50, 75, 100]
    assert (prior.error == f"{UNFINISHED_RUN} 100 of 150 steps").all() and prior.final_regret.isna().all()
    expected = fresh[(fresh.agent == "prior") & (fresh.step <= 100)]
    np.testing.assert_array_equal(prior.cumulative_regret.to_numpy(), expected.cumulative_regret.to_numpy())
    # `analyze`'s regret per (agent, seed) leaves the running agent out, saying so.
    with pytest.warns(RuntimeWarning, match=r"dropping 2 unfinished bandit runs \(still running\)"):
        regret = bandit_final_regret(left)
    assert regret.agent.unique().tolist() == ["uniform"]

    monkeypatch.undo()
    assert main(BANDIT + ["--out", str(tmp_path / "run")]) == 0
    resumed = pd.read_csv(tmp_path / "run" / "bandit.csv")
    pd.testing.assert_frame_equal(resumed.drop(columns="wall_seconds"), fresh.drop(columns="wall_seconds"))


def _preset_cells() -> tuple[Cell, ...]:
    testbed = tuple(Cell("testbed", agent, problem={"num_train": 10, "temperature": 0.1}) for agent in ("a", "b"))
    bandit = tuple(Cell("bandit", agent, problem={"env": "NeuralBandit-v0", "input_dim": 2}, seeds=(0, 1))
                   for agent in ("a", "b"))
    return testbed + bandit


def _preset_rows(cell: Cell) -> pd.DataFrame:
    """Rows shaped as the testbed's and the bandit's, distinct per cell."""
    if cell.kind == "testbed":
        return pd.DataFrame({"agent": cell.agent, "tau": [1, 10], "kappa": [np.nan, np.nan], "seed": 0,
                             "kl": [0.1, 1.0] if cell.agent == "a" else [0.2, 2.0]})
    return pd.DataFrame({"agent": cell.agent, "env": "NeuralBandit-v0", "temperature": 0.1,
                         "seed": list(cell.seeds), "step": 10, "cumulative_regret": [1.0, 2.0],
                         "final_regret": [1.0, 2.0], "error": ""})


def test_a_preset_runs_tables_grow_cell_by_cell_in_plan_order(tmp_path):
    cells = _preset_cells()
    store = ResultsStore(tmp_path / "cells")
    tables = GrowingTables(tmp_path, cells, store)
    seen = []

    def on_cell_done(cell, rows):
        tables.cell_done(cell, rows)
        seen.append({name: len(pd.read_csv(tmp_path / name)) if (tmp_path / name).exists() else 0
                     for name in ("testbed.csv", "bandit.csv")})
        if cell.agent == "a" and cell.kind == "bandit":
            raise KeyboardInterrupt

    # The second testbed cell finishes first (a resumed run): the table keeps the plan's order.
    store.write(cells[1], _preset_rows(cells[1]))
    with pytest.raises(KeyboardInterrupt):
        run_cells(cells, _preset_rows, store, progress=False, on_cell_done=on_cell_done)
    assert seen == [{"testbed.csv": 4, "bandit.csv": 0}, {"testbed.csv": 4, "bandit.csv": 2}]
    testbed = read_testbed(tmp_path / "testbed.csv")
    assert testbed.agent.tolist() == ["a", "a", "b", "b"]
    bandit = read_bandit(tmp_path / "bandit.csv")
    assert bandit.agent.unique().tolist() == ["a"]
    # The family columns that run_preset's final bandit.csv carries, after temperature.
    assert list(bandit.columns[2:5]) == ["temperature", "activation", "hidden_sizes"]
    assert (bandit.activation == "relu").all() and (bandit.hidden_sizes == "50-50").all()

    # Resumed to the end: the last version is byte for byte the finished run's table.
    run_cells(cells, _preset_rows, store, progress=False, on_cell_done=tables.cell_done)
    assert (tmp_path / "bandit.csv").read_text() == bandit_table(
        store, [c for c in cells if c.kind == "bandit"]).to_csv(index=False)
    assert (tmp_path / "testbed.csv").read_text() == store.load(
        [c for c in cells if c.kind == "testbed"]).to_csv(index=False)
