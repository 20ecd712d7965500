"""A tiny robustness study end to end: reproduce (2 agents, 2 activations, 2 seeds) then analyze."""

import numpy as np
import pandas as pd
import pytest

from decision_bench.cli.reproduce import reproduce
from decision_bench.evaluation.sweeps import Sweep, TestbedSetting, TestDesign
from decision_bench.experiments import presets
from decision_bench.experiments import reproduce as reproduce_module
from decision_bench.experiments.presets import Preset, neural_bandit_setting

TINY = "tiny_families"


def _tiny_sweep() -> Sweep:
    settings = tuple(TestbedSetting(input_dim=2, num_train=10, temperature=0.5, activation=a) for a in ("relu", "tanh"))
    return Sweep(TINY, settings, (TestDesign(1), TestDesign(10), TestDesign(10, 2)), num_seeds=2)


@pytest.mark.slow
def test_tiny_robustness_study_end_to_end(tmp_path, monkeypatch):
    original = presets.testbed_sweep
    monkeypatch.setattr(presets, "PRESET_SWEEPS", (*presets.PRESET_SWEEPS, TINY))
    monkeypatch.setattr(reproduce_module, "testbed_sweep", lambda name: _tiny_sweep() if name == TINY else original(name))
    small = (("mlp", (("num_steps", 30),)), ("ensemble", (("num_ensemble", 2), ("num_steps", 30))))
    preset = Preset(
        name="tiny-robustness",
        agents=("mlp", "ensemble"),
        testbed_sweeps=(TINY,),
        testbed_seeds=2,
        num_test=20,
        num_models=10,
        testbed_overrides=small,
        bandit_env="NeuralBandit-v0",
        bandit_env_kwargs=(
            (("input_dim", 2), ("num_actions", 6), ("temperature", 0.5)),
            neural_bandit_setting(2, "tanh", temperature=0.5),
            (("input_dim", 3), ("num_actions", 6), ("temperature", 0.5)),
        ),
        bandit_steps=40,
        bandit_seeds=2,
        bandit_overrides=small,
    )
    out = tmp_path / "run"
    with pytest.warns(RuntimeWarning):
        result = reproduce(preset, out, num_resamples=200, progress=False)

    bandit = pd.read_csv(out / "bandit.csv")
    assert {"activation", "hidden_sizes", "input_dim"} <= set(bandit.columns)
    runs = bandit.drop_duplicates(["agent", "activation", "input_dim"])
    assert sorted(zip(runs["activation"], runs["input_dim"])) == sorted([("relu", 2), ("tanh", 2), ("relu", 3)] * 2)
    testbed = pd.read_csv(out / "testbed.csv")
    assert set(testbed["activation"]) == {"relu", "tanh"}

    robust = result.robustness
    assert robust is not None
    matrices = pd.read_csv(out / "robustness_matrices.csv")
    for (metric, method), one in matrices.groupby(["metric", "method"]):
        square = one.pivot(index="model_a", columns="model_b", values="r").to_numpy()
        assert square.shape == (2, 2), (metric, method)
        assert np.allclose(square, square.T, equal_nan=True)
        assert np.all(np.diag(square)[np.isfinite(np.diag(square))] == 1.0)
    assert set(matrices["metric"]) == {"dkl_1", "dkl_10", "dkl_10_kappa2", "regret"}
    summary = pd.read_csv(out / "robustness_summary.csv")
    assert len(summary) == 8 and set(summary["group"]) == {"activation"}
    for metric in ("dkl_1", "dkl_10", "dkl_10_kappa2", "regret"):
        for method in ("pearson_log", "spearman"):
            assert (out / f"robustness_activation_{metric}_{method}.png").stat().st_size > 0
    report = (out / "report.md").read_text()
    assert "## Robustness across generative models" in report
    assert report.count(": mean off-diagonal correlation Pearson (log)") == 4  # a line per metric

    # resumable: a second run computes nothing
    def no_compute(self, cell):
        raise AssertionError(f"cell {cell.id} was recomputed")

    monkeypatch.setattr(reproduce_module.CellRunner, "__call__", no_compute)
    with pytest.warns(RuntimeWarning):
        reproduce(preset, out, num_resamples=200, progress=False)
    pd.testing.assert_frame_equal(pd.read_csv(out / "bandit.csv"), bandit)
