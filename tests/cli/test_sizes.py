"""Sizes that cannot run are refused before anything is allocated: counts above
JAX's int32 indices at parsing, and runs whose arrays cannot fit in this machine's
memory with the estimate and the memory, in one line and exit status 2."""

from __future__ import annotations

import re
import time

import pytest

from decision_bench._src import memory
from decision_bench.cli import main

BANDIT = ["bandit", "--agents", "mlp", "--no-progress"]
TESTBED = ["testbed", "--agents", "mlp", "--temperature", "0.1", "--tau", "1", "--no-progress"]
INT32 = r"must be (an integer|a comma-separated list of integers) in \[\d, 2\*\*31 - 1"
MEMORY = r"needs at least [\d.]+ [KMGTP]B of memory, mostly {}.* but this machine has [\d.]+ [KMGTP]B"


@pytest.mark.parametrize(
    "command, flags, expected",
    [
        (TESTBED, ["--num-train", "10000000000"], r"--num-train must be a comma-separated list of integers <= 2\*\*31 - 1"),
        (TESTBED, ["--num-train", "10", "--num-test", "1000000000000"], "--num-test " + INT32),
        (TESTBED, ["--num-train", "10", "--input-dim", "100000000"], "testbed run " + MEMORY.format(".*test inputs")),
        (TESTBED, ["--num-train", "10", "--seeds", "1000000000"], "testbed run " + MEMORY.format("")),
        (BANDIT, ["--replay-capacity", "1000000000000"], "--replay-capacity " + INT32),
        (BANDIT, ["--input-dim", "100000000"], "bandit run " + MEMORY.format(".*action sets")),
        (BANDIT, ["--steps", "1000000000000", "--log-every", "1"], "--steps " + INT32),
        (BANDIT, ["--steps", "1000000000", "--log-every", "1"], "bandit run " + MEMORY.format(".*logged rows")),
        (BANDIT, ["--seeds", "1000000000"], "bandit run " + MEMORY.format(".*replay buffers")),
        (BANDIT, ["--num-actions", "1000000000"], "bandit run " + MEMORY.format(".*action sets")),
        (["reproduce", "--no-progress"], ["--resamples", "1000000000"], r"--resamples must be an integer in \[200, 1000000\]"),
    ],
)
def test_a_size_that_cannot_run_is_one_line_and_exit_2_before_any_work(tmp_path, capsys, command, flags, expected):
    out = tmp_path / "out"
    began = time.monotonic()
    status = main(command + flags + ["--out", str(out)])
    seconds = time.monotonic() - began
    err = capsys.readouterr().err
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("decision-bench: error: "), err
    assert re.search(expected, lines[0]), lines[0]
    assert not out.exists()  # refused before the output folder was made
    assert seconds < 30


def test_analyze_refuses_a_bootstrap_of_a_billion_resamples(tmp_path, capsys):
    assert main(["analyze", str(tmp_path), "--resamples", "1000000000"]) == 2
    assert "--resamples must be an integer in [200, 1000000]" in capsys.readouterr().err


def test_the_memory_check_names_the_largest_term_and_the_machine():
    terms = memory.bandit_memory(seeds=5, steps=10_000, log_every=100, replay_capacity=10_000,
                                 input_dim=2, num_actions=40)
    assert sum(terms.values()) < 10**7  # the defaults need a few megabytes
    memory.check_fits("this run", terms, memory=10**7)
    with pytest.raises(ValueError, match=r"^this run needs at least 981.6 KB of memory, mostly --seeds x "
                                         r"--replay-capacity .* = 800.0 KB, but this machine has 500.0 KB"):
        memory.check_fits("this run", terms, memory=500_000)
    assert memory.physical_memory_bytes() > 10**8
