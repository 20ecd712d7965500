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
    agent_level_points,
    bandit_final_regret,
    join_regret,
    relative_points,
    testbed_metric_by_seed,
)
from decision_bench.analysis.pipeline import (
    CORRELATION_COLUMNS,
    LEVELS,
    AnalysisResult,
    analyze,
    correlation_levels,
    correlation_table,
)

__all__ = [
    "AnalysisResult",
    "BANDIT_COLUMNS",
    "CORRELATION_COLUMNS",
    "CorrelationResult",
    "LEVELS",
    "METRICS",
    "TESTBED_COLUMNS",
    "agent_level_points",
    "analyze",
    "bandit_final_regret",
    "bootstrap_correlations",
    "correlate",
    "correlation_levels",
    "correlation_table",
    "join_regret",
    "pearson",
    "pearson_log",
    "relative_points",
    "spearman",
    "testbed_metric_by_seed",
]
