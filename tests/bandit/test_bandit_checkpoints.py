"""Bandit checkpoints: resumed by default, verified, never silently lost or mixed."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from decision_bench.bandit import BanditLoopConfig, run_bandit
from decision_bench.envs.bandits import make_bandit
from test_bandit import NEURAL, _numbers, linear_thompson

STATE, PREVIOUS, CONFIG = "bandit_state.npz", "bandit_state.prev.npz", "bandit_config.json"


class Interrupted(Exception):
    pass


def _interrupt_at(step):
    def callback(t):
        if t == step:
            raise Interrupted

    return callback


@pytest.fixture(scope="module")
def setup():
    env = make_bandit("NeuralBandit-v0", **NEURAL)
    args = (linear_thompson(2), env, 300, [0, 1])
    kwargs = dict(log_every=25, chunk_size=100, progress=False)
    return args, kwargs, run_bandit(*args, **kwargs)


def _interrupted_run(tmp_path, setup, at=200):
    args, kwargs, _ = setup
    with pytest.raises(Interrupted):
        run_bandit(*args, out_dir=tmp_path, callback=_interrupt_at(at), **kwargs)


def _resume(tmp_path, setup, **extra):
    args, kwargs, _ = setup
    steps_run = []
    rows = run_bandit(*args, out_dir=tmp_path, callback=steps_run.append, **kwargs, **extra)
    return rows, steps_run


def test_same_call_resumes_by_default(tmp_path, setup):
    _interrupted_run(tmp_path, setup)
    rows, steps_run = _resume(tmp_path, setup)
    assert steps_run == [300]
    pd.testing.assert_frame_equal(_numbers(rows), _numbers(setup[2]))


def test_resume_false_starts_over_and_gives_the_same_rows(tmp_path, setup):
    _interrupted_run(tmp_path, setup)
    rows, steps_run = _resume(tmp_path, setup, resume=False)
    assert steps_run == [100, 200, 300]
    pd.testing.assert_frame_equal(_numbers(rows), _numbers(setup[2]))


def test_other_arguments_are_refused_and_the_saved_run_kept(tmp_path, setup):
    _interrupted_run(tmp_path, setup)
    before = (tmp_path / STATE).read_bytes()
    args, kwargs, _ = setup
    with pytest.raises(ValueError, match=r"other arguments \(batch_size: saved 128, now 64\)"):
        run_bandit(*args, BanditLoopConfig(batch_size=64), out_dir=tmp_path, **kwargs)
    assert (tmp_path / STATE).read_bytes() == before


def _damage_truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _damage_garbage(path):
    path.write_bytes(b"this is not a zip file" * 100)


def _damage_nan_without_checksum(path):
    with np.load(path) as data:
        arrays = {k: np.array(data[k]) for k in data.files if k != "sha256"}
    arrays["logged"] = np.full_like(arrays["logged"], np.nan)
    np.savez(path, **arrays)


def _damage_nan_with_valid_checksum(path):
    from decision_bench.bandit.checkpoints import checkpoint_digest

    with np.load(path) as data:
        arrays = {k: np.array(data[k]) for k in data.files if k != "sha256"}
    arrays["logged"] = np.full_like(arrays["logged"], np.nan)
    arrays["sha256"] = np.asarray(checkpoint_digest(arrays))
    np.savez(path, **arrays)


def _damage_one_byte(path):
    data = bytearray(path.read_bytes())
    # a byte inside the stored arrays (npz members are stored uncompressed)
    data[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage",
    [_damage_truncate, _damage_garbage, _damage_nan_without_checksum,
     _damage_nan_with_valid_checksum, _damage_one_byte],
)
def test_damaged_checkpoint_is_named_set_aside_and_the_previous_one_used(tmp_path, setup, damage):
    _interrupted_run(tmp_path, setup)  # saved after 100 (previous) and 200 (newest)
    damage(tmp_path / STATE)
    with pytest.warns(RuntimeWarning, match=rf"checkpoint .*{STATE} is damaged .*discarding it"):
        rows, steps_run = _resume(tmp_path, setup)
    assert steps_run == [200, 300]  # from the previous state at 100, not from 0
    pd.testing.assert_frame_equal(_numbers(rows), _numbers(setup[2]))
    assert (tmp_path / f"{STATE}.damaged").exists()
    # The damaged file no longer blocks or warns.
    rows, steps_run = _resume(tmp_path, setup)
    assert steps_run == []


def test_both_checkpoints_damaged_starts_from_step_zero(tmp_path, setup):
    _interrupted_run(tmp_path, setup)
    _damage_garbage(tmp_path / STATE)
    _damage_truncate(tmp_path / PREVIOUS)
    with pytest.warns(RuntimeWarning, match="damaged"):
        rows, steps_run = _resume(tmp_path, setup)
    assert steps_run == [100, 200, 300]
    pd.testing.assert_frame_equal(_numbers(rows), _numbers(setup[2]))


def test_a_broken_config_json_does_not_block_resuming(tmp_path, setup):
    # bandit_config.json is a readable copy; the config that counts is inside the npz.
    _interrupted_run(tmp_path, setup)
    (tmp_path / CONFIG).write_text("{not json")
    rows, steps_run = _resume(tmp_path, setup)
    assert steps_run == [300]
    json.loads((tmp_path / CONFIG).read_text())  # rewritten whole


def test_checkpoint_files_follow_the_umask(tmp_path, setup):
    previous = os.umask(0o022)
    try:
        _interrupted_run(tmp_path, setup)
    finally:
        os.umask(previous)
    for name in (STATE, PREVIOUS, CONFIG):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("other", [{"num_steps": 150}, {"seeds": [0, 1, 2]}])
def test_a_sound_run_with_other_arguments_is_refused_never_set_aside(tmp_path, setup, other):
    # Fewer steps than already saved, or other seeds (other array shapes): both
    # are another experiment, not damage; the saved files must stay as they are.
    _interrupted_run(tmp_path, setup)
    before = {name: (tmp_path / name).read_bytes() for name in (STATE, PREVIOUS)}
    args, kwargs, _ = setup
    agent, env, num_steps, seeds = args
    call = {"num_steps": num_steps, "seeds": seeds, **other}
    with pytest.raises(ValueError, match=f"other arguments \\({next(iter(other))}: saved"):
        run_bandit(agent, env, call["num_steps"], call["seeds"], out_dir=tmp_path, **kwargs)
    assert {name: (tmp_path / name).read_bytes() for name in (STATE, PREVIOUS)} == before
    assert not list(tmp_path.glob("*.damaged"))
