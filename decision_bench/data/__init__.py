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

__all__ = [
    "BUNDLED",
    "PAPER_DATASETS",
    "SPLITS",
    "ClassificationData",
    "DatasetProblem",
    "load_csv",
    "load_dataset",
    "load_npz",
    "make_dataset_problem",
    "validate_arrays",
]
