"""The bring-your-own-agent story, run from docs/custom_agent.md itself so the docs cannot rot."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decision_bench.cli.reproduce import reproduce
from decision_bench.experiments import presets
from decision_bench.experiments import reproduce as reproduce_module
from decision_bench.experiments.presets import Preset
from decision_bench.experiments.reproduce import load_agent_file

DOC = Path(__file__).resolve().parents[2] / "docs" / "custom_agent.md"


@pytest.fixture
def agent_file(tmp_path):
    text = DOC.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    source = next(b for b in blocks if "def make_agent" in b)
    path = tmp_path / "my_agent.py"
    path.write_text(source)
    return path


def test_documented_example_is_about_thirty_lines(agent_file):
    code = [line for line in agent_file.read_text().splitlines() if line.strip()]
    assert 20 <= len(code) <= 45


def test_agent_file_loads_with_its_name(agent_file):
    name, make_agent = load_agent_file(agent_file)
    assert name == "anchored_linear" and callable(make_agent)


def test_agent_file_without_make_agent_is_a_clear_error(tmp_path):
    bad = tmp_path / "empty.py"
    bad.write_text("x = 1\n")
    with pytest.raises(ValueError, match="make_agent"):
        load_agent_file(bad)
    with pytest.raises(ValueError, match="does not exist"):
        load_agent_file(tmp_path / "missing.py")


def _tiny_preset() -> Preset:
    return Preset(
        name="tiny",
        agents=("mlp",),
        testbed_sweeps=("demo",),
        testbed_seeds=3,
        num_test=40,
        num_models=20,
        testbed_overrides=(("mlp", (("num_steps", 50),)),),
        bandit_env="NeuralBandit-v0",
        bandit_env_kwargs=(("input_dim", 2), ("num_actions", 10), ("temperature", 0.5)),
        bandit_steps=150,
        bandit_seeds=3,
        bandit_overrides=(),
    )


def test_custom_agent_runs_through_testbed_bandit_and_analysis_and_resumes(agent_file, tmp_path, monkeypatch):
    out = tmp_path / "run"
    result = reproduce(_tiny_preset(), out, agent_files=(str(agent_file),), num_resamples=200, progress=False)
    testbed = pd.read_csv(out / "testbed.csv")
    bandit = pd.read_csv(out / "bandit.csv")
    assert set(testbed["agent"]) == {"mlp", "anchored_linear"}
    assert set(bandit["agent"]) == {"mlp", "anchored_linear"}
    mine = testbed[testbed["agent"] == "anchored_linear"]
    # the demo sweep's 1 setting x 3 designs x 3 seeds, every d_KL a finite estimate
    assert len(mine) == 9 and np.all(np.isfinite(mine["kl"]))
    assert set(result.correlations["metric"]) >= {"dkl_1", "dkl_10"}
    assert (out / "report.md").exists() and (out / "correlations.csv").exists()

    # A second run finds every cell stored and computes nothing.
    def no_compute(self, cell):
        raise AssertionError(f"cell {cell.id} was recomputed")

    monkeypatch.setattr(reproduce_module.CellRunner, "__call__", no_compute)
    reproduce(_tiny_preset(), out, agent_files=(str(agent_file),), num_resamples=200, progress=False)
    pd.testing.assert_frame_equal(pd.read_csv(out / "testbed.csv"), testbed)


def test_unknown_preset_and_agent_are_named():
    with pytest.raises(ValueError, match="preset"):
        presets.get_preset("huge")
    with pytest.raises(ValueError, match="agent"):
        reproduce(_tiny_preset(), "/tmp/never", agents=("not_an_agent",))


def test_old_argument_order_is_refused_naming_the_new_one():
    import jax.numpy as jnp

    from decision_bench.agents import Agent

    def init(key):
        return jnp.zeros(())

    def update(key, state, batch):
        return state

    def sample_logits(key, state, x):
        return jnp.zeros((x.shape[0], 2))

    Agent(init, update, sample_logits)  # the key-first order is accepted
    Agent(lambda key, spec=None: 0.0, update, sample_logits)  # one required parameter: fine

    def old_init(key, spec):
        return jnp.zeros(())

    def old_update(state, batch, key):
        return state

    def old_sample_logits(params, key, x):
        return jnp.zeros((x.shape[0], 2))

    with pytest.raises(ValueError, match=r"^Agent\.init takes \(key\) since decision_bench 0\.2 \(key first\)"):
        Agent(old_init, update, sample_logits)
    with pytest.raises(
        ValueError,
        match=r"^Agent\.update takes \(key, state, batch\) since decision_bench 0\.2 \(key first\); "
        r"got a function whose first parameter is 'state'$",
    ):
        Agent(init, old_update, sample_logits)
    with pytest.raises(ValueError, match=r"Agent\.sample_logits takes \(key, state, x\).*'params'"):
        Agent(init, update, old_sample_logits)
    with pytest.raises(ValueError, match=r"Agent\.update takes"):
        Agent(init, update, sample_logits).replace(update=old_update)
