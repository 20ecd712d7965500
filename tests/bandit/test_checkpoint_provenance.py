"""A bandit checkpoint made by other code (another version, another agent definition)
is stale: recomputed from step 0 with one warning, never resumed; a 0.2.0 checkpoint
without those entries still resumes."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from decision_bench.bandit import run as run_module
from decision_bench.bandit import BanditLoopConfig
from decision_bench.bandit.checkpoints import STATE_FILE, checkpoint_digest
from decision_bench.bandit.run import run_bandit

ENV = dict(input_dim=2, num_actions=5, temperature=0.5)


def _run(out, calls, config=None, **kwargs):
    return run_bandit(
        "mlp", "NeuralBandit-v0", 20, 2, config, chunk_size=10, out_dir=out, progress=False,
        env_kwargs=ENV, callback=calls.append, **kwargs,
    )


def _rows(frame):
    return frame.drop(columns="wall_seconds")


def test_checkpoint_of_another_package_version_is_recomputed_with_a_warning(tmp_path, monkeypatch):
    calls = []
    first = _run(tmp_path, calls)
    assert calls == [10, 20]
    versions = dict(run_module.result_versions())
    versions["decision-bench"] = "9.9.9"
    monkeypatch.setattr(run_module, "result_versions", lambda: tuple(versions.items()))
    calls.clear()
    with pytest.warns(RuntimeWarning, match=r"is stale \(made with decision_bench_version '.*', now '9\.9\.9'\); starting this run over from step 0"):
        again = _run(tmp_path, calls)
    assert calls == [10, 20]  # recomputed from step 0
    pd.testing.assert_frame_equal(_rows(first), _rows(again))


def test_checkpoint_of_another_flax_version_is_recomputed(tmp_path, monkeypatch):
    calls = []
    _run(tmp_path, calls)
    versions = dict(run_module.result_versions())
    versions["flax"] = "0.0.1"
    monkeypatch.setattr(run_module, "result_versions", lambda: tuple(versions.items()))
    calls.clear()
    with pytest.warns(RuntimeWarning, match=r"made with library_versions .*'flax': '0\.0\.1'"):
        _run(tmp_path, calls)
    assert calls == [10, 20]


def test_checkpoint_of_another_agent_definition_is_recomputed(tmp_path):
    calls = []
    _run(tmp_path, calls, agent_fingerprint="one")
    calls.clear()
    with pytest.warns(RuntimeWarning, match=r"agent_fingerprint 'one', now 'two'"):
        _run(tmp_path, calls, agent_fingerprint="two")
    assert calls == [10, 20]


def test_unchanged_run_resumes_and_a_0_2_0_checkpoint_without_provenance_is_adopted(tmp_path):
    calls = []
    first = _run(tmp_path, calls)
    calls.clear()
    _run(tmp_path, calls)
    assert calls == []  # finished and unchanged: nothing recomputed
    # Rewrite the checkpoint as 0.2.0 wrote it: no decision_bench_version or agent_fingerprint.
    path = tmp_path / STATE_FILE
    with np.load(path) as data:
        arrays = {name: np.array(data[name]) for name in data.files}
    config = json.loads(str(arrays["config"]))
    del config["decision_bench_version"], config["library_versions"], config["agent_fingerprint"]
    arrays["config"] = np.asarray(json.dumps(config, sort_keys=True))
    arrays.pop("sha256")
    arrays["sha256"] = np.asarray(checkpoint_digest(arrays))
    np.savez(path, **arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = _run(tmp_path, calls)
    assert calls == []
    pd.testing.assert_frame_equal(_rows(first), _rows(again))


def _rewrite_config(path, edit):
    with np.load(path) as data:
        arrays = {name: np.array(data[name]) for name in data.files}
    config = json.loads(str(arrays["config"]))
    edit(config)
    arrays["config"] = np.asarray(json.dumps(config, sort_keys=True))
    arrays.pop("sha256")
    arrays["sha256"] = np.asarray(checkpoint_digest(arrays))
    np.savez(path, **arrays)


@pytest.mark.parametrize("mode", [None, "sequential"])
def test_a_checkpoint_from_when_the_decay_mode_was_an_agent_keyword_resumes(tmp_path, mode):
    """0.2.0 passed --regularization to the agent (in agent_kwargs) and recorded
    neither the mode nor the resolved config; its fingerprint hashed the config
    with the mode as a field. Such a checkpoint resumes with nothing recomputed."""
    calls = []
    given = None if mode is None else BanditLoopConfig(regularization=mode)
    first = _run(tmp_path, calls, given)

    def as_0_2_0(config):
        assert config["regularization"] == (mode or "sequential_linear_beta")
        assert "learning_rate=0.001" in config["agent_config"]
        del config["regularization"], config["agent_config"]
        if mode is not None:
            config["agent_kwargs"] = {"regularization": repr(mode)}

    _rewrite_config(tmp_path / STATE_FILE, as_0_2_0)
    calls.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = _run(tmp_path, calls, given)
    assert calls == []
    pd.testing.assert_frame_equal(_rows(first), _rows(again))
    # A 0.2.0 run with the default mode is another run than one in the paper's mode.
    _run(tmp_path / "other", calls)
    _rewrite_config(tmp_path / "other" / STATE_FILE, lambda c: c.pop("regularization"))
    with pytest.raises(ValueError, match=r"regularization: saved 'sequential_linear_beta', now 'sequential'"):
        _run(tmp_path / "other", calls, BanditLoopConfig(regularization="sequential"))
