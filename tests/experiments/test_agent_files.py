"""An agent file's NAME must be usable where agents are named (comma-separated
--agents lists, --set AGENT.FIELD=VALUE): one that never could be is refused in one
line naming the file and the names accepted, when the file is read."""

from __future__ import annotations

import pytest

from decision_bench import cli
from decision_bench.agents import names as registered_names
from decision_bench.experiments.agent_files import AGENT_NAME_PATTERN, read_agent_file

BODY = "from decision_bench.agents import registry\n\n\ndef make_agent(spec):\n    return registry.make('mlp', spec)\n"


@pytest.mark.parametrize("name", ["a,b", "", "two\nlines", "my agent", " mlp2", "x=1", 3])
def test_a_name_no_agent_list_could_hold_is_one_line_naming_the_file(tmp_path, name):
    path = tmp_path / "agent.py"
    path.write_text(f"NAME = {name!r}\n{BODY}")
    with pytest.raises(ValueError, match="must be an agent name of letters, digits") as raised:
        read_agent_file(path)
    text = str(raised.value)
    assert str(path) in text and len(text.splitlines()) == 1


def test_a_stem_with_a_blank_is_refused_when_no_name_is_set(tmp_path):
    path = tmp_path / "my agent.py"
    path.write_text(BODY)
    with pytest.raises(ValueError, match=r"its NAME \(unset, so the file's stem\) must be"):
        read_agent_file(path)


@pytest.mark.parametrize("name", ["my_agent", "ensemble+2", "v1.2-small", "7b"])
def test_plain_names_are_accepted(tmp_path, name):
    path = tmp_path / "agent.py"
    path.write_text(f"NAME = {name!r}\n{BODY}")
    assert read_agent_file(path).name == name


def test_every_registered_agent_name_fits_the_rule():
    assert all(AGENT_NAME_PATTERN.fullmatch(name) for name in registered_names())


def test_the_command_refuses_a_comma_name_in_one_line(tmp_path, capsys):
    path = tmp_path / "agent.py"
    path.write_text(f"NAME = 'a,b'\n{BODY}")
    status = cli.main(["testbed", "--agent-file", str(path), "--num-train", "2", "--temperature", "0.5",
                       "--tau", "1", "--seeds", "1", "--no-progress", "--out", str(tmp_path / "run")])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1 and "'a,b'" in lines[0], lines
    assert not (tmp_path / "run").exists()


def test_an_agent_file_not_ending_in_py_is_one_line(tmp_path):
    # R39 (issue 34): the importer found no loader and raised an AttributeError deep inside.
    path = tmp_path / "agent.txt"
    path.write_text("def make_agent(spec):\n    return None\n")
    with pytest.raises(ValueError, match=r"agent_file '.*agent.txt' must be a Python file ending in .py"):
        read_agent_file(path)


def test_an_agent_file_that_calls_sys_exit_is_one_line_not_a_silent_exit(tmp_path):
    # F16 (issue 34): sys.exit(0) at import made any command exit 0 with nothing written.
    path = tmp_path / "quits.py"
    path.write_text("import sys\nsys.exit(0)\n")
    with pytest.raises(ValueError, match=r"agent_file '.*quits.py' line 2 \(importing it\): SystemExit: the file called sys.exit\(0\)"):
        read_agent_file(path)
    assert cli.main(["testbed", "--agents", "quits", "--agent-file", str(path), "--out", str(tmp_path / "o")]) == 2


def test_a_folder_given_as_agent_file_is_named_as_a_folder(tmp_path):
    # R3-22: a folder was reported as "does not exist"
    with pytest.raises(ValueError, match=r"agent_file '.*' is a folder; give the path of a \.py file$"):
        read_agent_file(tmp_path)


def test_an_experiment_file_listing_an_agent_files_agent_is_told_to_leave_it_out(tmp_path, capsys):
    # R3-82: `agents = ["mlp", "np_uni"]` beside --agent-file np_uni.py said the NAME
    # "clashes with registered agents", though no registered agent has it.
    agent = tmp_path / "np_uni.py"
    agent.write_text(
        "import numpy as np\nNAME = 'np_uni'\n"
        "def make_agent(spec):\n"
        "    return lambda data, spec: (lambda x, seed: np.zeros((len(x), spec.num_classes), np.float32))\n"
    )
    config = tmp_path / "exp.toml"
    from decision_bench.experiments.experiment_file import preset_to_toml  # noqa: PLC0415
    from decision_bench.experiments.presets import get_preset  # noqa: PLC0415

    config.write_text(preset_to_toml(get_preset("demo")).replace(
        'agents = ["mlp"', 'agents = ["np_uni", "mlp"', 1))
    assert cli.main(["reproduce", "--config", str(config), "--agent-file", str(agent), "--estimate"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "already name the agent file agent(s) ['np_uni']" in err[0]
    assert "registered" not in err[0]
