"""What an agent may know about a problem before seeing data (the paper's PriorKnowledge),
and the plain data record every layer passes around."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax

from decision_bench._src.validation import check_choice, check_int, check_optional_int, check_positive

# How the L2 (or KL) weight decays with the observations seen (agents/regularization.py).
REGULARIZATION_MODES = ("testbed", "sequential", "sequential_linear_beta")


@dataclasses.dataclass(frozen=True)
class ProblemSpec:
    """Static facts about a problem: shapes and the generative temperature.

    input_dim: features per input; num_classes: label values 0..C-1;
    temperature: the prior's beta (agents scale priors and regularisers by it);
    num_train: T, the training set size; tau, kappa: the test sampler
    (kappa None means iid test inputs); regularization: how the L2 (or KL)
    weight of every agent decays with Batch.num_seen (REGULARIZATION_MODES):
    "testbed" when fitting a data set of T, "sequential" or
    "sequential_linear_beta" in the bandit, where num_seen is t.
    """

    input_dim: int
    num_classes: int = 2
    temperature: float = 0.1
    num_train: int = 0
    tau: int = 1
    kappa: int | None = None
    regularization: str = "testbed"

    def __post_init__(self):
        object.__setattr__(self, "input_dim", check_int("input_dim", self.input_dim, 1))
        object.__setattr__(self, "num_classes", check_int("num_classes", self.num_classes, 2))
        object.__setattr__(self, "temperature", check_positive("temperature", self.temperature))
        object.__setattr__(self, "num_train", check_int("num_train", self.num_train, 0))
        object.__setattr__(self, "tau", check_int("tau", self.tau, 1))
        object.__setattr__(self, "kappa", check_optional_int("kappa", self.kappa, 1))
        check_choice("regularization", self.regularization, REGULARIZATION_MODES)

    @property
    def replay_capacity(self) -> int:
        """num_train under its bandit name: there the spec's num_train is the replay
        buffer's size, so every Batch.index is below it (agents that keep a weight
        per example, like bootstrapped ensembles, size their table by it)."""
        return self.num_train


class Dataset(NamedTuple):
    """A training or test set: x [n, input_dim] f32, y [n] i32 labels in 0..num_classes-1."""

    x: jax.Array
    y: jax.Array
