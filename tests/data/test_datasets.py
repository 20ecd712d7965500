"""Real classification data: loading, validation, splits, standardisation, NLL scoring."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sklearn")

from decision_bench.agents import fit, make  # noqa: E402
from decision_bench.analysis.realdata import correlate_with_realdata  # noqa: E402
from decision_bench.cli import main as cli_main  # noqa: E402
from decision_bench.data.datasets import (  # noqa: E402
    CANONICAL_SPLIT_SEED,
    SPLIT_TAG,
    host_rng,
    TEST_FRACTION,
    ClassificationData,
    load_dataset,
    make_dataset_problem,
    stratified_split,
)
from decision_bench.evaluation.kl import FittedAgent  # noqa: E402
from decision_bench.evaluation.realdata import COLUMNS, evaluate_nll, run_realdata  # noqa: E402


def _unique_data(n=60, d=3, c=3, seed=0):
    """Arrays with distinct rows (so a row identifies its label) and balanced labels."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = np.arange(n) % c
    return x, y


def _same(a, b):
    return all(np.array_equal(np.asarray(u), np.asarray(v)) for u, v in zip(a, b))


# ----------------------------------------------------------------------------
# Splits and standardisation


def test_problem_is_reproducible_per_seed_and_seeds_differ():
    a = make_dataset_problem("iris", num_train=10, seed=3)
    b = make_dataset_problem("iris", num_train=10, seed=3)
    c = make_dataset_problem("iris", num_train=10, seed=4)
    assert _same(a.train_data, b.train_data) and _same(a.test_data, b.test_data)
    assert a.train_data.x.shape == (10, 4) and a.spec.num_train == 10
    assert not np.array_equal(np.asarray(a.train_data.x), np.asarray(c.train_data.x))
    # canonical split: the same test set whatever the seed
    assert _same(a.test_data, c.test_data)


def test_seeded_split_depends_on_seed_and_canonical_on_nothing():
    s1 = make_dataset_problem("wine", seed=1, split="seeded")
    s1_again = make_dataset_problem("wine", seed=1, split="seeded")
    s2 = make_dataset_problem("wine", seed=2, split="seeded")
    assert _same(s1.test_data, s1_again.test_data)
    assert not np.array_equal(np.asarray(s1.test_data.y), np.asarray(s2.test_data.y)) or not np.array_equal(
        np.asarray(s1.test_data.x), np.asarray(s2.test_data.x)
    )
    # the canonical split is the seeded split of CANONICAL_SPLIT_SEED
    canonical = make_dataset_problem("wine", seed=CANONICAL_SPLIT_SEED, split="canonical")
    seeded0 = make_dataset_problem("wine", seed=CANONICAL_SPLIT_SEED, split="seeded")
    assert _same(canonical.test_data, seeded0.test_data)


def test_stratified_split_is_a_partition_with_per_class_counts():
    y = np.array([0] * 50 + [1] * 30 + [2] * 7)
    train, test = stratified_split(y, host_rng(5, SPLIT_TAG))
    assert len(np.intersect1d(train, test)) == 0
    assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(len(y)))
    for c, n_c in enumerate((50, 30, 7)):
        assert np.sum(y[test] == c) == round(TEST_FRACTION * n_c)


def test_full_training_split_is_standardised_with_train_statistics():
    x, y = _unique_data(n=100, d=4)
    x = x * np.array([1.0, 10.0, 0.1, 0.0]) + np.array([5.0, -3.0, 0.0, 7.0])  # last column constant
    problem = make_dataset_problem((x, y), num_train=None, seed=0)
    xt = np.asarray(problem.train_data.x, np.float64)
    np.testing.assert_allclose(xt.mean(0), 0.0, atol=1e-6)
    np.testing.assert_allclose(xt[:, :3].std(0), 1.0, rtol=1e-5)
    assert np.all(xt[:, 3] == 0.0)  # constant on train: centred, scale 1
    # the test split uses the same (train) statistics: undo them and find the raw rows
    train_idx, test_idx = stratified_split(y, host_rng(CANONICAL_SPLIT_SEED, SPLIT_TAG))
    mean, std = x[train_idx].mean(0), x[train_idx].std(0)
    std[3] = 1.0
    np.testing.assert_allclose(
        np.asarray(problem.test_data.x), (x[test_idx] - mean) / std, rtol=1e-5, atol=1e-5
    )


def test_given_test_split_is_the_canonical_split():
    x, y = _unique_data(n=40)
    xt, yt = _unique_data(n=12, seed=1)
    problem = make_dataset_problem((x, y, xt, yt), num_train=20, seed=2)
    assert problem.test_data.x.shape == (12, 3)
    np.testing.assert_array_equal(np.asarray(problem.test_data.y), yt)


def test_dyadic_tau_samples_use_at_most_kappa_distinct_inputs():
    problem = make_dataset_problem("digits", num_train=100, tau=10, kappa=2, seed=0)
    tests = problem.sample_tests(jax.random.key(1), 50)
    assert tests.x.shape == (50, 10, 64) and tests.y.shape == (50, 10)
    for i in range(50):
        assert len(np.unique(np.asarray(tests.x[i]), axis=0)) <= 2


# ----------------------------------------------------------------------------
# NLL scoring


@pytest.mark.parametrize("tau,kappa", [(1, None), (10, 2)])
def test_nll_of_oracle_is_zero_and_of_uniform_is_tau_log_c(tau, kappa):
    x, y = _unique_data(n=90, c=3)
    problem = make_dataset_problem((x, y), num_train=30, tau=tau, kappa=kappa, seed=0)
    test_x, test_y = problem.test_data
    num_classes = problem.spec.num_classes

    def oracle(key, xs):
        del key
        row = jnp.argmax(jnp.all(xs[:, None, :] == test_x[None], axis=-1), axis=1)  # [n]
        # one-hot true labels as logits, clipped to a large finite value (no -inf)
        return 1e4 * jax.nn.one_hot(test_y[row], num_classes)

    def uniform(key, xs):
        del key
        return jnp.zeros((xs.shape[0], num_classes))

    key = jax.random.key(0)
    zero = evaluate_nll(oracle, problem, key, num_test=200, num_models=4)
    flat = evaluate_nll(uniform, problem, key, num_test=200, num_models=4)
    # float32 rounding of log-mean-exp over 4 equal models only
    assert abs(zero.nll) < 1e-5 and zero.fraction_finite == 1.0
    assert flat.nll == pytest.approx(tau * math.log(num_classes), rel=1e-5)
    assert flat.nll_stderr < 1e-5


def test_trained_logistic_beats_uniform_on_iris():
    problem = make_dataset_problem("iris", num_train=None, seed=0)
    agent = make("logistic", problem.spec, num_steps=300)
    state = fit(agent, jax.random.key(1), problem.train_data, problem.spec)
    result = evaluate_nll(FittedAgent(agent, state), problem, jax.random.key(2), num_test=200, num_models=10)
    assert np.isfinite(result.nll) and result.nll < math.log(3)


# ----------------------------------------------------------------------------
# Validation


@pytest.mark.parametrize(
    "x,y,match",
    [
        (np.zeros(10), np.arange(10) % 2, "shape \\[n, d\\]"),
        (np.zeros((10, 2)), np.arange(9) % 2, "10 rows but y has 9"),
        (np.where(np.eye(10, 2) > 0, np.nan, 1.0), np.arange(10) % 2, "NaN"),
        (np.ones((10, 2)), np.zeros(10), "single class"),
        (np.ones((10, 2)), 1 + np.arange(10) % 2, "labels \\[0\\] are missing"),
        (np.ones((10, 2)), np.arange(10) % 2 - 1, "negative label"),
        (np.ones((10, 2)), np.arange(10) % 2 + 0.5, "integer labels"),
        (np.ones((10, 2)), np.zeros((10, 1)), "shape \\[n\\]"),
    ],
)
def test_invalid_arrays_fail_with_the_reason(x, y, match):
    with pytest.raises(ValueError, match=match):
        make_dataset_problem((x, y))


def test_too_few_examples_per_split_fail():
    # class 0 has 2 examples (1 held out), class 1 has 1 (none held out): a 1-example test split
    with pytest.raises(ValueError, match="test split has 1 example"):
        make_dataset_problem((np.arange(3.0)[:, None], [0, 0, 1]))
    x, y = _unique_data(n=20)
    with pytest.raises(ValueError, match="test split has 1 example"):
        make_dataset_problem((x, y, x[:1], y[:1]))


def test_bad_arguments_name_the_parameter(tmp_path):
    with pytest.raises(ValueError, match="num_train must be at most"):
        make_dataset_problem("iris", num_train=1000)
    with pytest.raises(ValueError, match="num_train"):
        make_dataset_problem("iris", num_train=0)
    with pytest.raises(ValueError, match="split must be one of"):
        make_dataset_problem("iris", split="random")
    with pytest.raises(ValueError, match="dataset must be one of"):
        make_dataset_problem("mnist")
    with pytest.raises(ValueError, match="does not exist"):
        make_dataset_problem(str(tmp_path / "missing.csv"))


def test_csv_and_npz_files(tmp_path):
    x, y = _unique_data(n=30, d=2)
    path = tmp_path / "mine.csv"
    path.write_text("a,b,label\n" + "".join(f"{a},{b},{c}\n" for (a, b), c in zip(x, y)))
    data = load_dataset(str(path))
    assert data.name == "mine" and data.x.shape == (30, 2) and data.num_classes == 3
    np.testing.assert_allclose(data.x, x.astype(np.float32))
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2,0\nnan,3,1\n4,5,1\n")
    with pytest.raises(ValueError, match="NaN"):
        load_dataset(str(bad))
    npz = tmp_path / "mine.npz"
    np.savez(npz, x=x, y=y, x_test=x[:5], y_test=y[:5])
    problem = make_dataset_problem(str(npz), num_train=10, tau=10, kappa=2)
    assert problem.test_data.x.shape == (5, 2) and problem.spec.num_classes == 3


def test_classification_data_repr_names_content():
    x, y = _unique_data()
    a, b = ClassificationData("a", x, y), ClassificationData("a", x, y)
    other = ClassificationData("a", x[::-1], y[::-1])
    assert a.digest() == b.digest() != other.digest()
    assert a.digest()[:12] in repr(a) and "n=60, d=3, C=3" in repr(a)


# ----------------------------------------------------------------------------
# The realdata runner, its CLI and the correlation with the testbed


def test_run_realdata_rows_and_columns():
    frame = run_realdata(
        ["logistic"],
        datasets=("iris",),
        num_train=(10, None, 500),  # 500 > iris's 120 training examples: skipped
        seeds=2,
        num_test=50,
        num_models=5,
        fit_steps=50,
        progress=False,
    )
    assert tuple(frame.columns) == COLUMNS
    assert len(frame) == 2 * 2 * 2  # sizes 10 and full, 2 seeds, 2 designs
    assert set(frame["num_train"]) == {10, 120}
    assert set(zip(frame["tau"], frame["kappa"].fillna(0))) == {(1, 0), (10, 2)}
    assert frame["nll"].notna().all() and (frame["fraction_finite"] == 1.0).all()


def test_cli_testbed_realdata(tmp_path):
    code = cli_main(
        [
            "testbed", "--sweep", "realdata", "--datasets", "iris", "--agents", "logistic",
            "--seeds", "1", "--num-test", "20", "--num-models", "4", "--out", str(tmp_path), "--no-progress",
        ]
    )
    assert code == 0
    frame = pd.read_csv(tmp_path / "realdata.csv")
    assert set(frame["num_train"]) == {10, 100, 120} and set(frame["dataset"]) == {"iris"}


def test_correlate_with_realdata_on_a_monotone_relation():
    agents = ["a", "b", "c", "d"]
    kl = {"a": 0.1, "b": 0.2, "c": 0.4, "d": 0.8}
    testbed = pd.DataFrame(
        [{"agent": a, "tau": t, "kappa": k, "kl": kl[a] * t} for a in agents for t, k in ((1, None), (10, 2))]
    )
    realdata = pd.DataFrame(
        [{"agent": a, "tau": t, "kappa": k, "nll": 1 + kl[a] ** 2 * t} for a in agents for t, k in ((1, None), (10, 2))]
        + [{"agent": "a", "tau": 10, "kappa": 2, "nll": np.nan}]  # a failed row: left out
    )
    result = correlate_with_realdata(testbed, realdata, num_resamples=200)
    assert len(result.table) == 2 and (result.table["num_agents"] == 4).all()
    assert (result.table["spearman"] == 1.0).all()
    assert (result.table["pearson_log"] > 0).all()
    assert len(result.points) == 8 and (result.points["realdata_rows"] == 1).all()


def test_a_header_of_column_numbers_is_refused_as_ambiguous_and_header_decides(tmp_path):
    from decision_bench.data.datasets import load_csv

    path = tmp_path / "numbered.csv"
    pd.DataFrame([[0.5, 1.5, 0], [0.2, 0.1, 1], [0.3, 0.9, 1]]).to_csv(path, index=False)  # header "0,1,2"
    with pytest.raises(ValueError, match=r"numbered.csv.*first row '0,1,2' could be a header .* header=True"):
        load_csv(path)
    with_header = load_csv(path, header=True)
    assert with_header.x.shape == (3, 2) and sorted(set(with_header.y.tolist())) == [0, 1]
    as_data = load_csv(path, header=False)  # the caller's explicit choice: the row is data
    assert as_data.x.shape == (4, 2) and as_data.y.tolist()[0] == 2


def test_a_non_utf8_data_file_is_named(tmp_path):
    from decision_bench.data.datasets import load_csv

    path = tmp_path / "latin1.csv"
    path.write_bytes("x\u00e9,y\n0.1,0\n0.2,1\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.csv' is not UTF-8 text \(byte 1\)"):
        load_csv(path)
