"""``decision-bench testbed --out DIR`` stores each finished cell under DIR/cells/ and resumes.

One real run (two cheap agents, one tiny setting) is shared by the module; tests
that change a run directory work on a copy of it.
"""

from __future__ import annotations

import io
import json
import shutil
import warnings

import pandas as pd
import pytest

from decision_bench import cli
from decision_bench.analysis.inputs import read_testbed
from decision_bench.cli import testbed as command
from decision_bench.evaluation import run_testbed
from decision_bench.evaluation.runner import COLUMNS
from decision_bench.evaluation.sweeps import Sweep, custom_sweep
from decision_bench.experiments.cells import Cell
from decision_bench.experiments.store import ResultsStore
from decision_bench.experiments.testbed_cell import sweep_cells

AGENTS = ("uniform", "logistic")
GRID = ["--num-train", "3", "--temperature", "0.1", "--tau", "1", "--num-test", "20",
        "--num-models", "20", "--seeds", "1"]
TIMING = ["fit_seconds", "eval_seconds", "compile_seconds"]


def _argv(out, *extra):
    return ["testbed", "--agents", ",".join(AGENTS), *GRID, *extra, "--out", str(out), "--no-progress"]


def _cell_files(out):
    return sorted((out / "cells").glob("*.json"))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("testbed") / "run"
    assert cli.main(_argv(out)) == 0
    return out


@pytest.fixture
def copy_of_run(run_dir, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(run_dir, out)
    return out


def _stored_rows(run_dir):
    """{cell id: rows} of the module's run, to stand in for compute_testbed_cell."""
    store = ResultsStore(run_dir / "cells")
    return {path.stem: store.read(Cell.from_dict(json.loads(path.read_text())["cell"]))
            for path in _cell_files(run_dir)}


def _count_calls(monkeypatch, compute):
    """Replaces compute_testbed_cell by ``compute``; returns the list of cell ids it is called with."""
    calls = []

    def counted(cell):
        calls.append(cell.id)
        return compute(cell)

    monkeypatch.setattr(command, "compute_testbed_cell", counted)
    return calls


def test_each_agent_and_setting_is_stored_as_a_verified_cell(run_dir):
    files = _cell_files(run_dir)
    assert len(files) == len(AGENTS)  # one setting, all seeds in one cell
    store = ResultsStore(run_dir / "cells")
    cells = [Cell.from_dict(json.loads(path.read_text())["cell"]) for path in files]
    assert sorted(cell.agent for cell in cells) == sorted(AGENTS)
    assert all(store.is_done(cell) for cell in cells)
    meta = json.loads((run_dir / "testbed.json").read_text())
    assert sorted(meta["cells"]) == [path.stem for path in files]


def test_csv_is_built_from_the_cells_with_run_testbeds_columns_and_rows(run_dir):
    written = pd.read_csv(run_dir / "testbed.csv")
    assert tuple(written.columns) == COLUMNS
    assert list(written["agent"]) == list(AGENTS)  # run_testbed's order: agent, setting, design, seed
    direct = run_testbed("uniform", custom_sweep(2, 3, 0.1, taus=[1], num_seeds=1), 1,
                         num_test=20, num_models=20, progress=False)
    direct = pd.read_csv(io.StringIO(direct.to_csv(index=False)))
    pd.testing.assert_frame_equal(
        written[written["agent"] == "uniform"].drop(columns=TIMING).reset_index(drop=True),
        direct.drop(columns=TIMING),
    )


def test_same_command_again_computes_nothing_and_writes_the_same_csv(copy_of_run, monkeypatch, capsys):
    before_csv = (copy_of_run / "testbed.csv").read_bytes()
    before_cells = {path: path.stat().st_mtime_ns for path in _cell_files(copy_of_run)}
    calls = _count_calls(monkeypatch, lambda cell: pytest.fail(f"recomputed {cell.id}"))
    assert cli.main(_argv(copy_of_run)) == 0
    assert calls == []
    assert (copy_of_run / "testbed.csv").read_bytes() == before_csv
    assert {path: path.stat().st_mtime_ns for path in _cell_files(copy_of_run)} == before_cells
    assert "resuming: 2 of 2 cells already done" in capsys.readouterr().err


def test_deleted_cell_alone_is_recomputed_with_identical_rows(copy_of_run, monkeypatch):
    before = pd.read_csv(copy_of_run / "testbed.csv")
    deleted = next(path for path in _cell_files(copy_of_run) if "-logistic-" in path.name)
    deleted.unlink()
    calls = _count_calls(monkeypatch, command.compute_testbed_cell)
    assert cli.main(_argv(copy_of_run)) == 0
    assert calls == [deleted.stem]
    assert deleted.exists()
    after = pd.read_csv(copy_of_run / "testbed.csv")
    pd.testing.assert_frame_equal(after.drop(columns=TIMING), before.drop(columns=TIMING))


def test_corrupt_cell_is_warned_about_and_alone_recomputed(copy_of_run, run_dir, monkeypatch, capsys):
    stored = _stored_rows(run_dir)
    corrupt = _cell_files(copy_of_run)[0]
    corrupt.write_text(corrupt.read_text()[:100])  # as if cut off mid-write by another tool
    calls = _count_calls(monkeypatch, lambda cell: stored[cell.id])
    # The command may print warnings itself (one line on stderr) or leave them to
    # the warnings module: either way the file must be named.
    with warnings.catch_warnings(record=True) as recorded:
        warnings.simplefilter("always")
        assert cli.main(_argv(copy_of_run)) == 0
    shown = capsys.readouterr().err + "\n".join(str(w.message) for w in recorded)
    assert f"{corrupt} is corrupt or partial" in shown
    assert calls == [corrupt.stem]
    assert (copy_of_run / "testbed.csv").read_bytes() == (run_dir / "testbed.csv").read_bytes()


def test_interrupted_run_keeps_finished_cells_and_resumes_from_them(run_dir, tmp_path, monkeypatch, capsys):
    stored = _stored_rows(run_dir)
    out = tmp_path / "run"

    def interrupted_second(cell):
        if len(calls) == 2:
            raise KeyboardInterrupt
        return stored[cell.id]

    calls = _count_calls(monkeypatch, interrupted_second)
    assert cli.main(_argv(out)) == 130
    assert "run the same command again to resume" in capsys.readouterr().err
    assert len(_cell_files(out)) == 1
    first, second = calls
    # testbed.csv grows as cells finish: it holds the finished cell's rows already,
    # verified against its checksum file.
    pd.testing.assert_frame_equal(read_testbed(out / "testbed.csv")[["agent", "tau", "seed", "kl"]],
                                  stored[first][["agent", "tau", "seed", "kl"]], check_dtype=False)

    calls = _count_calls(monkeypatch, lambda cell: stored[cell.id])
    assert cli.main(_argv(out)) == 0
    assert calls == [second] and first != second
    assert (out / "testbed.csv").read_bytes() == (run_dir / "testbed.csv").read_bytes()


def test_other_arguments_are_refused_in_one_line_and_the_run_is_left_untouched(copy_of_run, monkeypatch, capsys):
    before = {p: p.read_bytes() for p in copy_of_run.rglob("*") if p.is_file() and p.name != ".decision-bench.lock"}
    calls = _count_calls(monkeypatch, lambda cell: None)
    assert cli.main(_argv(copy_of_run, "--num-test", "21")) == 2
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert "holds a `testbed` run with other arguments (--num-test: saved 20, now 21)" in line
    assert "give another --out" in line
    assert calls == []
    after = {p: p.read_bytes() for p in copy_of_run.rglob("*") if p.is_file() and p.name != ".decision-bench.lock"}
    assert after.keys() == before.keys() and all(after[p] == before[p] for p in before if p.name != ".decision-bench.lock.json")


@pytest.mark.parametrize(
    "change",
    [
        dict(agents=("logistic",)),
        dict(seeds=(0, 1)),
        dict(num_test=21),
        dict(num_models=21),
        dict(method="monte_carlo"),
        dict(sweep=custom_sweep(2, 3, 0.1, taus=[1, 10], num_seeds=1)),
        dict(sweep=custom_sweep(2, 4, 0.1, taus=[1], num_seeds=1)),
        dict(sweep=custom_sweep(2, 3, 0.5, taus=[1], num_seeds=1)),
        dict(sweep=custom_sweep(3, 3, 0.1, taus=[1], num_seeds=1)),
    ],
)
def test_every_argument_that_changes_rows_changes_the_cell_ids(change):
    base = dict(agents=("uniform",), sweep=custom_sweep(2, 3, 0.1, taus=[1], num_seeds=1), seeds=(0,),
                num_test=20, num_models=20, method="auto")
    ids = {cell.id for cell in sweep_cells(**base)}
    changed = {cell.id for cell in sweep_cells(**{**base, **change})}
    assert ids and changed and not ids & changed


def test_sweep_name_alone_does_not_change_the_cells():
    grid = custom_sweep(2, 3, 0.1, taus=[1], num_seeds=1)
    renamed = Sweep("other", grid.settings, grid.designs, grid.num_seeds)
    size = dict(num_test=20, num_models=20, method="auto")
    one = sweep_cells(("uniform",), grid, (0,), **size)
    other = sweep_cells(("uniform",), renamed, (0,), **size)
    assert [c.id for c in one] == [c.id for c in other]


def test_realdata_cells_are_stored_and_resumed(tmp_path, monkeypatch):
    argv = ["testbed", "--sweep", "realdata", "--datasets", "iris", "--agents", "uniform", "--seeds", "1",
            "--num-test", "20", "--num-models", "4", "--out", str(tmp_path), "--no-progress"]
    assert cli.main(argv) == 0
    assert len(_cell_files(tmp_path)) == 3  # T = 10, 100 and the full split
    before = (tmp_path / "realdata.csv").read_bytes()

    def fail(cell):
        pytest.fail(f"recomputed {cell.id}")

    monkeypatch.setattr(command, "compute_realdata_cell", fail)
    assert cli.main(argv) == 0
    assert (tmp_path / "realdata.csv").read_bytes() == before
