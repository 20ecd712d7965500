"""Hyperparameter grids: one vmapped program whose rows equal separate runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from decision_bench.agents import make
from decision_bench.evaluation import run_testbed
from decision_bench.evaluation.sweeps import custom_sweep
from decision_bench.evaluation.tune import PAPER_GRIDS, grid_points, summarize_grid, tune
from decision_bench.specs import ProblemSpec
from compile_counting import count_compilations

SWEEP = custom_sweep(2, [5], [0.1, 0.5], taus=[1, 10], num_seeds=2)
SMALL = dict(num_test=20, num_models=5, max_rows=10**7)


@pytest.fixture(scope="module")
def tuned():
    return tune("mlp", {"l2": [0.01, 10.0]}, SWEEP, overrides={"num_steps": 15}, **SMALL)


def test_grid_points_are_the_product_in_key_order():
    assert grid_points({"a": [1, 2], "b": [3]}) == [{"a": 1, "b": 3}, {"a": 2, "b": 3}]


def test_each_grid_point_equals_a_separate_run_testbed(tuned):
    rows, _ = tuned
    for l2 in (0.01, 10.0):
        alone = run_testbed("mlp", SWEEP, overrides={"mlp": {"num_steps": 15, "l2": l2}},
                            progress=False, **SMALL)
        mine = rows[rows.l2 == l2].sort_values(["temperature", "tau", "seed"]).kl.to_numpy()
        theirs = alone.sort_values(["temperature", "tau", "seed"]).kl.to_numpy()
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)


def test_summary_scores_dkl_agg_and_marks_the_lowest(tuned):
    rows, summary = tuned
    assert len(summary) == 2 and summary.best.sum() == 1
    point = rows[rows.l2 == 0.01]
    expected = (point[point.tau == 1].kl.mean() + point[point.tau == 10].kl.mean() / 10)
    got = summary.set_index("l2").dkl_agg.loc[0.01]
    assert got == pytest.approx(expected, rel=1e-6)
    assert summary.loc[summary.best, "dkl_agg"].item() == summary.dkl_agg.min()


def test_a_nan_estimate_makes_its_point_nan_not_best():
    rows = pd.DataFrame({"l2": [1.0] * 4 + [2.0] * 4, "input_dim": 2, "num_train": 5,
                         "temperature": 0.1, "tau": [1, 10, 1, 10] * 2, "seed": [0, 0, 1, 1] * 2,
                         "kl": [0.1, 1.0, np.nan, 1.0, 0.2, 2.0, 0.2, 2.0]})
    summary = summarize_grid(rows, ["l2"]).set_index("l2")
    assert np.isnan(summary.dkl_agg.loc[1.0]) and bool(summary.best.loc[2.0])


def test_the_whole_grid_is_one_program_per_training_set_size(tuned):
    with count_compilations() as seen:
        tune("mlp", {"l2": [0.3, 3.0]}, SWEEP, overrides={"num_steps": 15}, **SMALL)
    assert seen == []  # same shapes as the fixture's grid: nothing new to compile


def test_unknown_or_shape_setting_names_are_refused():
    with pytest.raises(ValueError, match=r"not real-valued hyperparameters of 'mlp'.*tunable"):
        tune("mlp", {"hidden_sizes": [1.0]}, SWEEP, **SMALL)
    with pytest.raises(ValueError, match="unknown agent .nope. .known: "):
        tune("nope", {"l2": [1.0]}, SWEEP, **SMALL)


def test_paper_grids_name_real_hyperparameters():
    assert PAPER_GRIDS["mlp"]["l2"] == (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)
    assert PAPER_GRIDS["ensemble+"]["l2"] == (0.1, 0.3, 1.0, 3.0, 10.0)


def test_a_setting_name_follows_the_computing_libraries_versions_not_numpy_or_pandas(monkeypatch):
    import importlib.metadata

    from decision_bench._src import versions
    from decision_bench.evaluation.tune import check_grid, setting_file_name

    grid = check_grid("mlp", {"l2": [0.01, 10.0]}, {})
    name = lambda: setting_file_name("mlp", grid, SWEEP.settings[0], 2)  # noqa: E731
    before = name()
    real = importlib.metadata.version
    for package, changed in (("pandas", False), ("numpy", False), ("jax", True), ("optax", True)):
        # A fresh install that differs from this one in `package` alone.
        monkeypatch.setattr(importlib.metadata, "version", lambda n, p=package: "99.0" if n == p else real(n))
        versions.result_versions.cache_clear()
        assert (name() != before) == changed, package
        monkeypatch.setattr(importlib.metadata, "version", real)
        versions.result_versions.cache_clear()
    # A folder's recorded versions name its files whatever this install holds.
    assert setting_file_name("mlp", grid, SWEEP.settings[0], 2, versions=dict(versions.result_versions())) == before


@pytest.mark.parametrize(
    "grid, match",
    [
        ({"l2": [-1.0]}, r"^grid point l2=-1 is refused by 'mlp': l2 must be a finite number >= 0"),
        ({"l2": [float("nan")]}, r"^grid l2 values must be finite numbers, got nan$"),
        ({"l2": [float("inf")]}, r"^grid l2 values must be finite numbers, got inf$"),
        ({"l2": [1.0, 1.0]}, r"^grid l2 gives the value 1.0 twice"),
        ({"l2": [1.0], "learning_rate": [0.0]}, r"^grid point l2=1 learning_rate=0 is refused by 'mlp': learning_rate"),
        ({"l2": ["x"]}, r"^grid l2 values must be numbers"),
    ],
)
def test_grid_values_the_agent_refuses_are_refused_before_any_work(grid, match):
    # Making an agent converts its hyperparameters to f32 arrays, which compiles one tiny
    # program the first time a process does it (convert_element_type): done here first, so
    # the count sees tune's own work whichever test this process ran before.
    make("mlp", ProblemSpec(2, 2, 0.1, 1))
    with count_compilations() as seen, pytest.raises(ValueError, match=match) as err:
        tune("mlp", grid, SWEEP, **SMALL)
    assert seen == [] and "\n" not in str(err.value)


def test_the_grid_uses_the_agents_own_checks_with_the_overrides():
    # dropout's own check (a rate in [0, 1)) decides, not a range written here.
    with pytest.raises(ValueError, match="refused by 'dropout': dropout_rate"):
        tune("dropout", {"dropout_rate": [0.5, 1.0]}, SWEEP, **SMALL)


def test_a_summary_beside_another_grids_rows_is_refused(tmp_path):
    from decision_bench._src.files import write_results_csv
    from decision_bench.evaluation.tune import read_tune

    first = pd.DataFrame({"l2": [1.0, 2.0], "kl": [0.1, 0.2]})
    write_results_csv(tmp_path / "tune.csv", first)
    write_results_csv(tmp_path / "tune_summary.csv", first.assign(best=[True, False]), summarises=tmp_path / "tune.csv")
    rows, summary = read_tune(tmp_path)
    assert list(rows.l2) == [1.0, 2.0] and list(summary.best) == [True, False]
    # A second run killed between its two writes: new tune.csv, old summary.
    write_results_csv(tmp_path / "tune.csv", pd.DataFrame({"l2": [3.0], "kl": [0.3]}))
    with pytest.raises(ValueError, match=r"tune_summary.csv summarises another tune.csv than the one beside it"):
        read_tune(tmp_path)


def test_stored_settings_are_reused_and_a_damaged_one_is_recomputed(tmp_path):
    from decision_bench._src.files import write_results_csv

    store = tmp_path / "settings"
    args = dict(overrides={"num_steps": 15}, resume_dir=store, **SMALL)
    first, _ = tune("mlp", {"l2": [0.01, 10.0]}, SWEEP, **args)
    files = sorted(store.glob("setting-*.csv"))
    assert len(files) == len(SWEEP.settings)
    # Named as setting_file_name names them (what a kept folder is checked against).
    from decision_bench.evaluation.tune import check_grid, setting_file_name

    grid = check_grid("mlp", {"l2": [0.01, 10.0]}, {"num_steps": 15})
    names = {setting_file_name("mlp", grid, s, SWEEP.num_seeds, overrides={"num_steps": 15}, num_test=20,
                               num_models=5, max_rows=10**7) for s in SWEEP.settings}  # fmt: skip
    assert {f.name for f in files} == names
    # Reused, not recomputed: a stored value changed on purpose comes back.
    marked = pd.read_csv(files[0]).assign(kl=123.0)
    write_results_csv(files[0], marked)
    again, _ = tune("mlp", {"l2": [0.01, 10.0]}, SWEEP, **args)
    assert (again.kl == 123.0).sum() == len(marked)
    # A damaged file is named, warned about and recomputed: the rows equal the first run's.
    files[0].write_text(files[0].read_text()[:-5])
    with pytest.warns(RuntimeWarning, match=r"setting-.*does not match its checksum.*recomputing"):
        fixed, _ = tune("mlp", {"l2": [0.01, 10.0]}, SWEEP, **args)
    pd.testing.assert_frame_equal(fixed, first)
    # Other arguments are another identity: nothing is reused.
    other, _ = tune("mlp", {"l2": [0.01, 3.0]}, SWEEP, **args)
    assert len(list(store.glob("setting-*.csv"))) == 2 * len(SWEEP.settings) and (other.kl != 123.0).all()


@pytest.mark.slow  # mlp's default 1000 Adam steps, twice: about two minutes on 2 cores
def test_a_grid_point_agrees_with_run_testbed_within_the_readme_bound_after_full_training():
    # The README's bound: float32 reassociation in the vmapped program, amplified by
    # 1000 training steps, stays within 1% relative (0.2% measured).
    sweep = custom_sweep(2, [10, 100], [0.1], taus=[1, 10], num_seeds=2)
    size = dict(num_test=100, num_models=100)
    key = ["num_train", "tau", "seed"]
    alone = run_testbed("mlp", sweep, overrides={"mlp": {"l2": 1.0}}, progress=False, **size)
    rows, _ = tune("mlp", {"l2": [0.3, 1.0, 3.0]}, sweep, **size)
    mine = rows[rows.l2 == 1.0].sort_values(key).kl.to_numpy()
    np.testing.assert_allclose(mine, alone.sort_values(key).kl.to_numpy(), rtol=1e-2, atol=0)
