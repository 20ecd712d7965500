"""Writes tests/agents/golden/outputs.npz: every registered agent's outputs on fixed keys.

    python tests/agents/golden/make_golden.py

Run it only when a change is MEANT to change some agent's numbers (say so in the
CHANGELOG); tests/agents/test_same_results.py then requires today's code to give
these arrays bit for bit, so a refactor that changes any agent's results fails.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from golden_cases import AGENT_CASES, BANDIT_CASES, agent_outputs, bandit_outputs  # noqa: E402


def main() -> int:
    arrays = {}
    for name in AGENT_CASES:
        for key, value in agent_outputs(name).items():
            arrays[f"agent/{name}/{key}"] = value
    for case in BANDIT_CASES:
        arrays[f"bandit/{case}/regret"] = bandit_outputs(case)
    np.savez_compressed(HERE / "outputs.npz", **arrays)
    print(f"wrote {len(arrays)} arrays to {HERE / 'outputs.npz'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
