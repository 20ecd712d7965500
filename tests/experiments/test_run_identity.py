"""A cell's identity covers the agent's code: an edited agent file, another package
version or another resolved agent config is recomputed, never silently reused."""

import json
import re
import warnings
from pathlib import Path

import pandas as pd
import pytest

from decision_bench.experiments import reproduce as reproduce_module
from decision_bench.experiments.cells import Cell, agent_fingerprint
from decision_bench.experiments.presets import Preset
from decision_bench.experiments.reproduce import run_preset
from decision_bench.experiments.store import ResultsStore

DOC = Path(__file__).resolve().parents[2] / "docs" / "custom_agent.md"


def _agent_source(learning_rate: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    source = next(b for b in blocks if "def make_agent" in b)
    assert "learning_rate=1e-2" in source
    return source.replace("learning_rate=1e-2", f"learning_rate={learning_rate}")


def _tiny_preset() -> Preset:
    return Preset(
        name="tiny",
        agents=("uniform",),
        testbed_sweeps=("demo",),
        testbed_seeds=2,
        num_test=20,
        num_models=10,
        testbed_overrides=(),
        bandit_env="NeuralBandit-v0",
        bandit_env_kwargs=(("input_dim", 2), ("num_actions", 5), ("temperature", 0.5)),
        bandit_steps=40,
        bandit_seeds=2,
        bandit_overrides=(),
    )


@pytest.fixture
def computed(monkeypatch):
    """The (agent, kind) of every cell computed, in order."""
    calls = []
    original = reproduce_module.CellRunner.__call__

    def counting(self, cell):
        calls.append((cell.agent, cell.kind))
        return original(self, cell)

    monkeypatch.setattr(reproduce_module.CellRunner, "__call__", counting)
    return calls


def _run(out, agent_file):
    return run_preset(_tiny_preset(), out, agent_files=(str(agent_file),), progress=False, workers=1)


@pytest.mark.slow  # four small reproduce runs: about 40 s on 2 shared cores
def test_edited_agent_file_is_recomputed_and_matches_a_fresh_run(tmp_path, computed):
    agent_file = tmp_path / "my_agent.py"
    agent_file.write_text(_agent_source("1e-2"))
    out = tmp_path / "run"
    _run(out, agent_file)
    assert len(computed) == 4  # uniform and anchored_linear, one testbed and one bandit cell each

    computed.clear()
    _run(out, agent_file)
    assert computed == []  # unchanged: nothing recomputed

    agent_file.write_text(_agent_source("5e-2"))
    testbed, bandit = _run(out, agent_file)
    # only the edited agent's cells, testbed and bandit (its checkpoint is not reused)
    assert sorted(computed) == [("anchored_linear", "bandit"), ("anchored_linear", "testbed")]

    computed.clear()
    fresh_testbed, fresh_bandit = _run(tmp_path / "fresh", agent_file)
    def rows(frame):  # timings differ between runs; every other value must not
        return frame[[c for c in frame.columns if not c.endswith("_seconds")]]

    pd.testing.assert_frame_equal(rows(testbed), rows(fresh_testbed))
    pd.testing.assert_frame_equal(rows(bandit), rows(fresh_bandit))
    mine = testbed[testbed.agent == "anchored_linear"]
    assert len(mine) and mine.kl.notna().all()


def test_agent_file_edited_during_a_run_is_refused_for_its_remaining_cells(tmp_path):
    agent_file = tmp_path / "my_agent.py"
    agent_file.write_text(_agent_source("1e-2"))
    cells = reproduce_module.build_cells(_tiny_preset(), ("anchored_linear",), {"anchored_linear": "0" * 64})
    runner = reproduce_module.CellRunner(str(tmp_path), (("anchored_linear", str(agent_file)),), False)
    with pytest.raises(ValueError, match=r"my_agent\.py' changed while the run was going on"):
        runner(cells[0])


def _stored_cell(tmp_path, agent="mlp", agent_config=()):
    store = ResultsStore(tmp_path / "cells")
    cell = Cell("testbed", agent, dict(agent_config), {"input_dim": 2}, (0, 1))
    path = store.write(cell, pd.DataFrame({"kl": [0.5, 0.25]}))
    return store, cell, path


def _edit(path, change):
    payload = json.loads(path.read_text())
    change(payload)
    path.write_text(json.dumps(payload))


def test_cell_file_of_another_package_version_is_not_reused(tmp_path):
    store, cell, path = _stored_cell(tmp_path)
    assert store.is_done(cell)
    _edit(path, lambda p: p["versions"].update({"decision-bench": "0.1.0"}))
    with pytest.warns(RuntimeWarning, match=r"cells in .* are stale \(made by decision-bench 0\.1\.0 \(now .*\)\); they will be recomputed"):
        assert store.read(cell) is None
    with pytest.warns(RuntimeWarning, match="stale"):
        assert not store.is_done(cell)


def test_cell_file_of_another_agent_config_is_not_reused(tmp_path):
    store, cell, path = _stored_cell(tmp_path)
    _edit(path, lambda p: p.update({"agent_fingerprint": "0123456789ab"}))
    with pytest.warns(RuntimeWarning, match=r"are stale \(made with another definition of agent 'mlp'"):
        assert store.read(cell) is None


def test_cell_file_without_a_fingerprint_from_0_2_0_is_reused(tmp_path):
    store, cell, path = _stored_cell(tmp_path)
    _edit(path, lambda p: p.pop("agent_fingerprint"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert store.read(cell)["kl"].tolist() == [0.5, 0.25]


def test_fingerprint_follows_the_resolved_config_and_the_agent_file():
    base = Cell("testbed", "mlp", {}, {"input_dim": 2})
    assert agent_fingerprint(base) == agent_fingerprint(Cell("testbed", "mlp", {}, {"input_dim": 3}))
    # the default written out resolves to the same config
    assert agent_fingerprint(base) == agent_fingerprint(Cell("testbed", "mlp", {"l2": 1.0}, {"input_dim": 2}))
    assert agent_fingerprint(base) != agent_fingerprint(Cell("testbed", "mlp", {"l2": 2.0}, {"input_dim": 2}))
    one, two = "a" * 64, "b" * 64
    assert agent_fingerprint(Cell("testbed", "mine", agent_file_sha256=one)) != agent_fingerprint(
        Cell("testbed", "mine", agent_file_sha256=two)
    )
    assert Cell("testbed", "mine", agent_file_sha256=one).id != Cell("testbed", "mine", agent_file_sha256=two).id
    # registered agents' cells keep the ids they had before files were hashed
    assert "agent_file_sha256" not in base.to_dict()
    assert agent_fingerprint(Cell("testbed", "not_registered")) is None
