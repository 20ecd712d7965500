"""--agents follows one rule in every command: an empty list or a name given twice is
one line and exit 2, before anything is written."""

import pytest

from decision_bench import cli
from decision_bench.cli.arguments import parse_agent_list

COMMANDS = {
    "testbed": ["testbed", "--num-train", "3", "--temperature", "0.1", "--no-progress"],
    "bandit": ["bandit", "--steps", "20", "--seeds", "1", "--no-progress"],
    "reproduce": ["reproduce", "--no-progress"],
    "demo": ["demo", "--no-progress"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(
    "agents, message",
    [(",", "--agents must name at least one agent, got ','"),
     ("", "--agents must name at least one agent, got ''"),
     ("mlp,mlp", "--agents names 'mlp' twice, got 'mlp,mlp'; give each agent once"),
     ("mlp, uniform ,mlp", "--agents names 'mlp' twice")],
)
def test_empty_or_repeated_agent_lists_are_refused_before_any_work(tmp_path, capsys, command, agents, message):
    out = tmp_path / "o"
    assert cli.main(COMMANDS[command] + ["--agents", agents, "--out", str(out)]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("decision-bench: error:") and message in lines[0]
    assert not out.exists()


def test_agent_list_keeps_order_and_drops_spaces_and_empty_items():
    assert parse_agent_list(" ensemble+, mlp,,") == ("ensemble+", "mlp")


def test_run_preset_refuses_an_empty_or_repeated_agent_list(tmp_path):
    from decision_bench.experiments.reproduce import run_preset

    with pytest.raises(ValueError, match="at least one agent"):
        run_preset("demo", tmp_path / "a", agents=())
    with pytest.raises(ValueError, match=r"name \['mlp'\] twice"):
        run_preset("demo", tmp_path / "b", agents=("mlp", "mlp"))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
