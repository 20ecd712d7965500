"""Real classification data sets as testbed problems (paper 001, Sec. 5 and App. D).

Loading, validation and seeded splits; the scoring (NLL of test tau-samples,
accuracy) is in ``decision_bench.evaluation.realdata``:

    problem = make_dataset_problem("iris", num_train=10, tau=10, kappa=2, seed=0)
    state = fit(agent, key, problem.train_data, problem.spec)
    result = evaluate_nll(FittedAgent(agent, state), problem, key)   # NLLResult

Where the data comes from (nothing is downloaded at run time):

- bundled: "iris", "wine", "breast_cancer", "digits" from scikit-learn
  (``pip install decision-bench[data]``);
- a UTF-8 CSV file (features then the integer label in the last column, an
  optional header row: see ``load_csv`` for the header rule) or a ``.npz`` file with arrays ``x`` and ``y`` (and optionally a
  canonical test split ``x_test`` and ``y_test``);
- arrays: ``(x, y)`` or ``(x_train, y_train, x_test, y_test)``, or a
  ``ClassificationData``.

Every source goes through ``validate_arrays``: x must be a finite 2-D numeric
array, y 1-D integer labels of the same length, with every label in 0..C-1
present and C >= 2, and each split must hold at least 2 examples.

Splits. A data set with a given test split uses it as its canonical split. The
others get a stratified split with ``TEST_FRACTION`` of each class held out,
drawn from ``CANONICAL_SPLIT_SEED`` (the canonical split: everyone gets the same
one) or from the problem's seed (``split="seeded"``). The training set is then
subsampled to ``num_train`` examples with the problem's seed (None keeps all).

Standardisation. Features are centred and scaled with the mean and standard
deviation of the whole training split (before subsampling: with T = 10 the
statistics of 10 points would be noise; the test split is never looked at). A
feature that is constant on the training split keeps scale 1, so it maps to 0
instead of dividing by zero.

Randomness. Splits and subsamples are host-side work done once per problem,
so they use numpy Generators seeded by purpose-tagged sequences: for seed s the
seeded split draws from ``default_rng((s, SPLIT_TAG))`` (one permutation per
class, in class order) and the subsample from ``default_rng((s,
SUBSAMPLE_TAG))``; ``CANONICAL_SPLIT_SEED`` replaces s for the canonical split.
Test tau-samples are drawn on the device from an explicit JAX key.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import os
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from decision_bench._src.extras import require_extra
from decision_bench._src.keys import SPLIT_TAG, SUBSAMPLE_TAG
from decision_bench._src.validation import (
    check_choice,
    check_int,
    check_optional_int,
    check_positive,
)
from decision_bench.specs import Dataset, ProblemSpec

BUNDLED = ("breast_cancer", "digits", "iris", "wine")
# The data sets of paper 001 Sec. 5, in its order.
PAPER_DATASETS = ("iris", "wine", "breast_cancer", "digits")
SPLITS = ("canonical", "seeded")
TEST_FRACTION = 0.2
CANONICAL_SPLIT_SEED = 0
MIN_PER_SPLIT = 2


_SKLEARN_LOADERS = {
    "iris": "load_iris",
    "wine": "load_wine",
    "breast_cancer": "load_breast_cancer",
    "digits": "load_digits",
}


# ----------------------------------------------------------------------------
# Raw data: loading and validation


@dataclasses.dataclass(frozen=True, eq=False)
class ClassificationData:
    """A labelled data set, validated, in raw (unstandardised) units.

    x: [n, d] f32; y: [n] i32 in 0..num_classes-1. x_test, y_test: a canonical
    test split ([n_test, d], [n_test]) or None. Arrays are read-only copies.
    """

    name: str
    x: np.ndarray
    y: np.ndarray
    x_test: np.ndarray | None = None
    y_test: np.ndarray | None = None

    def __post_init__(self):
        x, y = validate_arrays(self.x, self.y, where=f"{self.name!r}")
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y)
        if (self.x_test is None) != (self.y_test is None):
            raise ValueError(f"data set {self.name!r}: give both x_test and y_test, or neither")
        if self.x_test is not None:
            xt, yt = validate_arrays(
                self.x_test, self.y_test, where=f"{self.name!r} (test split)", require_all_labels=False
            )
            if xt.shape[1] != x.shape[1]:
                raise ValueError(
                    f"data set {self.name!r}: x_test has {xt.shape[1]} features but x has {x.shape[1]}"
                )
            if yt.max() >= self.num_classes:
                raise ValueError(
                    f"data set {self.name!r}: y_test has label {int(yt.max())}, but the training "
                    f"labels are 0..{self.num_classes - 1}"
                )
            object.__setattr__(self, "x_test", xt)
            object.__setattr__(self, "y_test", yt)
            _check_split_sizes(self.name, len(y), len(yt))

    @property
    def num_classes(self) -> int:
        return int(self.y.max()) + 1

    @property
    def input_dim(self) -> int:
        return int(self.x.shape[1])

    @property
    def num_examples(self) -> int:
        """All examples, the canonical test split included."""
        return int(len(self.y) + (0 if self.y_test is None else len(self.y_test)))

    def digest(self) -> str:
        """SHA-1 of the arrays: names the data's content (results, resume checks, hashing)."""
        h = hashlib.sha1()
        for a in (self.x, self.y, self.x_test, self.y_test):
            h.update(b"-" if a is None else np.ascontiguousarray(a).tobytes())
        return h.hexdigest()

    def __repr__(self) -> str:
        return (
            f"ClassificationData(name={self.name!r}, n={self.num_examples}, d={self.input_dim}, "
            f"C={self.num_classes}, sha1={self.digest()[:12]})"
        )


def validate_arrays(
    x: Any, y: Any, where: str = "data", *, require_all_labels: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Checks features and labels; returns read-only (x [n, d] f32, y [n] i32).

    Raises ValueError naming the problem: x not 2-D numeric, NaN or inf in x, y not
    1-D, lengths that differ, labels that are not integers, negative, not all of
    0..C-1 (with require_all_labels), or fewer than 2 classes.
    """
    try:
        x = np.array(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: x must be a numeric array of shape [n, d]") from None
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"{where}: x must have shape [n, d] with n, d >= 1, got shape {x.shape}")
    bad = ~np.isfinite(x)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(
            f"{where}: x has {int(bad.sum())} NaN or infinite values (first at row {row}, "
            f"column {col}); remove or impute them first"
        )
    try:
        y = np.array(y)
        y_float = y.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: y must be integer labels 0..C-1") from None
    if y.ndim != 1:
        raise ValueError(f"{where}: y must have shape [n], got shape {y.shape}")
    if len(y) != len(x):
        raise ValueError(f"{where}: x has {len(x)} rows but y has {len(y)} labels")
    if not np.all(np.isfinite(y_float)) or not np.all(y_float == np.round(y_float)):
        raise ValueError(f"{where}: y must be integer labels 0..C-1, got non-integer values")
    y = y_float.astype(np.int64)
    if y.min() < 0:
        raise ValueError(f"{where}: labels must be 0..C-1, got negative label {int(y.min())}")
    present = np.unique(y)
    # A given test split may hold one class; the training data must show two.
    if require_all_labels and len(present) < 2:
        raise ValueError(f"{where}: needs at least 2 classes, got a single class {present.tolist()}")
    if require_all_labels and len(present) != int(y.max()) + 1:
        missing = sorted(set(range(int(y.max()) + 1)) - set(present.tolist()))
        raise ValueError(
            f"{where}: labels must be 0..C-1 with every class present; labels {missing[:10]} "
            f"are missing (got {len(present)} distinct labels up to {int(y.max())}); "
            "relabel with numpy.unique(y, return_inverse=True)"
        )
    x32, y32 = x.astype(np.float32), y.astype(np.int32)
    x32.setflags(write=False)
    y32.setflags(write=False)
    return x32, y32


def _check_split_sizes(name: str, num_train: int, num_test: int) -> None:
    for split, size in (("training", num_train), ("test", num_test)):
        if size < MIN_PER_SPLIT:
            raise ValueError(
                f"data set {name!r}: the {split} split has {size} example(s); "
                f"each split needs at least {MIN_PER_SPLIT}"
            )


@functools.lru_cache(maxsize=None)
def _load_bundled(name: str) -> ClassificationData:
    # Cached: the sklearn files are parsed once per process (the data is read-only).
    require_extra("data", f"data set {name!r}")  # bundled with scikit-learn
    from sklearn import datasets as sk_datasets
    bunch = getattr(sk_datasets, _SKLEARN_LOADERS[name])()
    return ClassificationData(name, bunch.data, bunch.target)


def load_csv(path: str | os.PathLike, label_column: int = -1, header: bool | None = None) -> ClassificationData:
    """A UTF-8 CSV file of numeric features and an integer label column (default: the last).

    The header rule (``header``):
      True   the first row is a header (skipped);
      False  every row is data;
      None   (default) a first row that does not parse as numbers is a header, one
             that does is data, except a first row that reads as column numbers
             (0, 1, ..., k-1 or 1, ..., k, as pandas' to_csv writes for unnamed
             columns): that is ambiguous and refused, asking for ``header``.
    Raises ValueError (one line naming the file) for a missing or non-UTF-8 file,
    the ambiguous header, or non-numeric values.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"dataset file {str(path)!r} does not exist")
    if header is not None and not isinstance(header, bool):
        raise ValueError(f"header must be True, False or None (auto), got {header!r}")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"dataset file {str(path)!r} is not UTF-8 text (byte {error.start}); save it as UTF-8 CSV"
        ) from None
    first = next((line for line in text.splitlines() if line.strip()), "")
    if header is None:
        try:
            values = [float(v) for v in first.strip().split(",")]
        except ValueError:
            header = True
        else:
            header = False
            count = len(values)
            if values in ([float(i) for i in range(count)], [float(i) for i in range(1, count + 1)]):
                raise ValueError(
                    f"dataset file {str(path)!r}: its first row {first.strip()!r} could be a header of column "
                    "numbers or a data row; pass header=True or header=False, or give the columns names"
                )
    try:
        table = np.loadtxt(io.StringIO(text), delimiter=",", skiprows=1 if header else 0, ndmin=2)
    except ValueError as error:
        raise ValueError(f"dataset file {str(path)!r}: could not read numbers ({error})") from None
    if table.shape[1] < 2:
        raise ValueError(
            f"dataset file {str(path)!r} needs at least 2 columns (features and a label), "
            f"got {table.shape[1]}"
        )
    col = label_column % table.shape[1]
    return ClassificationData(path.stem, np.delete(table, col, axis=1), table[:, col])


def load_npz(path: str | os.PathLike) -> ClassificationData:
    """A .npz file with arrays x, y and optionally x_test, y_test."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"dataset file {str(path)!r} does not exist")
    with np.load(path, allow_pickle=False) as data:
        missing = sorted({"x", "y"} - set(data.files))
        if missing:
            raise ValueError(f"dataset file {str(path)!r} lacks arrays {missing}; it has {data.files}")
        test = (data["x_test"], data["y_test"]) if "x_test" in data.files else (None, None)
        return ClassificationData(path.stem, data["x"], data["y"], *test)


def load_dataset(source: Any, name: str | None = None) -> ClassificationData:
    """A ClassificationData from a bundled name, a .csv/.npz path, (x, y),
    (x_train, y_train, x_test, y_test) or a ClassificationData (returned as is)."""
    if isinstance(source, ClassificationData):
        return source
    if isinstance(source, (str, os.PathLike)):
        text = os.fspath(source)
        if text in BUNDLED:
            return _load_bundled(text)
        suffix = Path(text).suffix.lower()
        if suffix == ".csv":
            return load_csv(text)
        if suffix == ".npz":
            return load_npz(text)
        raise ValueError(
            f"dataset must be one of {list(BUNDLED)}, a .csv or .npz file, or arrays, got {text!r}"
        )
    if isinstance(source, (tuple, list)) and len(source) in (2, 4):
        return ClassificationData(name or "arrays", *source)
    raise ValueError(
        "dataset must be a bundled name, a .csv/.npz path, (x, y), (x_train, y_train, x_test, y_test) "
        f"or a ClassificationData, got {type(source).__name__}"
    )


# ----------------------------------------------------------------------------
# Splits and standardisation (host side, once per problem)


def host_rng(seed: int, tag: int) -> np.random.Generator:
    """The numpy Generator for (seed, purpose tag): independent streams per purpose."""
    return np.random.default_rng((seed, tag))


def stratified_split(
    y: np.ndarray, rng: np.random.Generator, test_fraction: float = TEST_FRACTION
) -> tuple[np.ndarray, np.ndarray]:
    """(train indices, test indices) holding out round(test_fraction * n_c) of each
    class c (at least 1 when the class has 2 or more examples). Both sorted."""
    train, test = [], []
    for c in range(int(y.max()) + 1):
        members = np.flatnonzero(y == c)
        order = members[rng.permutation(len(members))]
        k = int(round(test_fraction * len(members)))
        k = max(k, 1) if len(members) >= 2 else 0
        test.append(order[:k])
        train.append(order[k:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def standardize(
    x_train: np.ndarray, *others: np.ndarray
) -> tuple[np.ndarray, ...]:
    """(x - mean) / std with the statistics of x_train [n, d], applied to x_train and
    every array in others; constant features keep scale 1. Returns f32 arrays."""
    mean = x_train.mean(axis=0, dtype=np.float64)
    std = x_train.std(axis=0, dtype=np.float64)
    std = np.where(std > 0, std, 1.0)  # constant on train: centre only
    return tuple(((a - mean) / std).astype(np.float32) for a in (x_train, *others))


# ----------------------------------------------------------------------------
# Problems


@dataclasses.dataclass(frozen=True, eq=False)
class DatasetProblem:
    """A real-data problem: standardised training and test data and a tau-sampler.

    name: the data set; train_data: Dataset of spec.num_train pairs; test_data:
    the whole test split; spec: what agents may know (input_dim, num_classes,
    temperature, num_train, tau, kappa); seed: the problem's seed; split: how
    the train/test split was made ("canonical" or "seeded").
    """

    name: str
    train_data: Dataset
    test_data: Dataset
    spec: ProblemSpec
    seed: int
    split: str

    __test__ = False

    def sample_tests(self, key: jax.Array, num_test: int) -> Dataset:
        """num_test tau-samples of the test split: x [num_test, tau, d], y [num_test, tau].

        Each tau-sample is drawn with replacement from the test split (kappa None)
        or from kappa anchors that are themselves drawn with replacement from it
        (paper 001, Def. 1, with the test split as the input distribution).
        """
        num_test = check_int("num_test", num_test, 1)
        index = sample_test_indices(
            key, self.test_data.y.shape[0], num_test, self.spec.tau, self.spec.kappa
        )
        return Dataset(self.test_data.x[index], self.test_data.y[index])


@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4))
def sample_test_indices(
    key: jax.Array, num_examples: int, num_test: int, tau: int, kappa: int | None
) -> jax.Array:
    """Indices [num_test, tau] into a test split of num_examples (see DatasetProblem.sample_tests)."""

    def one(k):
        if kappa is None:
            return jax.random.randint(k, (tau,), 0, num_examples)
        k_anchor, k_pick = jax.random.split(k)
        anchors = jax.random.randint(k_anchor, (kappa,), 0, num_examples)
        return anchors[jax.random.randint(k_pick, (tau,), 0, kappa)]

    return jax.vmap(one)(jax.random.split(key, num_test))


def make_dataset_problem(
    name_or_arrays: Any,
    num_train: int | None = None,
    tau: int = 1,
    kappa: int | None = None,
    seed: int = 0,
    *,
    split: str = "canonical",
    temperature: float = 1.0,
) -> DatasetProblem:
    """A real-data problem from a bundled name, a file, or arrays (see ``load_dataset``).

    num_train: training examples T, subsampled with the seed (None: the whole
    training split); tau, kappa: the test tau-sampler (kappa None: iid); seed:
    the subsample (and the split when split="seeded"); split: "canonical" (the
    data's own test split, else the stratified split of CANONICAL_SPLIT_SEED) or
    "seeded"; temperature: the spec's beta that agents scale their regularisers
    by (1.0: real labels are read as the low-temperature limit, so no
    generative beta is known; see paper 001 App. D).
    """
    num_train = check_optional_int("num_train", num_train, 1)
    tau = check_int("tau", tau, 1)
    kappa = check_optional_int("kappa", kappa, 1)
    seed = check_int("seed", seed, 0)
    check_choice("split", split, SPLITS)
    temperature = check_positive("temperature", temperature)
    data = load_dataset(name_or_arrays)
    if data.x_test is not None and split == "canonical":
        x_tr, y_tr, x_te, y_te = data.x, data.y, data.x_test, data.y_test
    else:
        if data.x_test is not None:  # a seeded re-split pools the given splits
            x_all = np.concatenate([data.x, data.x_test])
            y_all = np.concatenate([data.y, data.y_test])
        else:
            x_all, y_all = data.x, data.y
        split_seed = CANONICAL_SPLIT_SEED if split == "canonical" else seed
        train_idx, test_idx = stratified_split(y_all, host_rng(split_seed, SPLIT_TAG))
        _check_split_sizes(data.name, len(train_idx), len(test_idx))
        x_tr, y_tr, x_te, y_te = x_all[train_idx], y_all[train_idx], x_all[test_idx], y_all[test_idx]
    available = len(y_tr)
    if num_train is None:
        num_train = available
    elif num_train > available:
        raise ValueError(
            f"num_train must be at most the training split's {available} examples "
            f"of {data.name!r} (or None for all), got {num_train}"
        )
    x_tr_std, x_te_std = standardize(x_tr, x_te)
    keep = host_rng(seed, SUBSAMPLE_TAG).permutation(available)[:num_train]
    spec = ProblemSpec(
        input_dim=data.input_dim,
        num_classes=data.num_classes,
        temperature=temperature,
        num_train=num_train,
        tau=tau,
        kappa=kappa,
    )
    return DatasetProblem(
        name=data.name,
        train_data=Dataset(jnp.asarray(x_tr_std[keep]), jnp.asarray(y_tr[keep])),
        test_data=Dataset(jnp.asarray(x_te_std), jnp.asarray(y_te)),
        spec=spec,
        seed=seed,
        split=split,
    )
