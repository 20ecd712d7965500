"""experiments.selection: the reference's sweeps in this package's names, and the verdict."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decision_bench.evaluation.tune import check_grid
from decision_bench.experiments import selection
from decision_bench.experiments.selection import (
    PAPER_STUDIES, Study, default_against_best, planned_studies, point_label, run_selection, selection_sweep,
    selection_table,
)


@pytest.mark.parametrize("agent", sorted(PAPER_STUDIES))
def test_every_study_point_is_accepted_by_the_agents_own_config(agent):
    for study in PAPER_STUDIES[agent]:
        check_grid(agent, study.grid, study.overrides)  # raises on a point the agent refuses


@pytest.mark.parametrize("agent", sorted(PAPER_STUDIES))
def test_every_agent_with_a_sweep_scores_its_registered_default(agent):
    labels = {point_label(agent, p) for s in planned_studies(agent) for p in s.points()}
    assert "default" in labels


def test_point_label_names_only_the_settings_that_differ_from_the_default():
    assert point_label("mlp", {"l2": 1.0}) == "default"
    assert point_label("ensemble", {"num_ensemble": 30, "l2": 0.1}) == "l2=0.1, num_ensemble=30"
    assert point_label("ensemble", {"num_ensemble": 100, "l2": 1.0}) == "default"
    assert point_label("dropout", {"hidden_sizes": (50, 50, 50)}) == "hidden_sizes=(50, 50, 50)"
    assert point_label("dropout", {"hidden_sizes": (100, 100)}) == "default"


@pytest.mark.parametrize("agent", sorted(PAPER_STUDIES))
def test_planned_studies_keep_every_point_and_drop_only_studies_already_scored(agent):
    every = [s for s in PAPER_STUDIES[agent]]
    planned = planned_studies(agent)
    labels = lambda studies: {point_label(agent, p) for s in studies for p in s.points()}  # noqa: E731
    assert labels(planned) == labels(every)
    seen: set = set()
    for study in planned:
        assert not labels([study]) <= seen, f"{study.name} adds no point"
        seen |= labels([study])


def test_ensemble_plus_default_members_study_is_not_run_twice():
    names = [s.name for s in planned_studies("ensemble+")]
    assert "num_ensemble=100" not in names and "l2" in names


def test_study_points_are_the_grid_product_with_the_overrides():
    study = Study("x", {"l2": (0.1, 1.0), "learning_rate": (1e-3, 3e-3, 1e-2)}, {"num_steps": 5})
    points = study.points()
    assert len(points) == 6
    assert all(p["num_steps"] == 5 for p in points)
    assert {(p["l2"], p["learning_rate"]) for p in points} == {
        (a, b) for a in (0.1, 1.0) for b in (1e-3, 3e-3, 1e-2)
    }


def _rows(values: dict[str, np.ndarray]) -> pd.DataFrame:
    """Selection rows for points {label: [problems, 2] (tau 1, tau 10)} on T in (1, 10), seeds 0-1."""
    problems = [(t, s) for t in (1, 10) for s in (0, 1)]
    rows = []
    for label, kls in values.items():
        for (t, s), (k1, k10) in zip(problems, kls):
            for tau, kl in ((1, k1), (10, k10)):
                rows.append(dict(agent="mlp", point=label, study="l2", input_dim=2, num_train=t,
                                 temperature=0.1, tau=tau, seed=s, kl=kl))
    return pd.DataFrame(rows)


def test_selection_table_and_verdict_match_a_hand_computation():
    rng = np.random.default_rng(0)
    default = rng.uniform(0.5, 1.0, (4, 2)) * [1, 10]
    better = default * [0.5, 0.8]  # lower on every problem
    worse = default * 1.3
    rows = _rows({"default": default, "l2=0.1": better, "l2=10": worse})
    table = selection_table(rows).set_index("point")
    agg = lambda kls: kls[:, 0] + kls[:, 1] / 10  # noqa: E731
    assert table.loc["default", "dkl_agg"] == pytest.approx(agg(default).mean())
    assert table.loc["l2=0.1", "dkl_1"] == pytest.approx(better[:, 0].mean())
    assert table.loc["l2=10", "dkl_agg_stderr"] == pytest.approx(agg(worse).std(ddof=1) / 2)
    assert table.best.sum() == 1 and table.loc["l2=0.1", "best"]
    assert table.default.sum() == 1 and table.loc["default", "default"]
    verdict = default_against_best("mlp", rows)
    excess = agg(default) - agg(better)
    assert verdict.best == "l2=0.1" and verdict.default == "default"
    assert verdict.excess == pytest.approx(excess.mean())
    assert verdict.stderr == pytest.approx(excess.std(ddof=1) / 2)
    assert verdict.num_problems == 4
    assert verdict.within_noise == (excess.mean() < 2 * excess.std(ddof=1) / 2)
    assert "l2=0.1" in verdict.line()
    assert f"; the default {agg(default).mean():.4g}, paired excess" in verdict.line()


def test_verdict_is_within_noise_when_the_paired_excess_is_below_two_standard_errors():
    default = np.array([[1.0, 10.0], [2.0, 20.0], [1.0, 10.0], [2.0, 20.0]])
    # best is lower on average by a little, with a paired difference that swings sign
    best = default + np.array([[-0.5, 0.0], [0.4, 0.0], [-0.5, 0.0], [0.4, 0.0]])
    verdict = default_against_best("mlp", _rows({"default": default, "l2=0.1": best}))
    assert verdict.best == "l2=0.1"
    assert verdict.excess == pytest.approx(0.05)
    assert verdict.within_noise
    assert "within noise" in verdict.line()


def test_the_default_being_the_best_says_so():
    default = np.array([[1.0, 10.0]] * 4)
    verdict = default_against_best("mlp", _rows({"default": default, "l2=10": default * 2}))
    assert verdict.best == "default" and verdict.within_noise
    assert "registered default is the selected point" in verdict.line()
    # The runner-up's paired margin over the default: agg doubles from 2 to 4 on every problem.
    assert verdict.runner_up == "l2=10"
    assert verdict.runner_up_excess == pytest.approx(2.0) and verdict.runner_up_stderr == pytest.approx(0.0)
    assert "the next best, l2=10, is +2 +- 0 above it" in verdict.line()


def test_a_nan_estimate_makes_its_point_nan_never_a_silent_average():
    default = np.array([[1.0, 10.0]] * 4)
    broken = default.copy()
    broken[2, 1] = math.nan
    table = selection_table(_rows({"default": default, "l2=10": broken})).set_index("point")
    assert math.isnan(table.loc["l2=10", "dkl_agg"])
    assert table.loc["default", "best"]


def test_an_agent_without_a_sweep_is_refused_by_name():
    with pytest.raises(ValueError, match="agent: no reference sweep for 'epinet'"):
        selection.studies("epinet")


@pytest.mark.slow
def test_run_selection_scores_every_point_on_the_same_problems(tmp_path):
    sweep = selection_sweep(num_trains=(3,), temperatures=(0.1,), num_seeds=2)
    rows = run_selection("mlp", sweep, 2, num_test=8, num_models=8, resume_dir=tmp_path)
    # The folder records the versions that named its settings, and holds exactly those settings.
    from decision_bench._src.versions import result_versions

    assert selection.parts_versions(tmp_path) == dict(result_versions())
    planned = selection.setting_files("mlp", sweep, 2, num_test=8, num_models=8, versions=dict(result_versions()))
    assert {p.name for p in tmp_path.glob("setting-*.csv")} == set(planned)
    assert set(rows.point) == {point_label("mlp", p) for p in PAPER_STUDIES["mlp"][0].points()}
    assert rows.groupby("point").size().eq(2 * 2).all()  # 2 seeds x tau 1 and 10
    per_point = rows.pivot_table(index=["seed", "tau"], columns="point", values="kl")
    assert per_point.notna().all().all()
    # The default is scored as run_testbed scores the registered default (tune's rule).
    from decision_bench.evaluation import run_testbed

    ours = run_testbed("mlp", sweep=sweep, seeds=2, num_test=8, num_models=8)
    ours = ours.set_index(["seed", "tau"]).kl.sort_index()
    np.testing.assert_allclose(per_point["default"].sort_index().to_numpy(), ours.to_numpy(), rtol=1e-2)


def test_a_folder_made_with_other_versions_is_refused_before_any_work(tmp_path):
    from decision_bench._src.versions import result_versions

    made = {**dict(result_versions()), "jax": "0.0.1"}
    (tmp_path / selection.VERSIONS_FILE).write_text(__import__("json").dumps(made))
    sweep = selection_sweep(num_trains=(3,), temperatures=(0.1,), num_seeds=1)
    with pytest.raises(ValueError, match=r"^resume_dir: .* made with jax 0.0.1 \(now .*\).*another folder"):
        run_selection("mlp", sweep, 1, resume_dir=tmp_path)
    assert not list(tmp_path.glob("setting-*.csv"))


def test_one_problem_gives_no_verdict():
    rows = _rows({"default": np.array([[1.0, 10.0]] * 4), "l2=0.1": np.array([[0.5, 5.0]] * 4)})
    one = rows[(rows.num_train == 1) & (rows.seed == 0)]
    assert "too few for a verdict" in default_against_best("mlp", one).line()


_STORED = sorted(Path(__file__).parents[2].joinpath("bench", "data").glob("selection_*_rows.csv"))


@pytest.mark.parametrize("rows_path", _STORED, ids=[p.stem for p in _STORED])
def test_stored_selection_table_is_what_its_stored_rows_give(rows_path):
    """bench/data/selection_<agent>.csv (quoted in docs/fidelity.md) is selection_table of
    the rows stored beside it, and those rows hold every planned point on the stated slice."""
    rows = pd.read_csv(rows_path)
    agent = rows.agent.iloc[0]
    stored = pd.read_csv(rows_path.with_name(f"selection_{agent}.csv"))
    computed = selection_table(rows)
    assert list(computed.point) == list(stored.point)
    for column in ("dkl_1", "dkl_10", "dkl_agg", "dkl_agg_stderr"):
        np.testing.assert_allclose(computed[column], stored[column], rtol=1e-12)
    assert list(computed.best) == list(stored.best) and list(computed.default) == list(stored.default)
    planned = {point_label(agent, p) for s in PAPER_STUDIES[agent] for p in s.points()}
    assert planned <= set(rows.point)
    num_trains, temperatures = selection.slice_of(agent)
    assert set(rows.num_train) == set(num_trains) and set(rows.temperature) == set(temperatures)
    assert set(rows.seed) == set(range(5)) and set(rows.tau) == {1, 10}
    settings = len(num_trains) * len(temperatures)
    assert (computed.num_problems == settings * 5).all()


def test_sgmcmc_scores_its_own_stated_slice_and_every_other_agent_the_common_one():
    assert len(selection_sweep(*selection.slice_of("sgmcmc")).settings) == 2
    for agent in sorted(set(PAPER_STUDIES) - {"sgmcmc"}):
        assert len(selection_sweep(*selection.slice_of(agent)).settings) == 12
