"""Every registered agent gives today's numbers bit for bit on fixed keys.

The arrays in tests/agents/golden/outputs.npz were written by
tests/agents/golden/make_golden.py before the agent core was refactored (issue 23);
a refactor must leave every agent's fit, joint draw, members and bandit regret
unchanged. A change meant to change numbers rewrites the file and says so in the
CHANGELOG. Slow (one compilation per family): `make test-all` runs it.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

from decision_bench import agents

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(GOLDEN))

from golden_cases import AGENT_CASES, BANDIT_CASES, agent_outputs, bandit_outputs  # noqa: E402

STORED = dict(np.load(GOLDEN / "outputs.npz"))


def test_every_registered_agent_has_a_golden_case():
    covered = set(AGENT_CASES) | set(BANDIT_CASES)
    assert set(agents.names()) <= covered, sorted(set(agents.names()) - covered)
    for name in AGENT_CASES:
        assert f"agent/{name}/sample_logits" in STORED, name


@pytest.mark.slow
@pytest.mark.parametrize("name", AGENT_CASES)
def test_agent_outputs_are_bit_identical_to_the_golden_file(name):
    outputs = agent_outputs(name)
    stored = {k.split("/")[-1]: v for k, v in STORED.items() if k.startswith(f"agent/{name}/")}
    assert sorted(outputs) == sorted(stored)
    for key, value in outputs.items():
        np.testing.assert_array_equal(value, stored[key], err_msg=f"{name} {key}")


@pytest.mark.slow
@pytest.mark.parametrize("name", BANDIT_CASES)
def test_bandit_regret_is_bit_identical_to_the_golden_file(name):
    np.testing.assert_array_equal(bandit_outputs(name), STORED[f"bandit/{name}/regret"], err_msg=name)
