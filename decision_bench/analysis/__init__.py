"""Analysis of testbed and bandit results: joins, correlations, figures, report.

The entry point is `analyze(directory)`; the pieces are public for notebooks.
`read_testbed` and `read_bandit` read and check results files (required and
optional columns: decision_bench.analysis.inputs).
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
from decision_bench.analysis.inputs import (
    BANDIT_REQUIRED,
    TESTBED_REQUIRED,
    check_bandit,
    check_testbed,
    read_bandit,
    read_testbed,
)
from decision_bench.analysis.join import (
    BANDIT_COLUMNS,
    METRICS,
    TESTBED_COLUMNS,
    agent_level_points,
    bandit_final_regret,
    join_regret,
    relative_points,
    run_final_regret,
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
    "BANDIT_REQUIRED",
    "CORRELATION_COLUMNS",
    "CorrelationResult",
    "LEVELS",
    "METRICS",
    "TESTBED_COLUMNS",
    "TESTBED_REQUIRED",
    "agent_level_points",
    "analyze",
    "bandit_final_regret",
    "bootstrap_correlations",
    "check_bandit",
    "check_testbed",
    "correlate",
    "correlation_levels",
    "correlation_table",
    "join_regret",
    "pearson",
    "pearson_log",
    "read_bandit",
    "read_testbed",
    "relative_points",
    "run_final_regret",
    "spearman",
    "testbed_metric_by_seed",
]
