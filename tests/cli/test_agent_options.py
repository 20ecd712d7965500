"""--agent-file and --set in every command that runs agents, and experiment files (--config)."""

import dataclasses
import json

import pandas as pd
import pytest

from decision_bench import cli
from decision_bench.cli.arguments import parse_settings, parse_value
from decision_bench.experiments.agent_files import read_agent_file
from decision_bench.experiments.experiment_file import preset_from_toml, preset_to_toml, read_experiment_file
from decision_bench.experiments.presets import PRESET_NAMES, get_preset
from decision_bench.experiments.reproduce import preset_arguments

# A user's agent: a one-layer mlp whose width and l2 are make_agent options.
SMALL_AGENT = '''
from decision_bench.agents import make

NAME = "small_mlp"


def make_agent(spec, l2=1.0, width=8):
    return make("mlp", spec, l2=l2, hidden_sizes=(width,), num_steps=20)
'''

TINY_TESTBED = ["--num-train", "3", "--temperature", "0.1", "--tau", "1,2", "--seeds", "2",
                "--num-test", "20", "--num-models", "4", "--no-progress"]
TINY_BANDIT = ["--input-dim", "2", "--num-actions", "4", "--steps", "20", "--seeds", "2", "--no-progress"]

# Every key of an experiment file, at sizes that run in seconds.
TINY_EXPERIMENT = """
name = "tiny"
agents = ["mlp", "ensemble"]

[testbed]
sweeps = ["demo"]
seeds = 2
num_test = 20
num_models = 4

[testbed.overrides.mlp]
hidden_sizes = [8]
num_steps = 20

[testbed.overrides.ensemble]
hidden_sizes = [8]
num_ensemble = 2
num_steps = 20

[bandit]
env = "NeuralBandit-v0"
steps = 20
seeds = 2

[[bandit.settings]]
input_dim = 2
num_actions = 4
temperature = 0.1

[bandit.overrides.ensemble]
num_ensemble = 2
"""


@pytest.fixture
def agent_file(tmp_path):
    path = tmp_path / "small.py"
    path.write_text(SMALL_AGENT)
    return path


def _error_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


# ------------------------------------------------------------------ --set parsing


def test_values_take_the_type_of_the_field():
    assert parse_value("30", 100) == 30 and isinstance(parse_value("30", 100), int)
    assert parse_value("1", 1.0) == 1.0 and isinstance(parse_value("1", 1.0), float)  # 1 and 1.0: one run
    assert parse_value("20,20", (50, 50)) == (20, 20)
    assert parse_value("20", (50, 50)) == (20,)
    assert parse_value("false", True) is False
    assert parse_value("none", 3) is None
    assert parse_value("sequential", "testbed") == "sequential"


def test_settings_are_checked_by_the_agents_own_config(agent_file):
    files = (read_agent_file(agent_file),)
    agents = ("mlp", "ensemble", "small_mlp")
    settings = parse_settings(
        ["ensemble.num_ensemble=30", "mlp.l2=2", "mlp.hidden_sizes=20,20", "small_mlp.width=4"], agents, files
    )
    assert settings == {"ensemble": {"num_ensemble": 30}, "mlp": {"l2": 2.0, "hidden_sizes": (20, 20)},
                        "small_mlp": {"width": 4}}
    with pytest.raises(ValueError, match=r"agent 'bbb' is not in this run; its agents are mlp, ensemble, small_mlp$"):
        parse_settings(["bbb.l2=1"], agents, files)
    with pytest.raises(ValueError, match=r"'ensemble' has no field 'size'; its fields are num_ensemble, "):
        parse_settings(["ensemble.size=3"], agents, files)
    with pytest.raises(ValueError, match=r"num_ensemble must be an integer >= 1, got 0"):
        parse_settings(["ensemble.num_ensemble=0"], agents, files)
    with pytest.raises(ValueError, match=r"'small_mlp' has no field 'depth'; its fields are l2, width$"):
        parse_settings(["small_mlp.depth=2"], agents, files)
    with pytest.raises(ValueError, match="twice"):
        parse_settings(["mlp.l2=1", "mlp.l2=2"], agents, files)
    with pytest.raises(ValueError, match="AGENT.FIELD=VALUE"):
        parse_settings(["mlp=1"], agents, files)
    # F24, F25 (issue 34): a file option's value has its default's type.
    with pytest.raises(ValueError, match=r"'small_mlp.width=4.5': the option's default is 8, so its value must be an integer"):
        parse_settings(["small_mlp.width=4.5"], agents, files)
    with pytest.raises(ValueError, match=r"'small_mlp.l2=strong': the option's default is 1.0, so its value must be a number"):
        parse_settings(["small_mlp.l2=strong"], agents, files)
    assert parse_settings(["small_mlp.l2=2"], agents, files) == {"small_mlp": {"l2": 2.0}}


# ------------------------------------------------------------------ experiment files


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_every_preset_prints_as_an_experiment_file_that_reads_back_equal(name, capsys):
    assert cli.main(["reproduce", "--preset", name, "--print-config"]) == 0
    printed = capsys.readouterr().out
    preset = preset_from_toml(printed)
    assert preset == get_preset(name)
    # ... and is the same run: a folder started with --preset resumes with --config.
    assert preset_arguments(preset) == preset_arguments(name)
    assert "experiment" not in preset_arguments(preset)


def test_print_config_folds_in_agents_and_settings(capsys):
    argv = ["reproduce", "--preset", "demo", "--agents", "mlp,ensemble", "--set", "mlp.l2=0.5", "--print-config"]
    assert cli.main(argv) == 0
    preset = preset_from_toml(capsys.readouterr().out)
    assert preset.agents == ("mlp", "ensemble")
    assert preset.overrides("testbed", "mlp") == {"l2": 0.5} == preset.overrides("bandit", "mlp")
    assert preset.overrides("bandit", "ensemble") == {"num_ensemble": 30}  # the demo's own, kept
    # An edited experiment is another run, never resumed as the demo ...
    assert preset_arguments(preset)["experiment"]["agents"] == ("mlp", "ensemble")
    assert preset_arguments(preset) != preset_arguments("demo", ("mlp", "ensemble"))
    # ... and the same run as the command that printed it.
    assert preset_arguments(preset) == preset_arguments("demo", ("mlp", "ensemble"), settings={"mlp": {"l2": 0.5}})
    agents_only = dataclasses.replace(get_preset("demo"), agents=("mlp",))
    assert preset_arguments(agents_only) == preset_arguments("demo", ("mlp",))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("seeds = 2\nnum_test", "seeds = 2\nnum_tests = 3\nnum_test"),
         r"\[testbed\] has unknown key\(s\) \['num_tests'\]; accepted keys are"),
        (lambda t: t.replace('env = "NeuralBandit-v0"\n', ""), r"\[bandit\] is missing \['env'\]"),
        (lambda t: t.replace("seeds = 2\nnum_test", "seeds = 0\nnum_test"), r"\[testbed\] seeds must be an integer in \[1, "),
        # C23, C06, C07 (issue 34): the flags' bounds, named by the file's keys.
        (lambda t: t.replace("\nsteps = 20", "\nsteps = 1000000000000"), r"\[bandit\] steps must be an integer in \[1, 2\*\*31 - 1"),
        (lambda t: t.replace("num_test = 20", "num_test = 0"), r"\[testbed\] num_test must be an integer in \[1, "),
        (lambda t: t.replace('sweeps = ["demo"]', 'sweeps = ["nope"]'), "testbed sweep must be one of"),
        (lambda t: t + "[[oops", "is not valid TOML"),
        # Bandit settings and the env named by the file's own place, not the env's arguments.
        (lambda t: t.replace("temperature = 0.1", "temperature = -1"),
         r"\[\[bandit.settings\]\] table 1 of 1: temperature must be a finite number > 0, got -1"),
        (lambda t: t.replace("num_actions = 4", "num_action = 4"),
         r"\[\[bandit.settings\]\] table 1 of 1: unknown keyword argument\(s\) \['num_action'\]"),
        (lambda t: t.replace('env = "NeuralBandit-v0"', 'env = "Nope"'), r"\[bandit\] env must be one of \["),
        # Override tables of registered agents are checked as --set checks them, before any work.
        (lambda t: t.replace("num_ensemble = 2\nnum_steps", "num_ensembl = 2\nnum_steps"),
         r"\[testbed.overrides.ensemble\]: unknown hyperparameter\(s\) \['num_ensembl'\] for agent 'ensemble'"),
        (lambda t: t.replace("[bandit.overrides.ensemble]\nnum_ensemble = 2", "[bandit.overrides.ensemble]\nnum_ensemble = 0"),
         r"\[bandit.overrides.ensemble\]: num_ensemble must be an integer >= 1, got 0"),
    ],
)
def test_a_bad_experiment_file_is_one_line_naming_it(tmp_path, edit, message):
    path = tmp_path / "bad.toml"
    path.write_text(edit(TINY_EXPERIMENT))
    with pytest.raises(ValueError, match=message) as error:
        read_experiment_file(path)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


@pytest.mark.slow  # about 45 s of CPU: reproduce (testbed, bandit, analysis) and testbed on one file
def test_a_tiny_experiment_file_runs_end_to_end_in_reproduce_and_testbed(tmp_path, capsys):
    config = tmp_path / "tiny.toml"
    config.write_text(TINY_EXPERIMENT)
    assert preset_from_toml(preset_to_toml(read_experiment_file(config))) == read_experiment_file(config)
    run = tmp_path / "run"
    argv = ["reproduce", "--config", str(config), "--out", str(run), "--resamples", "200",
            "--workers", "1", "--no-progress"]
    assert cli.main(argv) == 0
    testbed = pd.read_csv(run / "testbed.csv")
    bandit = pd.read_csv(run / "bandit.csv")
    assert set(testbed.agent) == {"mlp", "ensemble"} == set(bandit.agent)
    assert (run / "report.md").exists()
    # The ensemble ran with the file's 2 members: exact evaluation enumerates them.
    assert set(testbed[testbed.agent == "ensemble"].num_models) == {2}
    manifest = json.loads((run / "run_manifest.json").read_text())
    assert manifest["arguments"]["experiment"]["name"] == "tiny"

    # Flags the file sets are refused beside it, in one line.
    capsys.readouterr()
    assert cli.main(argv + ["--agents", "mlp"]) == 2
    assert "--agents cannot be given beside it" in _error_line(capsys)
    assert cli.main(["testbed", "--config", str(config), "--sweep", "quick", "--out", str(tmp_path / "x")]) == 2
    assert "--sweep cannot be given beside it" in _error_line(capsys)

    # testbed --config runs the file's testbed half: the same estimates as reproduce's.
    alone = tmp_path / "alone"
    assert cli.main(["testbed", "--config", str(config), "--out", str(alone), "--no-progress"]) == 0
    ours = pd.read_csv(alone / "testbed.csv")
    assert ours["agent_config"].str.contains("num_ensemble=2").tolist() == (ours.agent == "ensemble").tolist()
    keys = ["agent", "tau", "kappa", "seed"]
    merged = ours.merge(testbed, on=keys, suffixes=("", "_reproduce"))
    assert len(merged) == len(testbed) == len(ours)
    pd.testing.assert_series_equal(merged["kl"], merged["kl_reproduce"], check_names=False)


# ------------------------------------------------------------------ each command


@pytest.mark.slow  # about 25 s of CPU; test_testbed_agent_file_fast is the fast sibling
def test_testbed_runs_an_agent_file_and_applies_set(agent_file, tmp_path, capsys):
    out = tmp_path / "tb"
    argv = ["testbed", "--agents", "small_mlp,ensemble", "--agent-file", str(agent_file),
            "--set", "ensemble.num_ensemble=3", "--set", "ensemble.num_steps=20", "--set", "small_mlp.width=4",
            *TINY_TESTBED, "--out", str(out)]
    assert cli.main(argv) == 0
    rows = pd.read_csv(out / "testbed.csv", keep_default_na=False)
    assert set(rows.agent) == {"small_mlp", "ensemble"}
    ensemble = rows[rows.agent == "ensemble"]
    assert set(ensemble.agent_config) == {"num_ensemble=3 num_steps=20"}
    assert set(ensemble.num_models) == {3}  # exact evaluation: the 3 members, not the default 100
    assert set(rows[rows.agent == "small_mlp"].agent_config) == {"width=4"}
    manifest = json.loads((out / "run_manifest.json").read_text())["arguments"]
    assert manifest["--set"]["ensemble"] == {"num_ensemble": 3, "num_steps": 20}
    assert manifest["--agent-file"] == [str(agent_file.resolve())]
    cells = {json.loads(p.read_text())["cell"]["agent"]: json.loads(p.read_text())["cell"]
             for p in (out / "cells").glob("*.json")}
    assert cells["small_mlp"]["agent_file_sha256"] == read_agent_file(agent_file).sha256

    # Another --set is another run: refused in the same folder, naming the difference.
    capsys.readouterr()
    assert cli.main([*argv[:6], "ensemble.num_ensemble=4", *argv[7:]]) == 2
    assert "--set: saved" in _error_line(capsys)


@pytest.mark.slow  # about 15 s of CPU; test_bandit_agent_file_fast is the fast sibling
def test_bandit_runs_an_agent_file_and_applies_set(agent_file, tmp_path):
    out = tmp_path / "bandit"
    argv = ["bandit", "--agents", "small_mlp,ensemble", "--agent-file", str(agent_file),
            "--set", "ensemble.num_ensemble=3", "--set", "small_mlp.width=4", *TINY_BANDIT, "--out", str(out)]
    assert cli.main(argv) == 0
    rows = pd.read_csv(out / "bandit.csv", keep_default_na=False)
    assert list(rows.agent.unique()) == ["small_mlp", "ensemble"]
    assert set(rows[rows.agent == "ensemble"].agent_config) == {"num_ensemble=3"}
    saved = json.loads((out / "checkpoints" / "ensemble" / "bandit_config.json").read_text())
    assert saved["agent_kwargs"] == {"num_ensemble": "3"}
    mine = json.loads((out / "checkpoints" / "small_mlp" / "bandit_config.json").read_text())
    # The file's content and its options identify the user's agent's checkpoints.
    assert mine["agent_fingerprint"] == f"file:{read_agent_file(agent_file).sha256};width=4"


@pytest.mark.slow  # about 15 s of CPU (two training-set buckets); the error cases below are fast
def test_tune_takes_an_agent_file_and_set(agent_file, tmp_path):
    out = tmp_path / "tune"
    argv = ["tune", "small_mlp", "--agent-file", str(agent_file), "--set", "small_mlp.width=4",
            "--grid", "l2=0.1,1", "--sweep", "quick", "--seeds", "1", "--num-test", "20", "--num-models", "4",
            "--no-progress", "--out", str(out)]
    assert cli.main(argv) == 0
    rows = pd.read_csv(out / "tune.csv")
    assert set(rows.agent) == {"small_mlp"} and sorted(set(rows.l2)) == [0.1, 1.0]
    assert len(rows) == 2 * 2 * 2  # points x settings x tau, one seed


def test_testbed_agent_file_fast(agent_file, tmp_path, capsys):
    out = tmp_path / "tb"
    argv = ["testbed", "--agents", "small_mlp", "--agent-file", str(agent_file), "--set", "small_mlp.width=2",
            "--num-train", "3", "--temperature", "0.1", "--tau", "1", "--seeds", "1", "--num-test", "10",
            "--num-models", "2", "--no-progress", "--out", str(out)]
    assert cli.main(argv) == 0
    rows = pd.read_csv(out / "testbed.csv")
    assert list(rows.agent) == ["small_mlp"] and list(rows.agent_config) == ["width=2"]
    (cell,) = [json.loads(p.read_text())["cell"] for p in (out / "cells").glob("*.json")]
    assert cell["agent_config"] == {"width": 2}
    assert cell["agent_file_sha256"] == read_agent_file(agent_file).sha256
    # Another --set is another run: refused in the same folder, naming the difference.
    capsys.readouterr()
    assert cli.main([*argv[:6], "small_mlp.width=3", *argv[7:]]) == 2
    assert "--set: saved {'small_mlp': {'width': 2}}, now {'small_mlp': {'width': 3}}" in _error_line(capsys)


def test_bandit_agent_file_fast(agent_file, tmp_path):
    out = tmp_path / "bandit"
    argv = ["bandit", "--agents", "small_mlp", "--agent-file", str(agent_file), "--set", "small_mlp.width=2",
            "--env", "BernoulliBandit-v0", "--num-actions", "3", "--steps", "5", "--seeds", "1",
            "--no-progress", "--out", str(out)]
    assert cli.main(argv) == 0
    rows = pd.read_csv(out / "bandit.csv")
    assert set(rows.agent) == {"small_mlp"} and set(rows.agent_config) == {"width=2"}
    mine = json.loads((out / "checkpoints" / "small_mlp" / "bandit_config.json").read_text())
    assert mine["agent_fingerprint"] == f"file:{read_agent_file(agent_file).sha256};width=2"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["testbed", "--agents", "mlp", "--set", "ensemble.l2=1"], "agent 'ensemble' is not in this run; its agents are mlp"),
        (["bandit", "--agents", "ensemble", "--set", "ensemble.size=3"], "'ensemble' has no field 'size'; its fields are"),
        (["tune", "mlp", "--grid", "l2=1", "--set", "mlp.learning_rate=-1"], "learning_rate must be"),
        (["tune", "mlp", "--grid", "l2=1,2", "--set", "mlp.l2=3"], "--set and --grid both give ['l2']"),
        (["reproduce", "--set", "mlp.l2"], "--set must look like AGENT.FIELD=VALUE"),
        (["reproduce", "--set", "nobody.l2=1"], "agent 'nobody' is not in this run; its agents are mlp, ensemble"),
        (["testbed", "--agent-file", "missing_agent.py"], "agent_file 'missing_agent.py' does not exist"),
        (["bandit", "--agents", "mlp", "--agent-file", "{file}"], "--agent-file defines 'small_mlp'"),
        (["tune", "small_mlp", "--grid", "l2=1"], "unknown agent 'small_mlp'"),
        (["reproduce", "--config", "missing.toml"], "--config 'missing.toml' does not exist"),
        (["reproduce", "--preset", "demo", "--agent-file", "{file}", "--print-config"], "--print-config writes registered agents only"),
    ],
)
def test_each_error_is_one_line_with_exit_status_2(argv, message, agent_file, tmp_path, capsys):
    argv = [a.replace("{file}", str(agent_file)) for a in argv]
    if argv[0] != "reproduce" or "--print-config" not in argv:
        argv += ["--out", str(tmp_path / "out")]
    assert cli.main(argv) == 2
    assert message in _error_line(capsys)
    assert not (tmp_path / "out" / "run_manifest.json").exists()  # refused before the folder was claimed


def test_the_documented_experiment_file_is_the_demo_preset():
    from pathlib import Path
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "custom_agent.md").read_text()
    block = next(b for b in re.findall(r"```toml\n(.*?)```", doc, flags=re.S) if 'name = "demo"' in b)
    assert preset_from_toml(block) == get_preset("demo")
