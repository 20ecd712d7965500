"""The Deep Bayesian Bandits Showdown's real data sets, from the user's own copy.

Riquelme, Tucker and Snoek (ICLR 2018) turn seven public data sets into
contextual bandits. Nothing is downloaded here: ``load_showdown(name, path)``
reads a file the user already has and applies the preprocessing described by
the paper (App. A) and done by its released code (``bandits/data/data_sampler.py``
and ``example_main.py`` of tensorflow/models research/deep_contextual_bandits,
later google-research/bandits). Facts, per data set:

- ``mushroom`` (UCI Mushroom, ``agaricus-lepiota.data``, no header, 8124 rows):
  every column one-hot encoded; the label's two columns (edible, poisonous) are
  dropped from the context (117 features remain on the full file). Two actions,
  0 = do not eat (reward 0), 1 = eat: +5 if edible; if poisonous, -35 with
  probability 1/2 and +5 otherwise (expected -15). Contexts are drawn with
  replacement (the code's ``np.random.choice(..., replace=True)``); no scaling.
- ``statlog`` (UCI Statlog Shuttle, whitespace-separated, label 1..7 last): 7
  actions; a reward of 1 for the right class, 0 otherwise; at most 43,500 rows.
- ``covertype`` (UCI Covertype, ``covtype.data``, label last): 7 actions, at most
  150,000 rows. The code reads the file with ``header=0``, which would drop the
  first example of the UCI file (it has no header); here ``header`` says whether
  the file has one (default: no).
- ``adult`` (UCI Adult, ``adult.data``, no header, "?" for missing): rows with a
  missing value dropped; the label is occupation (column 6, 14 classes, sorted
  category codes); columns 1, 3, 5, 7, 8, 9, 13 and 14 one-hot encoded; at most
  45,222 rows.
- ``census`` (UCI US Census 1990, ``USCensus1990.data.txt``, header row): rows with
  a missing value dropped; the label is ``dOccup`` (9 classes used as actions);
  ``caseid`` dropped; every other column one-hot encoded; at most 150,000 rows.
- ``jester`` (the Showdown's dense subset of Jester ratings, 19,181 users x 40
  jokes, as a numeric CSV without header): the joke columns are shuffled, then
  the first 32 ratings are the context and the last 8 the actions, whose
  reward is the user's rating (deterministic).
- ``financial`` (the Showdown's ``raw_stock_contexts``: one header line, then 21
  whitespace-separated numbers per row, 3,713 rows): 8 actions, linear rewards
  mu_a(x) = x . beta_a with beta_a ~ U(-1, 1)^21 scaled to unit length, plus
  N(0, (0.01 (a + 1))^2) noise; contexts not scaled.

The four classification sets (statlog, covertype, adult, census) then go
through the code's ``classification_to_bandit_problem``: every context column
is centred and divided by its standard deviation (1 where it is 0), and the
reward table is the one-hot label. Rows are shuffled first (``shuffle``), then
cut to ``num_contexts``. Every draw comes from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np

from decision_bench._src.validation import check_choice, check_int, check_seed
from decision_bench.data.datasets import ClassificationData

SHOWDOWN_DATASETS = ("mushroom", "statlog", "covertype", "financial", "jester", "adult", "census")
# The example script's caps on the number of contexts (example_main.py).
MAX_CONTEXTS = {
    "mushroom": 8124,
    "statlog": 43_500,
    "covertype": 150_000,
    "financial": 3713,
    "jester": 19_181,
    "adult": 45_222,
    "census": 150_000,
}
NUM_ACTIONS = {"mushroom": 2, "statlog": 7, "covertype": 7, "financial": 8, "jester": 8, "adult": 14, "census": 9}
CLASSIFICATION = ("statlog", "covertype", "adult", "census")
ADULT_LABEL_COLUMN = 6
ADULT_CATEGORICAL_COLUMNS = (1, 3, 5, 7, 8, 9, 13, 14)
JESTER_CONTEXT_DIM = 32
# Mushroom rewards (data_sampler.sample_mushroom_data's defaults).
MUSHROOM_NO_EAT, MUSHROOM_EAT_SAFE = 0.0, 5.0
MUSHROOM_POISON_BAD, MUSHROOM_POISON_GOOD, MUSHROOM_P_BAD = -35.0, 5.0, 0.5
FINANCIAL_NOISE_SCALE = 0.01


@dataclasses.dataclass(frozen=True)
class ShowdownData:
    """One Showdown data set as a bandit problem, preprocessed.

    contexts: [n, d] f32. rewards: [n, A] f32, the reward each action would
    have earned at that context (sampled once, as the Showdown does).
    expected_rewards: [n, A] f32, their expectations (equal to ``rewards`` where
    the rewards are deterministic), from which regret is measured. labels: [n]
    i32 class per row for the classification sets, else None.
    """

    name: str
    contexts: np.ndarray
    rewards: np.ndarray
    expected_rewards: np.ndarray
    labels: np.ndarray | None = None

    @property
    def num_actions(self) -> int:
        return int(self.rewards.shape[1])

    @property
    def optimal_actions(self) -> np.ndarray:
        """[n] i32: argmax_a of the expected reward."""
        return self.expected_rewards.argmax(axis=1).astype(np.int32)

    @property
    def optimal_expected_rewards(self) -> np.ndarray:
        """[n] f32: max_a of the expected reward."""
        return self.expected_rewards.max(axis=1)

    def regret(self, actions: Any) -> np.ndarray:
        """[n] expected regret of playing actions [n] (ints in 0..A-1) at each row."""
        actions = np.asarray(actions)
        if actions.shape != (len(self.contexts),) or not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(f"actions must be {len(self.contexts)} integers in [0, {self.num_actions})")
        if actions.min() < 0 or actions.max() >= self.num_actions:
            raise ValueError(f"actions must be integers in [0, {self.num_actions}), got {actions.min()}..{actions.max()}")
        chosen = np.take_along_axis(self.expected_rewards, actions[:, None], axis=1)[:, 0]
        return self.optimal_expected_rewards - chosen

    def as_classification(self) -> ClassificationData:
        """The classification sets as ``ClassificationData`` (for ClassificationBandit-v0,
        which standardises again: a no-op on standardised columns)."""
        if self.labels is None:
            raise ValueError(
                f"data set {self.name!r} is not a classification set; only {list(CLASSIFICATION)} are"
            )
        return ClassificationData(self.name, self.contexts, self.labels)


def _read_table(path: Path, name: str, **read_csv: Any):
    import pandas as pd

    try:
        return pd.read_csv(path, **read_csv)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as error:
        raise ValueError(f"{name} file {str(path)!r}: could not read it ({str(error).splitlines()[0]})") from None


def _numeric(path: Path, name: str, skiprows: int = 0, delimiter: str | None = None) -> np.ndarray:
    try:
        table = np.loadtxt(path, skiprows=skiprows, delimiter=delimiter, ndmin=2)
    except ValueError as error:
        raise ValueError(f"{name} file {str(path)!r}: could not read numbers ({error})") from None
    if not np.isfinite(table).all():
        raise ValueError(f"{name} file {str(path)!r}: has NaN or infinite values")
    return table


def standardize_columns(contexts: np.ndarray) -> np.ndarray:
    """Centre each column and divide by its standard deviation (1 where it is 0), in float64."""
    contexts = np.asarray(contexts, np.float64)
    std = contexts.std(axis=0)
    return (contexts - contexts.mean(axis=0)) / np.where(std == 0.0, 1.0, std)


def _category_codes(values) -> np.ndarray:
    """Labels as the codes of their sorted distinct values (pandas' category codes)."""
    _, codes = np.unique(np.asarray(values).astype(str), return_inverse=True)
    return codes.astype(np.int32)


def _classification(name: str, contexts: np.ndarray, labels: np.ndarray, num_actions: int) -> ShowdownData:
    if labels.max() >= num_actions:
        raise ValueError(
            f"{name}: labels take {int(labels.max()) + 1} values but the Showdown's {name} bandit has "
            f"{num_actions} actions; is this the right file?"
        )
    rewards = np.zeros((len(labels), num_actions), np.float32)
    rewards[np.arange(len(labels)), labels] = 1.0
    return ShowdownData(name, standardize_columns(contexts).astype(np.float32), rewards, rewards.copy(), labels)


def _take(rows: int, num_contexts: int | None, cap: int, rng: np.random.Generator, shuffle: bool) -> np.ndarray:
    """Row indices: shuffled (or in order), cut to min(num_contexts, cap, rows)."""
    order = rng.permutation(rows) if shuffle else np.arange(rows)
    limit = min(cap, rows) if num_contexts is None else min(num_contexts, cap, rows)
    return order[:limit]


def load_showdown(
    name: str,
    path: str | os.PathLike,
    num_contexts: int | None = None,
    seed: int = 0,
    shuffle: bool = True,
    header: bool | None = None,
) -> ShowdownData:
    """Reads the user's copy of a Showdown data set and preprocesses it (module docstring).

    name: one of SHOWDOWN_DATASETS. path: the file. num_contexts: rows to keep
    (default and cap: the Showdown's, MAX_CONTEXTS; mushroom draws this many
    with replacement). seed: the numpy seed of the shuffles and sampled rewards.
    header: whether a CSV (covertype, census) starts with a header row (default:
    False for covertype, True for census, as the UCI files).
    """
    check_choice("name", name, SHOWDOWN_DATASETS)
    if num_contexts is not None:
        num_contexts = check_int("num_contexts", num_contexts, 1)
    seed = check_seed("seed", seed)
    if not isinstance(shuffle, bool):
        raise ValueError(f"shuffle must be True or False, got {shuffle!r}")
    if header is not None and not isinstance(header, bool):
        raise ValueError(f"header must be True, False or None (the file's usual form), got {header!r}")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{name} file {str(path)!r} does not exist")
    rng = np.random.default_rng(seed)
    cap, num_actions = MAX_CONTEXTS[name], NUM_ACTIONS[name]

    if name == "mushroom":
        return _mushroom(path, num_contexts or cap, rng)
    if name == "financial":
        table = _numeric(path, name, skiprows=1)
        contexts = table[_take(len(table), num_contexts, cap, rng, shuffle)]
        betas = rng.uniform(-1.0, 1.0, (contexts.shape[1], num_actions))
        betas /= np.linalg.norm(betas, axis=0)
        means = contexts @ betas
        noise_stds = FINANCIAL_NOISE_SCALE * np.arange(1, num_actions + 1)
        rewards = means + rng.normal(size=means.shape) * noise_stds
        return ShowdownData(name, contexts.astype(np.float32), rewards.astype(np.float32), means.astype(np.float32))
    if name == "jester":
        table = _numeric(path, name, delimiter=",")
        if table.shape[1] != JESTER_CONTEXT_DIM + num_actions:
            raise ValueError(
                f"jester file {str(path)!r}: needs {JESTER_CONTEXT_DIM + num_actions} rating columns "
                f"({JESTER_CONTEXT_DIM} context jokes and {num_actions} action jokes), got {table.shape[1]}"
            )
        table = table[:, rng.permutation(table.shape[1])]  # the example's shuffle_cols=True
        table = table[_take(len(table), num_contexts, cap, rng, shuffle)]
        rewards = table[:, JESTER_CONTEXT_DIM:].astype(np.float32)
        return ShowdownData(name, table[:, :JESTER_CONTEXT_DIM].astype(np.float32), rewards, rewards.copy())
    if name == "statlog":
        table = _numeric(path, name)
        table = table[_take(len(table), num_contexts, cap, rng, shuffle)]
        labels = table[:, -1]
        if not np.all(labels == np.round(labels)) or labels.min() < 1:
            raise ValueError(f"statlog file {str(path)!r}: the last column must hold the class, 1..7")
        return _classification(name, table[:, :-1], labels.astype(np.int32) - 1, num_actions)
    if name == "covertype":
        df = _read_table(path, name, header=0 if header else None, na_values=["?"]).dropna()
        df = df.iloc[_take(len(df), num_contexts, cap, rng, shuffle)]
        labels = _category_codes(df.iloc[:, -1])
        return _classification(name, df.iloc[:, :-1].to_numpy(np.float64), labels, num_actions)
    if name == "adult":
        import pandas as pd

        df = _read_table(path, name, header=0 if header else None, na_values=["?"], skipinitialspace=True)
        df = df.dropna()
        if df.shape[1] != 15:
            raise ValueError(f"adult file {str(path)!r}: needs the 15 columns of adult.data, got {df.shape[1]}")
        df.columns = range(15)
        df = df.iloc[_take(len(df), num_contexts, cap, rng, shuffle)]
        labels = _category_codes(df[ADULT_LABEL_COLUMN])
        df = pd.get_dummies(df.drop(columns=[ADULT_LABEL_COLUMN]), columns=list(ADULT_CATEGORICAL_COLUMNS))
        return _classification(name, df.to_numpy(np.float64), labels, num_actions)
    # census
    import pandas as pd

    df = _read_table(path, name, header=0 if header in (None, True) else None, na_values=["?"]).dropna()
    missing = sorted({"dOccup", "caseid"} - set(df.columns))
    if missing:
        raise ValueError(f"census file {str(path)!r}: lacks the columns {missing} (the UCI header names them)")
    df = df.iloc[_take(len(df), num_contexts, cap, rng, shuffle)]
    labels = _category_codes(df["dOccup"])
    df = df.drop(columns=["dOccup", "caseid"])
    df = pd.get_dummies(df, columns=list(df.columns))
    return _classification(name, df.to_numpy(np.float64), labels, num_actions)


def _mushroom(path: Path, num_contexts: int, rng: np.random.Generator) -> ShowdownData:
    import pandas as pd

    df = _read_table(path, "mushroom", header=None, dtype=str)
    classes = set(df[0].str.strip())
    if not classes <= {"e", "p"}:
        raise ValueError(
            f"mushroom file {str(path)!r}: the first column must be the class, e or p; got {sorted(classes)[:5]}"
        )
    # One-hot every column, in column order; the class column's two come first.
    onehot = pd.get_dummies(df, columns=list(df.columns)).to_numpy(np.float64)
    edible = (df[0].str.strip() == "e").to_numpy()
    contexts = onehot[:, len(classes):]
    rows = rng.choice(len(df), num_contexts, replace=True)
    harmed = rng.random(num_contexts) < MUSHROOM_P_BAD
    eat = np.where(edible[rows], MUSHROOM_EAT_SAFE, np.where(harmed, MUSHROOM_POISON_BAD, MUSHROOM_POISON_GOOD))
    poison_mean = MUSHROOM_P_BAD * MUSHROOM_POISON_BAD + (1 - MUSHROOM_P_BAD) * MUSHROOM_POISON_GOOD
    eat_mean = np.where(edible[rows], MUSHROOM_EAT_SAFE, poison_mean)
    no_eat = np.full(num_contexts, MUSHROOM_NO_EAT)
    return ShowdownData(
        "mushroom",
        contexts[rows].astype(np.float32),
        np.stack([no_eat, eat], axis=1).astype(np.float32),
        np.stack([no_eat, eat_mean], axis=1).astype(np.float32),
    )
