"""Each agent of a bandit run has its own checkpoint folder, whatever its name (issue 34, S04, S01)."""

from decision_bench.cli.bandit import _safe_name


def test_registered_names_keep_the_folders_earlier_runs_saved():
    assert _safe_name("mlp") == "mlp"
    assert _safe_name("ensemble+") == "ensemble_plus"
    assert _safe_name("sgmcmc-quick") == "sgmcmc-quick"


def test_names_that_read_alike_get_different_folders():
    names = ["ensemble+", "ensemble_plus", "a b", "a_b", "a,b", "_plus", "x"]
    folders = [_safe_name(n) for n in names]
    assert len(set(folders)) == len(names)


def test_no_name_leaves_the_checkpoints_folder():
    for name in ("..", ".", "../x", "/abs", "a/b", ".hidden"):
        folder = _safe_name(name)
        assert "/" not in folder and folder not in (".", "..") and folder.startswith("_")
