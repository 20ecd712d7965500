"""A preset computed by worker processes gives the rows one process gives."""

from __future__ import annotations

import pandas as pd
import pytest

from decision_bench.experiments.presets import Preset
from decision_bench.experiments.reproduce import run_preset

TIMING_COLUMNS = ("fit_seconds", "eval_seconds", "compile_seconds", "wall_seconds")


def _tiny_preset() -> Preset:
    return Preset(
        name="tiny",
        agents=("dropout",),
        testbed_sweeps=("demo",),
        testbed_seeds=2,
        num_test=30,
        num_models=20,
        testbed_overrides=(("dropout", (("num_steps", 40),)),),
        bandit_env="NeuralBandit-v0",
        bandit_env_kwargs=(("input_dim", 2), ("num_actions", 8), ("temperature", 0.5)),
        bandit_steps=60,
        bandit_seeds=2,
        bandit_overrides=(),
    )


def _without_timings(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in TIMING_COLUMNS if c in frame.columns])


@pytest.mark.slow
def test_two_worker_processes_give_the_rows_of_one_process(tmp_path):
    one = run_preset(_tiny_preset(), tmp_path / "one", progress=False, workers=1)
    two = run_preset(_tiny_preset(), tmp_path / "two", progress=False, workers=2)
    for single, pooled in zip(one, two):
        assert len(single) > 0
        pd.testing.assert_frame_equal(_without_timings(pooled), _without_timings(single))
