"""Tests of decision_bench.analysis.robustness (agent rankings across generative models)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from decision_bench.analysis import robustness as R

MODELS = ["relu-w50", "tanh-w50", "relu-w10"]


def _scores(values, agents=("a", "b", "c"), models=MODELS):
    return pd.DataFrame(np.asarray(values, float), index=list(agents), columns=list(models))


def _testbed(kl, seeds, tau=10, kappa=np.nan, agents=None, models=None, **settings):
    """Rows from kl[a, m, s] (numpy array) for one test design and one setting."""
    kl = np.asarray(kl, float)
    agents = agents or [f"agent{i}" for i in range(kl.shape[0])]
    models = models or [f"model{j}" for j in range(kl.shape[1])]
    rows = [
        {"agent": a, "model": m, "seed": s, "tau": tau, "kappa": kappa, "kl": kl[i, j, k], **settings}
        for i, a in enumerate(agents)
        for j, m in enumerate(models)
        for k, s in enumerate(seeds)
    ]
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------
# model_correlations


def test_pearson_log_matches_numpy_and_scipy():
    values = np.array([[0.10, 0.30, 0.2], [0.40, 0.20, 0.9], [0.05, 0.50, 0.3]])
    result = R.model_correlations(_scores(values), "pearson_log")
    expected = np.corrcoef(np.log(values), rowvar=False)
    np.testing.assert_allclose(result.to_numpy(), expected, atol=1e-12)
    r01 = stats.pearsonr(np.log(values[:, 0]), np.log(values[:, 1])).statistic
    assert result.loc["relu-w50", "tanh-w50"] == pytest.approx(r01, abs=1e-12)
    assert list(result.index) == MODELS and list(result.columns) == MODELS


def test_spearman_matches_scipy_with_ties():
    values = np.array([[1.0, 3.0, 2.0], [2.0, 1.0, 2.0], [3.0, 3.0, 7.0], [4.0, 0.5, 1.0]])
    result = R.model_correlations(_scores(values, agents="abcd"), "spearman")
    expected = stats.spearmanr(values).statistic
    np.testing.assert_allclose(result.to_numpy(), expected, atol=1e-12)


@pytest.mark.parametrize("method", ["pearson_log", "spearman"])
def test_symmetric_with_unit_diagonal(method):
    values = np.random.default_rng(1).lognormal(size=(6, 4))
    result = R.model_correlations(_scores(values, agents="abcdef", models="wxyz"), method).to_numpy()
    np.testing.assert_array_equal(result, result.T)
    np.testing.assert_array_equal(np.diag(result), np.ones(4))
    assert np.all(np.abs(result) <= 1.0)


def test_consistent_ranking_gives_spearman_one_and_reversed_model_minus_one():
    base = np.array([0.1, 0.2, 0.5, 0.9])
    # Same order under every model, different (nonlinear) values: Spearman is exactly 1.
    consistent = np.stack([base, base**2 * 3, np.sqrt(base) + 1], axis=1)
    assert np.all(R.model_correlations(_scores(consistent, agents="abcd"), "spearman").to_numpy() == 1.0)
    reversed_ = np.concatenate([consistent, (1.0 / base)[:, None]], axis=1)
    result = R.model_correlations(_scores(reversed_, agents="abcd", models=[*MODELS, "flip"]), "spearman")
    np.testing.assert_allclose(result.loc["flip", MODELS].to_numpy(), -1.0)
    np.testing.assert_allclose(result.loc[MODELS, MODELS].to_numpy(), 1.0)


def test_constant_model_has_no_correlation():
    values = np.array([[1.0, 2.0], [2.0, 2.0], [3.0, 2.0]])
    result = R.model_correlations(_scores(values, models=["x", "const"]), "spearman")
    assert result.loc["x", "x"] == 1.0
    assert np.isnan(result.loc["x", "const"]) and np.isnan(result.loc["const", "const"])


def test_model_correlations_errors():
    good = _scores(np.ones((3, 3)) + np.arange(3)[:, None])
    with pytest.raises(ValueError, match="unknown method"):
        R.model_correlations(good, "kendall")
    with pytest.raises(ValueError, match="scores > 0.*spearman"):
        R.model_correlations(_scores([[0.1, 0.2, 0.3], [0.0, 0.5, 0.6], [1.0, 2.0, 3.0]]), "pearson_log")
    # spearman needs no logarithm, so the same scores are accepted
    with_zero = _scores([[0.1, 0.2, 0.3], [0.0, 0.5, 0.6], [1.0, 2.0, 3.0]])
    assert R.model_correlations(with_zero, "spearman").shape == (3, 3)
    with pytest.raises(ValueError, match="at least 2 models"):
        R.model_correlations(good[["relu-w50"]], "spearman")
    with pytest.raises(ValueError, match="at least 2 agents"):
        with pytest.warns(RuntimeWarning, match="leaving out agents"):
            R.model_correlations(_scores([[1.0, 2.0, 3.0], [np.nan, 1.0, 1.0], [np.nan, 2.0, 2.0]]), "spearman")
    with pytest.raises(ValueError, match="finite"):
        R.model_correlations(_scores([[1.0, 2.0, np.inf], [1.0, 1.0, 1.0], [3.0, 2.0, 2.0]]), "spearman")


# ---------------------------------------------------------------------------
# agent_scores


def test_agent_scores_averages_settings_of_seed_means():
    # agent x, model m0: setting T=10 has seeds 0, 1 (kl 1, 3 -> mean 2) and
    # T=100 only seed 0 (kl 10): score (2 + 10) / 2 = 6, not the row mean 14 / 3.
    rows = [
        ("x", "m0", 0, 10, 1.0), ("x", "m0", 1, 10, 3.0), ("x", "m0", 0, 100, 10.0),
        ("x", "m1", 0, 10, 4.0), ("x", "m1", 1, 10, 4.0), ("x", "m1", 0, 100, 4.0),
        ("y", "m0", 0, 10, 5.0), ("y", "m0", 1, 10, 7.0), ("y", "m0", 0, 100, 9.0),
        ("y", "m1", 0, 10, 1.0), ("y", "m1", 1, 10, 2.0), ("y", "m1", 0, 100, 3.0),
    ]  # fmt: skip
    frame = pd.DataFrame(rows, columns=["agent", "model", "seed", "num_train", "kl"]).assign(tau=10, kappa=np.nan)
    with pytest.warns(RuntimeWarning, match="different seed sets"):
        scores = R.agent_scores(frame, "dkl_10")
    expected = pd.DataFrame({"m0": [6.0, 7.5], "m1": [4.0, 2.25]}, index=["x", "y"])
    np.testing.assert_allclose(scores.loc[["x", "y"], ["m0", "m1"]].to_numpy(), expected.to_numpy())
    assert scores.index.name == "agent" and scores.columns.name == "model"


def test_agent_scores_selects_metric_rows_and_accepts_aliases():
    kl = np.arange(1, 1 + 3 * 3 * 2, dtype=float).reshape(3, 3, 2)
    frame = pd.concat(
        [
            _testbed(kl, [0, 1], tau=10, kappa=np.nan),
            _testbed(kl * 100, [0, 1], tau=10, kappa=2.0),
            _testbed(kl * 1000, [0, 1], tau=1, kappa=np.nan),
        ],
        ignore_index=True,
    )
    np.testing.assert_allclose(R.agent_scores(frame, "kl10").to_numpy(), kl.mean(axis=2))
    np.testing.assert_allclose(R.agent_scores(frame, "dkl_10").to_numpy(), kl.mean(axis=2))
    np.testing.assert_allclose(R.agent_scores(frame, "kl10_dyadic").to_numpy(), 100 * kl.mean(axis=2))
    np.testing.assert_allclose(R.agent_scores(frame, "kl1").to_numpy(), 1000 * kl.mean(axis=2))
    # models keep their order of first appearance, agents are sorted
    assert list(R.agent_scores(frame, "kl10").columns) == ["model0", "model1", "model2"]


def test_agent_scores_regret_uses_final_cumulative_regret():
    rows = []
    final = {("a", "m0"): [10.0, 20.0], ("a", "m1"): [5.0, 7.0], ("b", "m0"): [1.0, 3.0], ("b", "m1"): [8.0, 8.0]}
    for (agent, model), finals in final.items():
        for seed, last in enumerate(finals):
            for step, value in ((0, 0.0), (50, last / 2), (100, last)):
                rows.append({"agent": agent, "model": model, "seed": seed, "step": step, "cumulative_regret": value})
    # A failed run (error set) of agent b on m1 with a huge regret must not count.
    rows.append(
        {"agent": "b", "model": "m1", "seed": 2, "step": 100, "cumulative_regret": 1e6, "error": "diverged"}
    )
    frame = pd.DataFrame(rows)
    with pytest.warns(RuntimeWarning, match="failed bandit runs"):
        scores = R.agent_scores(frame, "regret")
    np.testing.assert_allclose(scores.loc[["a", "b"], ["m0", "m1"]].to_numpy(), [[15.0, 6.0], [2.0, 8.0]])


def test_agent_scores_errors():
    kl = np.ones((3, 3, 2))
    frame = _testbed(kl, [0, 1])
    with pytest.raises(ValueError, match="unknown metric 'kl5'"):
        R.agent_scores(frame, "kl5")
    with pytest.raises(ValueError, match="missing column 'model'"):
        R.agent_scores(frame.drop(columns="model"), "dkl_10")
    with pytest.raises(ValueError, match="missing column 'step'"):
        R.agent_scores(frame, "regret")
    with pytest.raises(ValueError, match="no finite rows for dkl_1 "):
        R.agent_scores(frame, "dkl_1")
    with pytest.raises(ValueError, match="at least 2 agents and 2 models, got 1 agents"):
        R.agent_scores(frame[frame["agent"] == "agent0"], "dkl_10")
    with pytest.raises(ValueError, match="and 1 models"):
        R.agent_scores(frame[frame["model"] == "model0"], "dkl_10")
    for message in [str(e) for e in _errors(frame)]:
        assert "\n" not in message


def _errors(frame):
    out = []
    for call in (lambda: R.agent_scores(frame, "x"), lambda: R.agent_scores(frame.drop(columns="kl"), "kl10")):
        with pytest.raises(ValueError) as info:
            call()
        out.append(info.value)
    return out


# ---------------------------------------------------------------------------
# bootstrap_model_correlations


def _noisy(num_seeds, sigma=0.8, num_agents=6, num_models=3, seed=0):
    """kl = exp(agent quality + independent noise per (agent, model, seed))."""
    rng = np.random.default_rng(seed)
    quality = np.linspace(-1.0, 1.0, num_agents)
    kl = np.exp(quality[:, None, None] + sigma * rng.normal(size=(num_agents, num_models, num_seeds)))
    return _testbed(kl, list(range(num_seeds)))


@pytest.mark.parametrize("method", ["pearson_log", "spearman"])
def test_bootstrap_interval_contains_point_and_narrows_with_seeds(method):
    few = R.bootstrap_model_correlations(_noisy(4), "dkl_10", method, num_resamples=500, seed=0)
    many = R.bootstrap_model_correlations(_noisy(64), "dkl_10", method, num_resamples=500, seed=0)
    for result in (few, many):
        point, low, high = (m.to_numpy() for m in (result.point, result.low, result.high))
        assert np.all(low <= point + 1e-12) and np.all(point <= high + 1e-12)
        assert result.mean_low <= result.mean <= result.mean_high
        assert result.num_valid == result.num_resamples == 500
        assert result.draws.shape == (500, 3, 3)
    assert (many.mean_high - many.mean_low) < 0.5 * (few.mean_high - few.mean_low)
    off = ~np.eye(3, dtype=bool)
    assert np.all((many.high - many.low).to_numpy()[off] < (few.high - few.low).to_numpy()[off])
    # the point estimate is exactly model_correlations(agent_scores(...))
    frame = _noisy(4)
    pd.testing.assert_frame_equal(few.point, R.model_correlations(R.agent_scores(frame, "dkl_10"), method))


def test_bootstrap_mean_is_mean_of_off_diagonal_entries_and_interval_of_replicate_means():
    result = R.bootstrap_model_correlations(_noisy(8), "dkl_10", "pearson_log", num_resamples=400, seed=3)
    point = result.point.to_numpy()
    assert result.mean == pytest.approx(point[np.triu_indices(3, 1)].mean())
    replicate_means = result.draws[:, [0, 0, 1], [1, 2, 2]].mean(axis=1)
    low, high = np.percentile(replicate_means, [2.5, 97.5])
    assert result.mean_low == pytest.approx(low) and result.mean_high == pytest.approx(high)


def test_bootstrap_resamples_seeds_jointly_across_agents_and_models():
    # kl = agent quality x environment difficulty of (model, seed), shared by all
    # agents. Resampling a seed for every agent at once shifts every agent's
    # log-score of a model by the same amount, so each replicate's Pearson (log)
    # matrix equals the point one; resampling per agent would not.
    rng = np.random.default_rng(0)
    quality = np.array([0.1, 0.3, 0.2, 1.0, 0.6])
    quality_by_model = np.stack([quality, quality**1.5, quality * [1, 2, 1, 1, 3]], axis=1)
    environment = rng.lognormal(sigma=1.5, size=(3, 10))
    kl = quality_by_model[:, :, None] * environment[None, :, :]
    result = R.bootstrap_model_correlations(_testbed(kl, list(range(10))), "kl10", "pearson_log", 400, seed=1)
    np.testing.assert_allclose(result.low.to_numpy(), result.point.to_numpy(), atol=1e-9)
    np.testing.assert_allclose(result.high.to_numpy(), result.point.to_numpy(), atol=1e-9)
    assert result.point.loc["model0", "model2"] < 0.99  # the models do disagree, so the test is not vacuous


def test_bootstrap_is_reproducible_and_level_widens_interval():
    frame = _noisy(6)
    a = R.bootstrap_model_correlations(frame, "dkl_10", "spearman", 400, seed=5, level=0.95)
    b = R.bootstrap_model_correlations(frame, "dkl_10", "spearman", 400, seed=5, level=0.95)
    c = R.bootstrap_model_correlations(frame, "dkl_10", "spearman", 400, seed=5, level=0.5)
    np.testing.assert_array_equal(a.draws, b.draws)
    assert c.mean_high - c.mean_low <= a.mean_high - a.mean_low
    assert a.summary()["num_models"] == 3 and a.summary()["method"] == "spearman"


def test_bootstrap_errors():
    frame = _noisy(3)
    with pytest.raises(ValueError, match="level"):
        R.bootstrap_model_correlations(frame, "dkl_10", "spearman", level=1.0)
    with pytest.raises(ValueError, match="num_resamples"):
        R.bootstrap_model_correlations(frame, "dkl_10", "spearman", num_resamples=0)
    with pytest.raises(ValueError, match="unknown method"):
        R.bootstrap_model_correlations(frame, "dkl_10", "pearson")
    with pytest.raises(ValueError, match="unknown metric"):
        R.bootstrap_model_correlations(frame, "regret10", "spearman")


# ---------------------------------------------------------------------------
# regret_kl_correlation_by_dimension


def _by_dimension_frames(seed=0):
    rng = np.random.default_rng(seed)
    agents = ["a", "b", "c", "d", "e"]
    kl10 = {2: [0.1, 0.2, 0.3, 0.5, 0.9], 10: [0.3, 0.1, 0.2, 0.8, 0.5]}
    kl1 = {2: [0.5, 0.1, 0.4, 0.2, 0.3], 10: [0.2, 0.4, 0.1, 0.3, 0.5]}
    testbed, bandit = [], []
    for dim in (2, 10):
        for i, agent in enumerate(agents):
            for seed_ in range(3):
                noise = np.exp(0.05 * rng.normal(size=2))
                common = dict(agent=agent, input_dim=dim, seed=seed_, kappa=np.nan)
                testbed.append(dict(common, tau=10, kl=kl10[dim][i] * noise[0]))
                testbed.append(dict(common, tau=1, kl=kl1[dim][i] * noise[1]))
                # regret grows with d_KL^10 (times a per-seed factor)
                final = 100 * kl10[dim][i] ** 2 * np.exp(0.05 * rng.normal())
                for step, value in ((0, 0.0), (10, final)):
                    bandit.append(dict(agent=agent, input_dim=dim, seed=seed_, step=step, cumulative_regret=value))
    return pd.DataFrame(testbed), pd.DataFrame(bandit)


def test_regret_kl_correlation_by_dimension_agent_level():
    testbed, bandit = _by_dimension_frames()
    table = R.regret_kl_correlation_by_dimension(testbed, bandit, metrics=("kl10", "kl1"), num_resamples=200)
    assert list(table.columns) == list(R.BY_DIMENSION_COLUMNS)
    assert list(zip(table["input_dim"], table["metric"])) == [
        (2, "dkl_10"), (2, "dkl_1"), (10, "dkl_10"), (10, "dkl_1"),
    ]  # fmt: skip
    assert (table["n"] == 5).all() and (table["points"] == "agent").all()
    for dim in (2, 10):
        tb = testbed[testbed["input_dim"] == dim]
        final = bandit[(bandit["input_dim"] == dim) & (bandit["step"] == 10)]
        regret = final.groupby("agent")["cumulative_regret"].mean()
        for tau, metric in ((10, "dkl_10"), (1, "dkl_1")):
            kl = tb[tb["tau"] == tau].groupby("agent")["kl"].mean()
            row = table[(table["input_dim"] == dim) & (table["metric"] == metric)].iloc[0]
            assert row["spearman"] == pytest.approx(stats.spearmanr(kl, regret[kl.index]).statistic)
            assert row["pearson_log"] == pytest.approx(stats.pearsonr(np.log(kl), np.log(regret[kl.index])).statistic)
            assert row["pearson_ci_low"] <= row["pearson_ci_high"]
    assert table.loc[table["metric"] == "dkl_10", "spearman"].min() > 0.99


def test_regret_kl_correlation_by_dimension_agent_seed_points_and_errors():
    testbed, bandit = _by_dimension_frames()
    table = R.regret_kl_correlation_by_dimension(testbed, bandit, points="agent_seed", num_resamples=200)
    assert (table["n"] == 15).all() and (table["points"] == "agent_seed").all()
    with pytest.raises(ValueError, match="bandit is missing column 'input_dim'"):
        R.regret_kl_correlation_by_dimension(testbed, bandit.drop(columns="input_dim"))
    with pytest.raises(ValueError, match="mixes generative models"):
        R.regret_kl_correlation_by_dimension(testbed.assign(model=np.where(testbed["seed"] == 0, "x", "y")), bandit)
    with pytest.raises(ValueError, match="testbed metrics"):
        R.regret_kl_correlation_by_dimension(testbed, bandit, metrics=("regret",))
    with pytest.raises(ValueError, match="need >= 3"):
        R.regret_kl_correlation_by_dimension(
            testbed[testbed["agent"].isin(["a", "b"])], bandit[bandit["agent"].isin(["a", "b"])]
        )


# ---------------------------------------------------------------------------
# heatmap


def test_heatmap_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    result = R.bootstrap_model_correlations(_noisy(5), "dkl_10", "spearman", num_resamples=400)
    path = R.heatmap(result.point, "d_KL^10 (spearman)", tmp_path / "fig10.png", result.low, result.high)
    assert path == tmp_path / "fig10.png"
    data = path.read_bytes()
    assert len(data) > 1000 and data.startswith(b"\x89PNG\r\n\x1a\n")
    plain = R.heatmap(result.point.iloc[:2, :2], "plain", tmp_path / "plain.png")
    assert plain.read_bytes().startswith(b"\x89PNG")


def test_heatmap_rejects_bad_input(tmp_path):
    square = pd.DataFrame(np.eye(2), index=["a", "b"], columns=["a", "b"])
    with pytest.raises(ValueError, match=r"\.png"):
        R.heatmap(square, "t", tmp_path / "x.pdf")
    with pytest.raises(ValueError, match="square"):
        R.heatmap(square.iloc[:, :1], "t", tmp_path / "x.png")
    with pytest.raises(ValueError, match="same labels"):
        R.heatmap(pd.DataFrame(np.eye(2), index=["a", "b"], columns=["b", "a"]), "t", tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_bootstrap_leaves_out_incomplete_agents_and_counts_undefined_replicates():
    kl = np.exp(np.random.default_rng(2).normal(size=(4, 3, 3)))
    frame = _testbed(kl, [0, 1, 2])
    # agent3 has no rows for model2: left out of every correlation.
    frame = frame[~((frame["agent"] == "agent3") & (frame["model"] == "model2"))]
    with pytest.warns(RuntimeWarning, match="no score for"):
        assert np.isnan(R.agent_scores(frame, "dkl_10").loc["agent3", "model2"])
    with pytest.warns(RuntimeWarning, match="leaving out agents"):
        result = R.bootstrap_model_correlations(frame, "dkl_10", "spearman", 400)
    assert result.num_agents == 3
    # A noisy estimate below 0 on seed 0: the point mean is > 0, but replicates
    # drawing seed 0 twice or more have a mean <= 0 and no log.
    frame = _testbed(kl, [0, 1, 2])
    frame.loc[(frame["agent"] == "agent0") & (frame["model"] == "model0"), "kl"] = [-1.0, 0.6, 0.6]
    with pytest.warns(RuntimeWarning, match="undefined correlation"):
        result = R.bootstrap_model_correlations(frame, "dkl_10", "pearson_log", 600)  # ~3 in 4 defined: >= 400 for the 95% interval
    assert 0 < result.num_valid < 600
    assert np.isfinite(result.mean_low) and result.mean_low <= result.mean_high
