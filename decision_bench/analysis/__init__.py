"""Analysis of testbed and bandit results: joins, correlations, figures, report.

The entry point is `analyze(directory)`; the pieces are public for notebooks.
matplotlib (the `plot` extra) is imported only when a figure is drawn.
"""

from decision_bench.analysis.correlation import (
    CorrelationResult,
    bootstrap_correlations,
    correlate,
    pearson,
    pearson_log,
    spearman,
)
from decision_bench.analysis.join import (
    BANDIT_COLUMNS,
    METRICS,
    TESTBED_COLUMNS,
    bandit_final_regret,
    join_regret,
    testbed_metric_by_seed,
)
from decision_bench.analysis.pipeline import CORRELATION_COLUMNS, AnalysisResult, analyze, correlation_table

__all__ = [
    "AnalysisResult",
    "BANDIT_COLUMNS",
    "CORRELATION_COLUMNS",
    "CorrelationResult",
    "METRICS",
    "TESTBED_COLUMNS",
    "analyze",
    "bandit_final_regret",
    "bootstrap_correlations",
    "correlate",
    "correlation_table",
    "join_regret",
    "pearson",
    "pearson_log",
    "spearman",
    "testbed_metric_by_seed",
]
