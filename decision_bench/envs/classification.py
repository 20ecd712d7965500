"""A classification data set as a contextual bandit (Riquelme et al. 2018).

Every step shows one example x (drawn uniformly from the data set with the step
key); there is one arm per class, and pulling arm a gives reward 1 exactly when
a is the example's label. Regret is measured against always choosing the right
class: regret = 1 - P(reward = 1 | chosen arm), so 0 or 1.

Arm features: the disjoint encoding with a per-arm intercept,

    features(x, a) = onehot(a) (outer) [x, 1]   flattened to (d + 1) * C values,

so arm a's row holds [x, 1] in block a and zeros elsewhere. A linear model on
these features is a separate linear score w_a . x + b_a per arm, which is
exactly multinomial logistic regression's one-vs-rest form: the ``logistic``
agent can represent the Bayes-optimal policy of any linearly separable data
set, and MLPs can learn the rest. (The shorter [x, onehot(a)] would let a
linear model add only an arm bias to a score shared by all arms, so it could
not tell classes apart by x.) The observation is the [C, (d + 1) C] matrix of
all arms' features, as the other bandits of this package show their action sets.

The functional core follows envs/bandits.py: the frozen dataclass holds only
static facts (the data set's identity and shapes) and is hashable, so the
compiled bandit loop can take it as structure (a pytree without leaves); the data itself enters
through ``sample_params`` as the ``ClassificationParams`` pytree. Features are
standardised with the mean and standard deviation of the whole data set (a
bandit has no held-out split).
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from decision_bench._src.pytrees import register_as_static
from decision_bench.data import load_dataset


class ClassificationParams(NamedTuple):
    x: jax.Array  # [n, d] f32 standardised features
    y: jax.Array  # [n] i32 labels in 0..C-1


class ClassificationState(NamedTuple):
    actions: jax.Array  # [C, (d + 1) * C] arm features of the current example (the observation)
    label: jax.Array  # [] i32 the current example's class (the one right arm)
    t: jax.Array  # [] i32 steps taken since reset


def arm_features(x: jax.Array, num_classes: int) -> jax.Array:
    """Disjoint encoding with intercept. x: [d] -> [C, (d + 1) * C]; row a = onehot(a) (x) [x, 1]."""
    z = jnp.concatenate([x, jnp.ones((1,), x.dtype)])  # [d + 1]
    blocks = jnp.eye(num_classes, dtype=x.dtype)[:, :, None] * z[None, None, :]  # [C, C, d + 1]
    return blocks.reshape(num_classes, num_classes * z.shape[0])


@dataclasses.dataclass(frozen=True)
class ClassificationBandit:
    """``decision_bench/ClassificationBandit-v0``: one arm per class, reward 1 when right.

    dataset: a bundled name ("iris", "wine", "breast_cancer", "digits"; needs
    scikit-learn), a .csv or .npz path, (x, y) arrays or a
    ``decision_bench.data.ClassificationData`` (arrays are validated as in
    ``decision_bench.data.validate_arrays``). standardize: centre and scale
    the features with the data set's own statistics.

    Static facts: name, num_examples, num_classes (= num_actions), feature_dim
    (d), input_dim (the arm-feature size (d + 1) * C that agents see),
    temperature (1.0: rewards are deterministic given the example).
    """

    dataset: Any = "iris"
    standardize: bool = True

    def __post_init__(self):
        if not isinstance(self.standardize, bool):
            raise ValueError(f"standardize must be True or False, got {self.standardize!r}")
        data = load_dataset(self.dataset)
        if not isinstance(self.dataset, str):
            # Arrays are not hashable: keep the validated record, hashed by identity.
            object.__setattr__(self, "dataset", data)
        x, y = data.x, data.y
        if data.x_test is not None:  # a bandit draws from every example
            x, y = np.concatenate([x, data.x_test]), np.concatenate([y, data.y_test])
        if self.standardize:
            mean, std = x.mean(0, dtype=np.float64), x.std(0, dtype=np.float64)
            x = ((x - mean) / np.where(std > 0, std, 1.0)).astype(np.float32)
        # Host arrays (not dataclass fields: they take no part in eq, hash or repr).
        object.__setattr__(self, "_x", np.asarray(x, np.float32))
        object.__setattr__(self, "_y", np.asarray(y, np.int32))
        object.__setattr__(self, "_name", data.name)
        object.__setattr__(self, "_num_classes", data.num_classes)

    @property
    def name(self) -> str:
        return self._name

    @property
    def num_examples(self) -> int:
        return int(self._y.shape[0])

    @property
    def num_classes(self) -> int:
        return int(self._num_classes)

    @property
    def num_actions(self) -> int:
        return self.num_classes

    @property
    def feature_dim(self) -> int:
        return int(self._x.shape[1])

    @property
    def input_dim(self) -> int:
        return (self.feature_dim + 1) * self.num_classes

    @property
    def temperature(self) -> float:
        return 1.0

    def sample_params(self, key: jax.Array) -> ClassificationParams:
        """The data set as arrays. The key is unused: every seed plays the same data,
        and seeds differ in the examples they are shown."""
        del key
        return ClassificationParams(x=jnp.asarray(self._x), y=jnp.asarray(self._y))

    def _show(self, key: jax.Array, params: ClassificationParams, t: jax.Array) -> ClassificationState:
        i = jax.random.randint(key, (), 0, params.y.shape[0])
        return ClassificationState(
            actions=arm_features(params.x[i], self.num_classes), label=params.y[i], t=t
        )

    def reset(
        self, key: jax.Array, params: ClassificationParams
    ) -> tuple[jax.Array, ClassificationState]:
        """The first example: (obs [C, (d + 1) C], state)."""
        state = self._show(key, params, jnp.zeros((), jnp.int32))
        return state.actions, state

    def optimum(self, state: ClassificationState, params: ClassificationParams) -> dict[str, jax.Array]:
        """optimal_action (the shown example's label) and optimal_expected_reward (1):
        the values the next ``step`` reports in its info."""
        del params
        return {
            "optimal_action": state.label.astype(jnp.int32),
            "optimal_expected_reward": jnp.ones((), jnp.float32),
        }

    def step(
        self, key: jax.Array, state: ClassificationState, action: jax.Array, params: ClassificationParams
    ) -> tuple[jax.Array, ClassificationState, jax.Array, dict[str, jax.Array]]:
        """Scores ``action`` on the current example, then shows a fresh one.

        Returns (obs, state, reward [] f32 in {0, 1}, info) with expected_reward
        (= reward: it is deterministic), optimal_expected_reward (1), regret
        (1 - expected_reward) and optimal_action (the label).
        """
        correct = (action == state.label).astype(jnp.float32)
        info = {
            "expected_reward": correct,
            "optimal_expected_reward": jnp.ones((), jnp.float32),
            "regret": 1.0 - correct,
            "optimal_action": state.label.astype(jnp.int32),
        }
        next_state = self._show(key, params, state.t + 1)
        return next_state.actions, next_state, correct, info


# A pytree without leaves (as the other cores are pytrees, envs/bandits.py): the data set
# lives in host arrays set at construction, so the core stays whole, as structure.
register_as_static(ClassificationBandit)
