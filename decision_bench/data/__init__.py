"""Real classification data sets: loading, validation and seeded splits (no scoring here;
see ``decision_bench.evaluation.realdata``). Sits beside ``envs``: it imports nothing
above ``priors``."""

from decision_bench.data.datasets import (
    BUNDLED,
    PAPER_DATASETS,
    SPLITS,
    ClassificationData,
    DatasetProblem,
    load_csv,
    load_dataset,
    load_npz,
    make_dataset_problem,
    validate_arrays,
)
from decision_bench.data.showdown import SHOWDOWN_DATASETS, ShowdownData, load_showdown

__all__ = [
    "BUNDLED",
    "PAPER_DATASETS",
    "SHOWDOWN_DATASETS",
    "SPLITS",
    "ShowdownData",
    "ClassificationData",
    "DatasetProblem",
    "load_csv",
    "load_dataset",
    "load_npz",
    "load_showdown",
    "make_dataset_problem",
    "validate_arrays",
]
