"""Every command that takes --resamples (analyze, reproduce, demo) refuses a bad
count with the very same one-line message, before any work."""

from __future__ import annotations

import pytest

from decision_bench import cli
from decision_bench.cli.arguments import parse_resamples

COMMANDS = {
    "analyze": lambda tmp: ["analyze", str(tmp)],
    "reproduce": lambda tmp: ["reproduce", "--no-progress", "--out", str(tmp / "run")],
    "demo": lambda tmp: ["demo", "--no-progress", "--out", str(tmp / "run")],
}


@pytest.mark.parametrize("value", ["1", "199", "1000001", "x", "2.5", ""])
def test_every_command_gives_one_message_for_a_bad_count(tmp_path, capsys, value):
    expected = f"decision-bench: error: --resamples must be an integer in [200, 1000000] (at least 10 " \
               f"resamples beyond each bound of the 90% interval; more only hold more memory), got {value!r}"
    for command, argv in COMMANDS.items():
        assert cli.main([*argv(tmp_path), "--resamples", value]) == 2, command
        lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert lines == [expected], command
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("value, count", [("200", 200), (" 1000 ", 1000), (1000, 1000), ("1000000", 1_000_000)])
def test_counts_in_range_are_taken(value, count):
    assert parse_resamples(value) == count


def test_a_bool_or_float_is_not_a_count():
    for value in (True, 500.0):
        with pytest.raises(ValueError, match="--resamples must be an integer"):
            parse_resamples(value)
