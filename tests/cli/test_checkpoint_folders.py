"""Each agent of a bandit run has its own checkpoint folder, whatever its name (issue 34, S04, S01)."""

from decision_bench.agents import names as registered
from decision_bench.experiments.bandit_cell import checkpoint_folders


def test_registered_and_plain_names_keep_the_folders_earlier_runs_saved():
    folders = checkpoint_folders(["mlp", "ensemble+", "sgmcmc_quick", "small_mlp"])
    assert folders == {"mlp": "mlp", "ensemble+": "ensemble_plus", "sgmcmc_quick": "sgmcmc_quick",
                       "small_mlp": "small_mlp"}
    every = checkpoint_folders(registered())
    assert not any(folder.startswith("_") for folder in every.values())


def test_names_that_read_alike_get_different_folders():
    names = ["ensemble+", "ensemble_plus", "a b", "a_b", "a,b", "x"]
    folders = checkpoint_folders(names)
    assert len(set(folders.values())) == len(names)
    assert folders["x"] == "x" and folders["ensemble+"].startswith("_ensemble_-")


def test_no_name_leaves_the_checkpoints_folder():
    for name in ("..", ".", "../x", "/abs", "a/b", ".hidden"):
        folder = checkpoint_folders([name])[name]
        assert "/" not in folder and folder not in (".", "..") and folder.startswith("_")
