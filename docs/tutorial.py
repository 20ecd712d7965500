"""The tutorial of docs/tutorial.md: your agent, from one file to the regret-versus-d_KL^10 figure.

    python docs/tutorial.py [--out runs/tutorial] [--small]

Runs, one after another, the commands the page explains, each printed first as you would
type it (every one resumes: run the script again after an interruption):

1. ``testbed``: your agent (docs/tutorial_agent.py) and mlp on the quick sweep;
2. ``leaderboard``: your agent against the stored ``standard`` set, on its very problems;
3. ``bandit``: your agent and mlp, Thompson sampling on the standard preset's neural bandit;
4. ``leaderboard --bandit``: against the stored ``standard-reproduce`` set, both sides, and
   where your agent falls on the baselines' regret-versus-d_KL^10 trend;

then prints a summary of the numbers. ``--small`` runs every step at toy sizes (what
tests/test_tutorial.py runs): the stored sets' problems are fixed, so it first makes a
tiny stand-in set (``reproduce`` with a tiny experiment file, then ``store-baselines``)
and compares with that instead.
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from pathlib import Path

import pandas as pd

from decision_bench import cli

AGENT_FILE = Path(__file__).resolve().with_name("tutorial_agent.py")
AGENT = "my_prior_mlps"
# The standard preset's neural bandit (the one standard-reproduce's bandit rows ran on).
BANDIT_ENV = ["--env", "NeuralBandit-v0", "--input-dim", "2", "--num-actions", "40", "--temperature", "0.1"]
FULL = {
    "testbed": ["--sweep", "quick", "--seeds", "3"],
    "bandit": [*BANDIT_ENV, "--steps", "2000", "--seeds", "3"],
    "agent": [],
    "mlp": [],
}
SMALL = {
    "testbed": ["--num-train", "3", "--temperature", "0.5", "--tau", "1,10", "--kappa", "2", "--seeds", "1",
                "--num-test", "20", "--num-models", "10"],
    "bandit": ["--env", "NeuralBandit-v0", "--input-dim", "2", "--num-actions", "4", "--temperature", "0.5",
               "--steps", "20", "--seeds", "2"],
    "agent": [f"--set={AGENT}.{field}" for field in ("num_members=3", "width=8", "num_steps=20")],
    "mlp": ["--set=mlp.hidden_sizes=8", "--set=mlp.num_steps=20"],
}
# --small: the stand-in for the stored sets, a reproduce run at toy sizes (mlp and ensemble).
TINY_EXPERIMENT = """name = "tiny"
agents = ["mlp", "ensemble"]

[testbed]
sweeps = ["quick"]
seeds = 3
num_test = 50
num_models = 20

[testbed.overrides.mlp]
hidden_sizes = [8]
num_steps = 20

[testbed.overrides.ensemble]
num_ensemble = 3
hidden_sizes = [8]
num_steps = 20

[bandit]
env = "NeuralBandit-v0"
steps = 20
seeds = 3

[[bandit.settings]]
input_dim = 2
num_actions = 4
temperature = 0.5

[bandit.overrides.mlp]
hidden_sizes = [8]
num_steps = 20

[bandit.overrides.ensemble]
num_ensemble = 3
hidden_sizes = [8]
num_steps = 20
"""


def run(argv: list[str]) -> None:
    """Prints ``argv`` as the shell command, then runs it in this process; stops on failure."""
    print(f"\n$ decision-bench {shlex.join(argv)}", flush=True)
    status = cli.main(argv)
    if status != 0:
        raise SystemExit(f"tutorial: `decision-bench {argv[0]}` ended with status {status}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/tutorial"), help="the folder of every step's run")
    parser.add_argument("--small", action="store_true", help="toy sizes and a tiny stand-in baseline set")
    args = parser.parse_args(argv)
    sizes, out = (SMALL if args.small else FULL), args.out
    agent = ["--agent-file", str(AGENT_FILE), *sizes["agent"], "--no-progress"]
    testbed_set, bandit_set = "standard", "standard-reproduce"
    if args.small:
        print("--small: a tiny stand-in for the stored sets (whose problems are fixed)")
        out.mkdir(parents=True, exist_ok=True)
        (out / "tiny.toml").write_text(TINY_EXPERIMENT)
        run(["reproduce", "--config", str(out / "tiny.toml"), "--out", str(out / "0_tiny_reproduce"),
             "--no-progress", "--resamples", "200"])
        run(["store-baselines", str(out / "0_tiny_reproduce"), "tiny", "--folder", str(out / "baselines"),
             "--command", f"decision-bench reproduce --config {out / 'tiny.toml'}"])
        testbed_set = bandit_set = str(out / "baselines" / "tiny.json")

    # 1. The testbed: d_KL of marginal (tau = 1) and joint (tau = 10) predictions.
    run(["testbed", "--agents", f"{AGENT},mlp", *agent, *sizes["mlp"], *sizes["testbed"],
         "--out", str(out / "1_testbed")])
    # 2. The leaderboard: the same problems as the stored agents, paired differences.
    run(["leaderboard", *agent, "--baselines", testbed_set, "--out", str(out / "2_leaderboard")])
    # 3. The bandit: Thompson sampling with your agent's draws.
    run(["bandit", "--agents", f"{AGENT},mlp", *agent, *sizes["mlp"], *sizes["bandit"], "--out", str(out / "3_bandit")])
    # 4. Both sides against a set with bandit rows: regret against d_KL^10.
    run(["leaderboard", *agent, "--baselines", bandit_set, "--bandit", "--out", str(out / "4_leaderboard_bandit")])

    summarize(out)
    return 0


def summarize(out: Path) -> None:
    """The numbers a reader looks for, read back from the runs' files."""
    testbed = pd.read_csv(out / "1_testbed" / "testbed.csv")
    iid = testbed[testbed["kappa"].isna()]
    board = pd.read_csv(out / "4_leaderboard_bandit" / "leaderboard.csv").set_index("agent")
    regret = pd.read_csv(out / "4_leaderboard_bandit" / "leaderboard_bandit.csv").set_index("agent")
    bandit = pd.read_csv(out / "3_bandit" / "bandit.csv")
    final = bandit.groupby(["agent", "seed"])["cumulative_regret"].last().groupby("agent").mean()
    print("\nsummary")
    for name in (AGENT, "mlp"):
        mean = iid[iid["agent"] == name].groupby("tau")["kl"].mean()
        print(f"  testbed  {name}: mean d_KL tau=1 {mean[1]:.3f}, tau=10 {mean[10]:.3f}; bandit final regret "
              f"{final[name]:.1f} (mean over seeds)")
    mine = regret.loc[AGENT]
    print(f"  leaderboard --bandit  {AGENT}: d_KL^10 {board.loc[AGENT, 'dkl_10']:.3f} +- "
          f"{board.loc[AGENT, 'dkl_10_se']:.3f}, final regret {mine['final_regret_mean']:.1f} +- "
          f"{mine['final_regret_mean_se']:.1f}")
    text = (out / "4_leaderboard_bandit" / "leaderboard.md").read_text()
    for line in text.splitlines():
        if "trend" in line and not line.startswith("#"):
            print(f"  {line}")
    figure = out / "4_leaderboard_bandit" / "leaderboard_regret_vs_dkl10.png"
    print(f"  figure: {figure if figure.is_file() else 'skipped (needs matplotlib)'}")
    assert math.isfinite(board.loc[AGENT, "dkl_10"]), "the agent's d_KL^10 is not a number"


if __name__ == "__main__":
    sys.exit(main())
