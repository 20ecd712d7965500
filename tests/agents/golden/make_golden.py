"""Writes tests/agents/golden/outputs.npz: every registered agent's outputs on fixed keys.

    python tests/agents/golden/make_golden.py            # every case
    python tests/agents/golden/make_golden.py --missing  # only cases the file lacks

Rewrite every case only when a change is MEANT to change some agent's numbers (say
so in the CHANGELOG); tests/agents/test_same_results.py then requires today's code
to give these arrays bit for bit, so a refactor that changes any agent's results
fails. ``--missing`` adds a newly registered agent and keeps every stored array.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from golden_cases import AGENT_CASES, BANDIT_CASES, agent_outputs, bandit_outputs  # noqa: E402


def main(argv: list[str]) -> int:
    path = HERE / "outputs.npz"
    missing_only = "--missing" in argv
    arrays = dict(np.load(path)) if missing_only else {}
    stored_agents = {key.split("/")[1] for key in arrays if key.startswith("agent/")}
    for name in AGENT_CASES:
        if name in stored_agents:
            continue
        for key, value in agent_outputs(name).items():
            arrays[f"agent/{name}/{key}"] = value
    for case in BANDIT_CASES:
        if f"bandit/{case}/regret" not in arrays:
            arrays[f"bandit/{case}/regret"] = bandit_outputs(case)
    np.savez_compressed(path, **arrays)
    print(f"wrote {len(arrays)} arrays to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
