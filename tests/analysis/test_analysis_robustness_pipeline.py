"""`analyze` on results of several generative families and bandit dimensions (issue 14)."""

import numpy as np
import pandas as pd
import pytest

from decision_bench.analysis import analyze
from decision_bench.analysis import robustness_outputs as RO

AGENTS = ("a", "b", "c", "d", "e")
FAMILIES = (("relu", "50-50"), ("tanh", "50-50"), ("relu", "10-10"))


def _tables(seeds=(0, 1, 2), dims=(2, 10), families=FAMILIES):
    """Agent quality q_i drives every metric under every family, with seeded noise."""
    rng = np.random.default_rng(0)
    quality = {a: 1.0 + i for i, a in enumerate(AGENTS)}
    testbed, bandit = [], []
    for activation, hidden in families:
        for agent in AGENTS:
            for seed in seeds:
                for num_train in (10, 100):
                    for tau, kappa in ((1, np.nan), (10, np.nan), (10, 2)):
                        kl = 0.01 * quality[agent] * tau * np.exp(0.1 * rng.normal())
                        testbed.append(dict(
                            agent=agent, prior="mlp", activation=activation, hidden_sizes=hidden, input_dim=2,
                            num_train=num_train, temperature=0.1, tau=tau, kappa=kappa, seed=seed, kl=kl,
                        ))  # fmt: skip
                run_dims = dims if (activation, hidden) == ("relu", "50-50") else (2,)
                for dim in run_dims:
                    final = 10.0 * quality[agent] * np.exp(0.1 * rng.normal())
                    for step in (50, 100):
                        bandit.append(dict(
                            agent=agent, env="NeuralBandit-v0", input_dim=dim, num_actions=20 * dim,
                            temperature=0.1, activation=activation, hidden_sizes=hidden, seed=seed, step=step,
                            cumulative_regret=final * step / 100, final_regret=final, error="",
                        ))  # fmt: skip
    return pd.DataFrame(testbed), pd.DataFrame(bandit)


def _write(directory, testbed, bandit):
    directory.mkdir(exist_ok=True)
    testbed.to_csv(directory / "testbed.csv", index=False)
    bandit.to_csv(directory / "bandit.csv", index=False)


def test_family_labels_and_groups():
    assert RO.family_label("relu", "50-50") == "relu-w50"
    assert RO.family_label("tanh", "10-20") == "tanh-10-20"
    assert RO.family_label("gelu", 50) == "gelu-50"
    testbed, bandit = _tables()
    models = RO.with_models(pd.concat([testbed, bandit]))
    assert list(pd.unique(models["model"])) == ["relu-w50", "tanh-w50", "relu-w10"]
    groups = RO.model_groups(models)
    assert groups == {"activation": ["relu-w50", "tanh-w50"], "width": ["relu-w50", "relu-w10"]}
    # a family in neither group adds the group of all families
    odd = RO.with_models(pd.DataFrame({"activation": ["relu", "tanh"], "hidden_sizes": ["50-50", "10-10"]}))
    assert RO.model_groups(odd) == {"all": ["relu-w50", "tanh-w10"]}
    # rows without family columns are the default family
    assert set(RO.with_models(bandit.drop(columns=["activation", "hidden_sizes"]))["model"]) == {"relu-w50"}


def test_needs_robustness_only_for_several_families_or_dimensions():
    testbed, bandit = _tables(families=FAMILIES[:1], dims=(2,))
    assert not RO.needs_robustness(testbed, bandit)
    assert RO.needs_robustness(*_tables(families=FAMILIES[:1], dims=(2, 10)))
    assert RO.needs_robustness(*_tables(dims=(2,)))


def test_analyze_writes_matrices_figures_and_report_lines(tmp_path):
    testbed, bandit = _tables()
    _write(tmp_path, testbed, bandit)
    with pytest.warns(RuntimeWarning):  # the testbed has no d = 10 rows: noted, not an error
        result = analyze(tmp_path, num_resamples=200, seed=0)
    robust = result.robustness
    assert robust is not None and robust.regret_dimension == 2
    summary = pd.read_csv(tmp_path / "robustness_summary.csv")
    # 2 groups x 4 metrics x 2 methods
    assert len(summary) == 16
    assert set(summary["metric"]) == {"dkl_1", "dkl_10", "dkl_10_kappa2", "regret"}
    # every agent is ordered the same under every family: correlations near 1
    assert (summary.loc[summary["method"] == "spearman", "mean"] > 0.8).all()
    assert (summary["mean_low"] <= summary["mean"] + 1e-12).all() and (summary["mean"] <= summary["mean_high"] + 1e-12).all()
    matrices = pd.read_csv(tmp_path / "robustness_matrices.csv")
    one = matrices[(matrices["group"] == "activation") & (matrices["metric"] == "dkl_10") & (matrices["method"] == "pearson_log")]
    square = one.pivot(index="model_a", columns="model_b", values="r")
    assert square.shape == (2, 2) and np.allclose(np.diag(square), 1.0) and np.allclose(square, square.T)
    for group in ("activation", "width"):
        for metric in ("dkl_1", "dkl_10", "dkl_10_kappa2", "regret"):
            for method in ("pearson_log", "spearman"):
                assert (tmp_path / f"robustness_{group}_{metric}_{method}.png").stat().st_size > 0
    by_dim = pd.read_csv(tmp_path / "regret_by_dimension.csv")
    assert list(zip(by_dim["input_dim"], by_dim["metric"])) == [(2, "dkl_10"), (2, "dkl_1"), (10, "dkl_10"), (10, "dkl_1")]
    assert (tmp_path / "fig16_regret_vs_dkl1_by_dim.png").exists() and (tmp_path / "fig17_regret_vs_dkl10_by_dim.png").exists()
    report = (tmp_path / "report.md").read_text()
    assert "one slice: family relu-w50, bandit input dimension 2" in report
    assert "## Robustness across generative models" in report
    assert report.count("mean off-diagonal correlation Pearson (log)") == 8  # a line per (group, metric)
    assert "- d = 10, d_KL^10: Pearson (log)" in report
    # the headline uses the default family at d = 2 only: 5 agents x 3 seeds
    assert result.correlations.query("level == 'agent_seed' and metric == 'dkl_10'")["n"].item() == 15


def test_headline_slice_equals_the_analysis_of_that_slice_alone(tmp_path):
    testbed, bandit = _tables()
    _write(tmp_path / "all", testbed, bandit)
    default_tb = testbed[(testbed["activation"] == "relu") & (testbed["hidden_sizes"] == "50-50")]
    default_bd = bandit[(bandit["activation"] == "relu") & (bandit["hidden_sizes"] == "50-50") & (bandit["input_dim"] == 2)]
    _write(tmp_path / "one", default_tb, default_bd)
    with pytest.warns(RuntimeWarning):
        mixed = analyze(tmp_path / "all", num_resamples=200)
    alone = analyze(tmp_path / "one", num_resamples=200)
    assert alone.robustness is None and not list((tmp_path / "one").glob("robustness_*"))
    pd.testing.assert_frame_equal(mixed.correlations, alone.correlations)


def test_missing_headline_family_in_bandit_is_one_line(tmp_path):
    testbed, bandit = _tables()
    _write(tmp_path, testbed, bandit[bandit["activation"] == "tanh"])
    with pytest.raises(ValueError, match=r"^bandit.csv has no runs of the generative family 'relu-w50'[^\n]*$"):
        analyze(tmp_path, num_resamples=200)


def test_model_correlations_against_hand_computed_values():
    from decision_bench.analysis.robustness import model_correlations

    # log scores: A = (0, 1, 2), B = (0, 2, 1), C = (2, 1, 0). Centred: (-1, 0, 1), (-1, 1, 0),
    # (1, 0, -1); r(A, B) = 1 / 2, r(A, C) = -1, r(B, C) = -1 / 2; ranks are the same numbers.
    scores = pd.DataFrame(np.exp([[0, 0, 2], [1, 2, 1], [2, 1, 0]]), index=list("xyz"), columns=list("ABC"))
    expected = np.array([[1.0, 0.5, -1.0], [0.5, 1.0, -0.5], [-1.0, -0.5, 1.0]])
    for method in ("pearson_log", "spearman"):
        np.testing.assert_allclose(model_correlations(scores, method).to_numpy(), expected, atol=1e-12)
