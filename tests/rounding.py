"""How close a recomputed result must be to a stored one, by where the stored one was made.

On the CPU that made them (``versions.same_cpu``), stored rows recompute bit for bit;
rtol 1e-6 is left only for a float printed and read back. On another CPU (or one not
recorded: sets stored before the CPU was) XLA compiles the same program to other
instructions (vector width, fused multiply-adds, its exp and log polynomials) and rounds
differently: measured on two 2-core AMD EPYC machines of this project, d_KL of a paper2d
mlp cell differed by up to 1.8e-6 relative, and a d = 2 bandit's cumulative regret by up to
3.2e-4 (its per-step regret is the difference of two close probabilities, so an ulp of each
is 1e-4 of it), with the same actions chosen. The bounds below are those measurements with
room to spare, far below what another result (another action, another fit) would change.
"""

from __future__ import annotations

from decision_bench._src.versions import same_cpu

SAME_CPU_RTOL = 1e-6
OTHER_CPU_TESTBED_RTOL = 1e-5
OTHER_CPU_BANDIT_RTOL = 1e-3


def rtol_for_testbed(versions: dict) -> float:
    """rtol for testbed columns (d_KL, accuracy, ECE) recomputed from rows made with ``versions``."""
    return SAME_CPU_RTOL if same_cpu(versions or {}) else OTHER_CPU_TESTBED_RTOL


def rtol_for_bandit(versions: dict) -> float:
    """rtol for cumulative regret recomputed from bandit rows made with ``versions``."""
    return SAME_CPU_RTOL if same_cpu(versions or {}) else OTHER_CPU_BANDIT_RTOL
