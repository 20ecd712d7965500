"""Host agents (agents/host_agent.py): the Neural Testbed's agent(data, spec) -> sampler
as an Agent record, run from docs/custom_agent.md's own examples."""

import json
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from decision_bench.agents.base import Batch
from decision_bench.agents.contract import check_agent_contract
from decision_bench.agents.host_agent import NO_SAMPLER, adapter_of, host_agent, is_host_agent
from decision_bench.agents.training import fit
from decision_bench.bandit.loop import make_loop
from decision_bench.cli.program import main as cli_main
from decision_bench.envs.testbed import Dataset
from decision_bench.experiments.agent_files import read_agent_file
from decision_bench.experiments.baselines import store_baselines
from decision_bench.specs import ProblemSpec

DOC = Path(__file__).resolve().parents[2] / "docs" / "custom_agent.md"
TINY_TESTBED = ["--num-train", "3", "--temperature", "0.1", "--tau", "1,10", "--seeds", "2",
                "--num-test", "20", "--num-models", "4", "--no-progress"]
TINY_BANDIT = ["--input-dim", "2", "--num-actions", "4", "--steps", "12", "--seeds", "2", "--no-progress"]


def _doc_block(name: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    return next(b for b in blocks if f'NAME = "{name}"' in b)


@pytest.fixture
def numpy_file(tmp_path):
    path = tmp_path / "my_numpy.py"
    path.write_text(_doc_block("my_numpy"))
    return path


def _numpy_make(numpy_file):
    return read_agent_file(numpy_file).make_agent


def _data(rows: int, d: int = 2, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    return Dataset(jnp.asarray(rng.normal(size=(rows, d)), jnp.float32), jnp.asarray(rng.integers(0, 2, rows), jnp.int32))


def test_the_adapter_returns_float32_logits_and_the_same_key_the_same_draw(numpy_file):
    spec = ProblemSpec(input_dim=2, num_classes=2, num_train=6)
    agent = _numpy_make(numpy_file)(spec)
    assert is_host_agent(agent) and agent.update_mode == "online" and agent.num_steps == 0
    state = fit(agent, jax.random.key(0), _data(6), spec)
    assert state.handle.dtype == jnp.int32 and state.handle.shape == () and int(state.handle) >= 0
    x = jnp.asarray(np.random.default_rng(1).normal(size=(5, 2)), jnp.float32)
    draw = jax.jit(agent.sample_logits)(jax.random.key(3), state, x)
    assert draw.shape == (5, 2) and draw.dtype == jnp.float32
    np.testing.assert_array_equal(draw, agent.sample_logits(jax.random.key(3), state, x))
    # Five members: among 8 keys, at least two draws differ (one member per seed).
    draws = [np.asarray(agent.sample_logits(jax.random.key(k), state, x)) for k in range(8)]
    assert any(not np.array_equal(draws[0], d) for d in draws[1:])


def test_vmapped_seeds_fit_independently_each_with_its_own_sampler(numpy_file):
    spec = ProblemSpec(input_dim=2, num_classes=2, num_train=6)
    agent = _numpy_make(numpy_file)(spec)
    adapter = adapter_of(agent)
    datasets = Dataset(*(jnp.stack(a) for a in zip(*[_data(10, seed=s) for s in range(3)])))
    keys = jax.random.split(jax.random.key(0), 3)
    states = jax.jit(jax.vmap(lambda k, d: fit(agent, k, d, num_train=6)))(keys, datasets)
    assert adapter.fits == 3 and len(set(np.asarray(states.handle).tolist())) == 3
    # Each seed's fit saw the first 6 rows of its own data set, and nothing else.
    for s in range(3):
        np.testing.assert_array_equal(states.x[s], datasets.x[s, :6])
    x = jnp.ones((4, 2), jnp.float32)
    same_key = jnp.stack([jax.random.key_data(jax.random.key(7))] * 3)
    logits = jax.vmap(lambda k, st: agent.sample_logits(jax.random.wrap_key_data(k), st, x))(same_key, states)
    assert logits.shape == (3, 4, 2)
    assert not np.array_equal(logits[0], logits[1]) and not np.array_equal(logits[1], logits[2])
    # Alone, a seed's fit gives the same draw.
    alone = fit(agent, keys[1], Dataset(datasets.x[1], datasets.y[1]), num_train=6)
    np.testing.assert_array_equal(agent.sample_logits(jax.random.key(7), alone, x), logits[1])


def _online(agent, state, t: int, key: int = 0):
    batch = Batch(x=jnp.full((1, 2), float(t), jnp.float32), y=jnp.asarray([t % 2], jnp.int32),
                  num_seen=jnp.float32(t), index=jnp.asarray([(t - 1) % 8], jnp.int32))
    return jax.jit(agent.update)(jax.random.key(key + t), state, batch)


def test_the_bandit_refits_every_k_observations_and_releases_the_old_sampler():
    seen = []

    def agent_fn(data, spec):
        seen.append(len(data.x))
        return lambda x, seed: np.zeros((len(x), 2)) + len(seen)

    spec = ProblemSpec(input_dim=2, num_classes=2, num_train=8, regularization="sequential")
    agent = host_agent(agent_fn, spec, refit_every=3)
    state = agent.init(jax.random.key(0))
    x = jnp.ones((3, 2), jnp.float32)
    assert int(state.handle) == NO_SAMPLER
    np.testing.assert_array_equal(agent.sample_logits(jax.random.key(0), state, x), 0.0)  # uniform before data
    for t in range(1, 8):
        state = _online(agent, state, t)
    assert seen == [1, 4, 7]  # refit at the first observation, then every 3
    assert int(state.fitted) == 7 and len(adapter_of(agent).samplers) == 1


def test_a_state_from_another_process_is_refitted_on_its_rows_with_its_seed(numpy_file):
    # A resumed bandit checkpoint: the handle names no sampler of the new adapter.
    spec = ProblemSpec(input_dim=2, num_classes=2, num_train=8, regularization="sequential")
    make = _numpy_make(numpy_file)
    first = make(spec, refit_every=2)
    state = first.init(jax.random.key(0))
    for t in range(1, 6):
        state = _online(first, state, t)
    x = jnp.asarray([[0.5, -1.0], [2.0, 1.0]], jnp.float32)
    want = first.sample_logits(jax.random.key(9), state, x)
    second = make(spec, refit_every=2)
    np.testing.assert_array_equal(second.sample_logits(jax.random.key(9), state, x), want)
    assert adapter_of(second).fits == 1


def test_a_dropped_sampler_is_one_error_naming_the_limit():
    spec = ProblemSpec(input_dim=2, num_classes=2, num_train=4)
    agent = host_agent(lambda data, spec: (lambda x, seed: np.zeros((len(x), 2))), spec, max_samplers=1)
    old = fit(agent, jax.random.key(0), _data(4), spec)
    fit(agent, jax.random.key(1), _data(4), spec)
    with pytest.raises(Exception, match="max_samplers=1"):
        jax.block_until_ready(agent.sample_logits(jax.random.key(0), old, jnp.ones((2, 2))))


def test_wrong_logits_shape_is_named():
    spec = ProblemSpec(input_dim=2, num_classes=3, num_train=4)
    agent = host_agent(lambda data, spec: (lambda x, seed: np.zeros((len(x), 2))), spec)
    state = fit(agent, jax.random.key(0), _data(4), spec)
    with pytest.raises(Exception, match=r"expected \[n, num_classes\] = \[2, 3\]"):
        jax.block_until_ready(agent.sample_logits(jax.random.key(0), state, jnp.ones((2, 2))))


def test_the_contract_check_passes_through_the_adapter(numpy_file):
    spec = ProblemSpec(input_dim=3, num_classes=2, num_train=5)
    agent = _numpy_make(numpy_file)(spec)
    assert check_agent_contract(agent, spec, "agent 'my_numpy'") is agent


def test_a_jax_agent_that_calls_numpy_on_a_tracer_points_to_host_agents():
    from decision_bench.agents import Agent

    def sample_logits(key, state, x):
        return jnp.asarray(np.asarray(x) @ np.ones((2, 2)))

    agent = Agent(lambda key: jnp.zeros(()), lambda key, state, batch: state, sample_logits)
    with pytest.raises(ValueError, match="custom_agent.md#host-agents-numpy-pytorch-scikit-learn") as error:
        check_agent_contract(agent, ProblemSpec(input_dim=2, num_train=3), "agent 'x'")
    assert "\n" not in str(error.value)
    assert "## Host agents (NumPy, PyTorch, scikit-learn)" in DOC.read_text()


def test_replay_updates_are_refused_for_a_host_agent(numpy_file):
    with pytest.raises(ValueError, match="host agent"):
        make_loop(_numpy_make(numpy_file), "NeuralBandit-v0", update_mode="replay", env_kwargs={"input_dim": 2})


def test_testbed_runs_the_numpy_agent_file(numpy_file, tmp_path):
    out = tmp_path / "tb"
    argv = ["testbed", "--agents", "my_numpy", "--agent-file", str(numpy_file), *TINY_TESTBED, "--out", str(out)]
    assert cli_main(argv) == 0
    rows = pd.read_csv(out / "testbed.csv")
    assert set(rows.agent) == {"my_numpy"} and len(rows) == 2 * 2 and rows.kl.notna().all()
    assert (rows.method == "monte_carlo").all() and (rows.num_models == 4).all()
    (cell,) = [json.loads(p.read_text())["cell"] for p in (out / "cells").glob("*.json")]
    assert cell["agent_file_sha256"] == read_agent_file(numpy_file).sha256
    assert cli_main(argv) == 0  # resumed: the finished cell is kept
    pd.testing.assert_frame_equal(pd.read_csv(out / "testbed.csv"), rows)


def test_leaderboard_runs_the_numpy_agent_file_on_stored_problems(numpy_file, tmp_path):
    run = tmp_path / "run"
    grid = ["--num-train", "3", "--temperature", "0.5", "--tau", "1,10", "--seeds", "2", "--num-test", "20",
            "--num-models", "4", "--no-progress"]
    argv = ["testbed", "--agents", "mlp", "--set", "mlp.num_steps=10", "--set", "mlp.hidden_sizes=4", *grid]
    assert cli_main([*argv, "--out", str(run)]) == 0
    stored = store_baselines(run, tmp_path / "stored", "tiny", "tiny host-agent test")
    out = tmp_path / "board"
    # The stored mlp ran with --set; the set records those overrides, so it is current (not stale).
    assert cli_main(["leaderboard", "--agent-file", str(numpy_file), "--baselines", str(stored),
                     "--out", str(out), "--no-progress"]) == 0
    board = pd.read_csv(out / "leaderboard.csv")
    assert list(board["agent"]) == ["my_numpy", "mlp"] and list(board["source"]) == ["yours", "stored"]
    paired = pd.read_csv(out / "leaderboard_paired.csv")
    assert set(paired["baseline"]) == {"mlp"} and (paired["problems"] == 2).all()
    assert paired["difference"].notna().all()


def test_bandit_runs_the_numpy_agent_file_with_refit_every(numpy_file, tmp_path):
    out = tmp_path / "bandit"
    argv = ["bandit", "--agents", "my_numpy", "--agent-file", str(numpy_file),
            "--set", "my_numpy.refit_every=3", *TINY_BANDIT, "--out", str(out)]
    assert cli_main(argv) == 0
    rows = pd.read_csv(out / "bandit.csv", keep_default_na=False)
    assert set(rows.agent) == {"my_numpy"} and set(rows.agent_config) == {"refit_every=3"}
    assert (rows.error == "").all() and np.isfinite(rows.cumulative_regret).all()
    saved = json.loads((out / "checkpoints" / "my_numpy" / "bandit_config.json").read_text())
    assert saved["agent_fingerprint"] == f"file:{read_agent_file(numpy_file).sha256};refit_every=3"


@pytest.mark.slow  # trains small torch networks for every fit: a minute on 2 cores
def test_the_documented_pytorch_agent_runs_in_testbed_leaderboard_and_bandit(tmp_path):
    pytest.importorskip("torch")
    path = tmp_path / "my_torch.py"
    path.write_text(_doc_block("my_torch"))
    small = ["--set", "my_torch.num_steps=5", "--set", "my_torch.width=4"]
    out = tmp_path / "tb"
    argv = ["testbed", "--agents", "my_torch", "--agent-file", str(path), *small, *TINY_TESTBED, "--out", str(out)]
    assert cli_main(argv) == 0
    rows = pd.read_csv(out / "testbed.csv")
    assert set(rows.agent) == {"my_torch"} and len(rows) == 2 * 2 and np.isfinite(rows.kl).all()
    # The leaderboard: against a tiny stored mlp, on its very problems.
    run = tmp_path / "run"
    mlp = ["testbed", "--agents", "mlp", "--set", "mlp.num_steps=10", "--set", "mlp.hidden_sizes=4", *TINY_TESTBED]
    assert cli_main([*mlp, "--out", str(run)]) == 0
    stored = store_baselines(run, tmp_path / "stored", "tiny", "tiny torch test")
    board = tmp_path / "board"
    assert cli_main(["leaderboard", "--agent-file", str(path), *small, "--baselines", str(stored),
                     "--out", str(board), "--no-progress"]) == 0
    scores = pd.read_csv(board / "leaderboard.csv")
    assert list(scores["source"]) == ["yours", "stored"] and scores["agent"].iloc[0].startswith("my_torch")
    paired = pd.read_csv(board / "leaderboard_paired.csv")
    assert set(paired["baseline"]) == {"mlp"} and (paired["problems"] == 2).all()
    assert np.isfinite(paired["difference"]).all()
    # The bandit, refitting every 3 observations.
    bandit = tmp_path / "bandit"
    assert cli_main(["bandit", "--agents", "my_torch", "--agent-file", str(path), *small,
                     "--set", "my_torch.refit_every=3", *TINY_BANDIT, "--out", str(bandit)]) == 0
    regret = pd.read_csv(bandit / "bandit.csv", keep_default_na=False)
    assert set(regret.agent) == {"my_torch"} and (regret.error == "").all()
    assert np.isfinite(regret.cumulative_regret).all() and (regret.cumulative_regret >= 0).all()


def test_estimates_say_they_cannot_cost_a_host_agent(numpy_file, capsys):
    from decision_bench.experiments.agent_files import host_agent_names
    from decision_bench.experiments.cells import Cell
    from decision_bench.experiments.estimate import estimate_cells

    files = (read_agent_file(numpy_file),)
    assert host_agent_names(files) == ("my_numpy",)
    cell = Cell("bandit", "my_numpy", {}, {"env": "NeuralBandit-v0", "num_steps": 100, "input_dim": 2}, (0, 1))
    estimate = estimate_cells([cell], host_agents=host_agent_names(files))
    assert estimate.compute_seconds == 0.0 and estimate.bandit_seed_steps == 200
    assert "my_numpy: a host agent" in estimate.line() and "cannot be estimated" in estimate.line()
    assert "counted as mlp" not in estimate.line()
    assert cli_main(["reproduce", "--preset", "demo", "--agents", "mlp", "--agent-file", str(numpy_file),
                     "--estimate"]) == 0
    assert "my_numpy: a host agent" in capsys.readouterr().out


def test_an_error_in_the_host_agents_code_is_one_line_naming_its_file_and_line(tmp_path, capsys):
    path = tmp_path / "bad_host.py"
    path.write_text("def make_agent(spec):\n    def agent(data, spec):\n        raise RuntimeError('boom')\n"
                    "    return agent\n")
    argv = ["testbed", "--agents", "bad_host", "--agent-file", str(path), *TINY_TESTBED, "--out", str(tmp_path / "o")]
    assert cli_main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"decision-bench: error: host agent 'bad_host' agent_file {str(path)!r} line 3 "
                       "(fitting: agent(data, spec)): RuntimeError: boom")
    assert not any("Traceback" in line for line in err)


def test_tune_refuses_a_host_agent_naming_the_testbed_command_to_use(numpy_file, tmp_path, capsys):
    out = tmp_path / "tune"
    assert cli_main(["tune", "my_numpy", "--agent-file", str(numpy_file), "--grid", "l2=0.1,1",
                     "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "a host agent ('my_numpy'" in err and "decision-bench testbed --agents my_numpy" in err
    assert err.count("\n") == 1 and not out.exists()


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_or_plus_inf_logits_are_one_error_naming_the_agent(bad):
    spec = ProblemSpec(input_dim=2, num_classes=2, num_train=4)
    agent = host_agent(lambda data, spec: (lambda x, seed: np.full((len(x), 2), bad)), spec, name="nan_host")
    state = fit(agent, jax.random.key(0), _data(4), spec)
    with pytest.raises(Exception, match=r"host agent 'nan_host': sampler\(x, seed\) returned NaN or \+inf logits "
                                        r"\(4 of 4 entries\)"):
        jax.block_until_ready(agent.sample_logits(jax.random.key(0), state, jnp.ones((2, 2))))


def test_minus_inf_logits_are_probability_zero_and_pass():
    spec = ProblemSpec(input_dim=2, num_classes=2, num_train=4)
    agent = host_agent(lambda data, spec: (lambda x, seed: np.tile([0.0, -np.inf], (len(x), 1))), spec)
    state = fit(agent, jax.random.key(0), _data(4), spec)
    logits = np.asarray(agent.sample_logits(jax.random.key(0), state, jnp.ones((2, 2))))
    assert logits.tolist() == [[0.0, -np.inf], [0.0, -np.inf]]


def test_the_bandit_with_a_nan_host_agent_is_one_line_not_a_score(tmp_path, capsys):
    # R3-121: NaN logits were scored (every action 0), exit 0, the seed not marked failed
    path = tmp_path / "nan_host.py"
    path.write_text("import numpy as np\ndef make_agent(spec):\n    def agent(data, spec):\n"
                    "        return lambda x, seed: np.full((len(x), spec.num_classes), np.nan)\n    return agent\n")
    argv = ["bandit", "--agents", "nan_host", "--agent-file", str(path), *TINY_BANDIT, "--out", str(tmp_path / "b")]
    assert cli_main(argv) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err[-1].startswith("decision-bench: error: host agent 'nan_host': sampler(x, seed) returned NaN or +inf")
    assert not any("Traceback" in line for line in err)
