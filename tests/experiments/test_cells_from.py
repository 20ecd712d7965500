"""A run resumes from finished cells made elsewhere (``reproduce --cells-from``): a file of
the same cell id, verified and made by this version, is copied in and not recomputed;
anything else is left to compute."""

import json

import pandas as pd
import pytest

from decision_bench import cli
from decision_bench.experiments.presets import get_preset
from decision_bench.experiments.reproduce import build_cells, copy_finished_cells
from decision_bench.experiments.store import ResultsStore, copy_cells


def _bandit_cells():
    preset = get_preset("demo")
    return [c for c in build_cells(preset, ("mlp", "bbb")) if c.kind == "bandit"]


def test_a_verified_current_cell_is_copied_once_with_its_makers_versions_and_its_source(tmp_path):
    mlp, bbb = _bandit_cells()
    elsewhere, here = ResultsStore(tmp_path / "elsewhere"), ResultsStore(tmp_path / "run" / "cells")
    rows = pd.DataFrame({"agent": ["mlp", "mlp"], "seed": [0, 1], "cumulative_regret": [1.5, 2.5]})
    path = elsewhere.write(mlp, rows)
    made_by = json.loads(path.read_text())["versions"]
    assert copy_cells(elsewhere, here, [mlp, bbb]) == 1  # bbb has no file elsewhere: left to compute
    pd.testing.assert_frame_equal(here.read(mlp), rows)
    assert not here.is_done(bbb)
    copied = json.loads(here.path(mlp).read_text())
    assert copied["versions"] == made_by and copied["source"] == f"copied from {elsewhere.directory}"
    assert copy_cells(elsewhere, here, [mlp, bbb]) == 0  # already there


def test_a_corrupt_or_stale_cell_is_not_copied(tmp_path):
    mlp, bbb = _bandit_cells()
    elsewhere, here = ResultsStore(tmp_path / "elsewhere"), ResultsStore(tmp_path / "here")
    rows = pd.DataFrame({"agent": ["x"], "cumulative_regret": [1.0]})
    elsewhere.write(mlp, rows, versions={"decision-bench": "0.0.1"})  # another version made it
    corrupt = elsewhere.write(bbb, rows)
    corrupt.write_text(corrupt.read_text().replace('"sha256":"', '"sha256":"0'))
    with pytest.warns(RuntimeWarning):
        assert copy_cells(elsewhere, here, [mlp, bbb]) == 0
    assert not here.is_done(mlp) and not here.is_done(bbb)


def test_copy_finished_cells_takes_the_runs_own_cells_and_refuses_a_missing_folder(tmp_path):
    mlp, _ = _bandit_cells()
    elsewhere = ResultsStore(tmp_path / "elsewhere")
    elsewhere.write(mlp, pd.DataFrame({"agent": ["mlp"], "cumulative_regret": [1.0]}))
    out = tmp_path / "run"
    assert copy_finished_cells([elsewhere.directory], "demo", out, agents=("mlp",)) == {str(elsewhere.directory): 1}
    assert ResultsStore(out / "cells").is_done(mlp)
    with pytest.raises(ValueError, match="--cells-from .* is not a folder"):
        copy_finished_cells([tmp_path / "nowhere"], "demo", out, agents=("mlp",))


def test_the_command_refuses_a_cells_from_that_is_not_a_folder_in_one_line(tmp_path, capsys):
    argv = ["reproduce", "--preset", "demo", "--agents", "mlp", "--out", str(tmp_path / "run"),
            "--cells-from", str(tmp_path / "nowhere"), "--no-progress"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "--cells-from" in err[-1] and "is not a folder" in err[-1]
