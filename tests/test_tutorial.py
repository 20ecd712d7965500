"""docs/tutorial.md and the script it explains (docs/tutorial.py, docs/tutorial_agent.py):
the page shows the agent file as it is, the agent keeps the contract, and the whole
tutorial runs at toy sizes (--small) with real numbers in its files."""

from __future__ import annotations

import math
import re
import runpy
from pathlib import Path

import jax
import numpy as np
import pandas as pd
import pytest

from decision_bench._src.extras import plotting_available
from decision_bench.agents.contract import check_agent_contract
from decision_bench.experiments.agent_files import read_agent_file
from decision_bench.specs import ProblemSpec

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGE = DOCS / "tutorial.md"
AGENT_FILE = DOCS / "tutorial_agent.py"
AGENT = "my_prior_mlps"


def test_the_page_shows_the_agent_file_as_it_is():
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    assert AGENT_FILE.read_text() in blocks


def test_the_tutorial_agent_keeps_the_contract_and_draws_one_member_for_all_inputs():
    make_agent = read_agent_file(AGENT_FILE).make_agent
    spec = ProblemSpec(input_dim=2, num_classes=2, temperature=0.1, num_train=10)
    agent = make_agent(spec, num_members=3, width=4, num_steps=2)
    assert check_agent_contract(agent, spec, AGENT) is agent
    state = agent.init(jax.random.key(0))
    x = np.random.default_rng(0).normal(size=(5, 2)).astype(np.float32)
    members = np.asarray(agent.member_logits(state, x))
    assert members.shape == (3, 5, 2)
    draw = np.asarray(agent.sample_logits(jax.random.key(1), state, x))
    # One draw is one member's logits on all inputs (joint predictions), not a mix per input.
    assert any(np.allclose(draw, member) for member in members)


@pytest.mark.slow  # a tiny reproduce run, then testbed, leaderboard, bandit and leaderboard --bandit: minutes
def test_the_tutorial_runs_at_small_sizes_with_real_numbers(tmp_path, capsys):
    out = tmp_path / "tutorial"
    script = runpy.run_path(str(DOCS / "tutorial.py"), run_name="tutorial")
    assert script["main"](["--small", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    # Every step printed its command, as the page shows them.
    for command in ("reproduce --config", "store-baselines", "testbed --agents", "leaderboard --agent-file",
                    "bandit --agents", "--bandit --out"):
        assert f"$ decision-bench {command}" in printed or command in printed, command
    testbed = pd.read_csv(out / "1_testbed" / "testbed.csv")
    assert set(testbed["agent"]) == {AGENT, "mlp"} and np.isfinite(testbed["kl"]).all()
    board = pd.read_csv(out / "2_leaderboard" / "leaderboard.csv").set_index("agent")
    assert board.loc[AGENT, "source"] == "yours" and set(board.index) == {AGENT, "mlp", "ensemble"}
    assert math.isfinite(board.loc[AGENT, "dkl_10"])
    paired = pd.read_csv(out / "2_leaderboard" / "leaderboard_paired.csv")
    assert set(paired["baseline"]) == {"mlp", "ensemble"} and np.isfinite(paired["difference"]).all()
    bandit = pd.read_csv(out / "3_bandit" / "bandit.csv")
    assert set(bandit["agent"]) == {AGENT, "mlp"} and np.isfinite(bandit["cumulative_regret"]).all()
    regret = pd.read_csv(out / "4_leaderboard_bandit" / "leaderboard_bandit.csv").set_index("agent")
    assert list(regret["source"]) == ["yours", "stored", "stored"]
    assert regret.loc[AGENT, "runs"] == 3 and regret.loc[AGENT, "final_regret_mean"] >= 0
    text = (out / "4_leaderboard_bandit" / "leaderboard.md").read_text()
    assert "## Decision side" in text and "trend" in text
    assert f"leaderboard --bandit  {AGENT}: d_KL^10 " in printed
    if plotting_available():
        assert (out / "4_leaderboard_bandit" / "leaderboard_regret_vs_dkl10.png").stat().st_size > 0
    # Run again: every step resumes from its folder and computes nothing new.
    assert script["main"](["--small", "--out", str(out)]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(out / "1_testbed" / "testbed.csv"), testbed)
