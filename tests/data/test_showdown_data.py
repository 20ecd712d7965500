"""load_showdown on small files the tests write, in each data set's own format
(no downloads): the Showdown's preprocessing, checked fact by fact."""

import re
from pathlib import Path

import numpy as np
import pytest

from decision_bench.data import SHOWDOWN_DATASETS, load_showdown

MUSHROOM_ROWS = [
    "e,x,s,n,t",
    "p,x,y,w,f",
    "e,b,s,w,t",
    "p,f,y,n,f",
]


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_mushroom_one_hot_contexts_and_eat_rewards(tmp_path):
    path = _write(tmp_path, "agaricus-lepiota.data", "\n".join(MUSHROOM_ROWS) + "\n")
    data = load_showdown("mushroom", path, num_contexts=4000, seed=1)
    # one-hot of 4 attribute columns with 3, 2, 2, 2 values; the class's 2 columns dropped
    assert data.contexts.shape == (4000, 9) and data.num_actions == 2
    assert set(np.unique(data.contexts)) == {0.0, 1.0}
    assert (data.contexts.sum(axis=1) == 4).all()  # one value per attribute
    # Which rows are poisonous: attribute 2 is 'y' exactly for them.
    poisonous = data.contexts[:, 4] == 1.0  # columns: x1 b,f,x | x2 s,y | ...
    assert poisonous.any() and (~poisonous).any()
    assert (data.rewards[:, 0] == 0).all() and (data.expected_rewards[:, 0] == 0).all()
    assert (data.rewards[~poisonous, 1] == 5).all() and (data.expected_rewards[~poisonous, 1] == 5).all()
    assert set(np.unique(data.rewards[poisonous, 1])) == {-35.0, 5.0}
    assert (data.expected_rewards[poisonous, 1] == -15).all()
    harmed = (data.rewards[poisonous, 1] == -35).mean()
    n = int(poisonous.sum())
    assert abs(harmed - 0.5) <= 5 * np.sqrt(0.25 / n)
    # do not eat a poisonous mushroom, eat an edible one
    np.testing.assert_array_equal(data.optimal_actions, (~poisonous).astype(np.int32))
    np.testing.assert_array_equal(data.regret(np.ones(4000, np.int64)), np.where(poisonous, 15.0, 0.0))


def test_statlog_labels_and_standardised_contexts(tmp_path):
    rows = [f"{i} {2 * i + 1} 7 {1 + i % 7}" for i in range(21)]  # column 3 is constant
    data = load_showdown("statlog", _write(tmp_path, "shuttle.trn", "\n".join(rows)), seed=0)
    assert data.contexts.shape == (21, 3) and data.num_actions == 7
    np.testing.assert_allclose(data.contexts.mean(axis=0), 0.0, atol=1e-6)
    np.testing.assert_allclose(data.contexts[:, :2].std(axis=0), 1.0, rtol=1e-5)
    assert (data.contexts[:, 2] == 0).all()  # std 0 -> divided by 1
    # a shuffled order, the same rows: the label is the first column mod 7 (0-based)
    first = data.contexts[:, 0] * np.arange(21).std() + 10
    np.testing.assert_array_equal(data.labels, np.round(first).astype(int) % 7)
    np.testing.assert_array_equal(data.rewards, np.eye(7)[data.labels])
    np.testing.assert_array_equal(data.optimal_actions, data.labels)
    assert data.as_classification().num_classes == 7


def test_covertype_keeps_the_first_row_of_a_headerless_file(tmp_path):
    rows = [f"{i},{i % 3},{(i * 7) % 5},{1 + i % 7}" for i in range(14)]
    path = _write(tmp_path, "covtype.data", "\n".join(rows))
    assert load_showdown("covertype", path).contexts.shape == (14, 3)
    assert load_showdown("covertype", path, header=True).contexts.shape == (13, 3)
    assert load_showdown("covertype", path, num_contexts=5).labels.shape == (5,)


def test_adult_drops_missing_rows_labels_occupation_and_one_hot_encodes(tmp_path):
    occupations = ["Sales", "Exec-managerial", "Tech-support", "Sales"]
    rows = []
    for i, occupation in enumerate(occupations):
        rows.append(
            f"{30 + i}, Private, {1000 + i}, Bachelors, 13, Never-married, {occupation}, Husband, White, "
            f"{'Male' if i % 2 else 'Female'}, 0, 0, 40, United-States, <=50K"
        )
    rows.append("50, ?, 2000, HS-grad, 9, Divorced, Sales, Wife, Black, Female, 0, 0, 40, Cuba, >50K")
    data = load_showdown("adult", _write(tmp_path, "adult.data", "\n".join(rows)), shuffle=False)
    assert len(data.labels) == 4  # the row with a '?' is dropped
    # sorted category codes: Exec-managerial 0, Sales 1, Tech-support 2
    np.testing.assert_array_equal(data.labels, [1, 0, 2, 1])
    assert data.num_actions == 14
    # 6 numeric columns + one-hot of the 8 categorical ones (1 value each but sex: 2)
    assert data.contexts.shape == (4, 6 + 7 + 2)


def test_census_drops_the_key_and_one_hot_encodes_every_column(tmp_path):
    header = "caseid,dAge,dOccup,iSex"
    rows = [f"{10000 + i},{i % 3},{i % 4},{i % 2}" for i in range(12)]
    data = load_showdown("census", _write(tmp_path, "USCensus1990.data.txt", "\n".join([header] + rows)))
    assert data.contexts.shape == (12, 3 + 2) and data.num_actions == 9
    assert sorted(np.unique(data.labels).tolist()) == [0, 1, 2, 3]


def test_jester_context_and_rewards_are_a_column_shuffle_of_the_ratings(tmp_path):
    rng = np.random.default_rng(0)
    ratings = np.round(rng.uniform(-10, 10, (6, 40)), 2)
    path = _write(tmp_path, "jester.csv", "\n".join(",".join(f"{v:g}" for v in row) for row in ratings))
    data = load_showdown("jester", path, shuffle=False)
    assert data.contexts.shape == (6, 32) and data.rewards.shape == (6, 8)
    joined = np.concatenate([data.contexts, data.rewards], axis=1)
    np.testing.assert_allclose(np.sort(joined, axis=1), np.sort(ratings, axis=1).astype(np.float32))
    np.testing.assert_array_equal(data.rewards, data.expected_rewards)  # ratings are deterministic
    bad = _write(tmp_path, "short.csv", "1,2,3\n4,5,6\n")
    with pytest.raises(ValueError, match="needs 40 rating columns"):
        load_showdown("jester", bad)


def test_financial_rewards_are_unit_norm_linear_plus_per_arm_noise(tmp_path):
    rng = np.random.default_rng(1)
    rows = rng.normal(size=(3000, 21))
    text = "header line\n" + "\n".join(" ".join(f"{v:.6f}" for v in row) for row in rows)
    data = load_showdown("financial", _write(tmp_path, "raw_stock_contexts", text), num_contexts=3000, seed=3)
    x = data.contexts.astype(np.float64)
    betas, *_ = np.linalg.lstsq(x, data.expected_rewards.astype(np.float64), rcond=None)
    np.testing.assert_allclose(np.linalg.norm(betas, axis=0), 1.0, rtol=1e-4)
    np.testing.assert_allclose(x @ betas, data.expected_rewards, atol=1e-4)
    noise = data.rewards.astype(np.float64) - data.expected_rewards
    sigma = 0.01 * np.arange(1, 9)
    n = len(noise)
    assert (np.abs(noise.var(axis=0, ddof=1) - sigma**2) <= 5 * sigma**2 * np.sqrt(2 / (n - 1)) + 1e-8).all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(name="mnist"), "name must be one of"),
        (dict(name="statlog", path="missing.txt"), "statlog file 'missing.txt' does not exist"),
        (dict(name="statlog", num_contexts=0), "num_contexts must be an integer >= 1"),
        (dict(name="statlog", seed=-1), "seed"),
    ],
)
def test_bad_arguments_are_one_line_errors(tmp_path, kwargs, message):
    kwargs = {"path": tmp_path / "shuttle.trn", **kwargs}
    (tmp_path / "shuttle.trn").write_text("1 2 3\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message) as error:
        load_showdown(**kwargs)
    assert "\n" not in str(error.value)


def test_every_dataset_of_the_paper_is_named():
    assert set(SHOWDOWN_DATASETS) == {"mushroom", "statlog", "covertype", "financial", "jester", "adult", "census"}


DOCS = Path(__file__).resolve().parents[2] / "docs" / "showdown.md"


def _docs_snippets():
    return re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.S)


def test_docs_gymnasium_snippet_runs(capsys):
    snippet = next(s for s in _docs_snippets() if "gym.make(" in s)
    exec(compile(snippet, str(DOCS), "exec"), {})
    reward, regret = capsys.readouterr().out.split()
    assert abs(float(reward) - 1.2) < 0.1 and float(regret) in (0.0, pytest.approx(48.8, abs=1e-4))


@pytest.mark.slow
def test_every_docs_snippet_runs_on_small_files_in_each_format(tmp_path, monkeypatch):
    """The recipe as written, in a folder holding tiny copies of the files it names."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agaricus-lepiota.data").write_text("\n".join(MUSHROOM_ROWS) + "\n", encoding="utf-8")
    shuttle = [f"{i} {(3 * i) % 11} {i % 5} {1 + i % 7}" for i in range(70)]
    (tmp_path / "shuttle.trn").write_text("\n".join(shuttle) + "\n", encoding="utf-8")
    snippets = _docs_snippets()
    assert len(snippets) == 3
    for snippet in snippets:
        exec(compile(snippet, str(DOCS), "exec"), {})
