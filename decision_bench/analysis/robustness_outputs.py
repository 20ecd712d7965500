"""The robustness part of `analyze`: results of several generative models or bandit dimensions.

When testbed.csv or bandit.csv holds more than one generative family (columns
activation and hidden_sizes, as written by the testbed runner and by
`reproduce`), or bandit.csv more than one input dimension, `analyze` adds:

  DIR/robustness_summary.csv   one row per (group, metric, method): the mean
                               off-diagonal correlation between models with its
                               bootstrap interval over seeds (analysis.robustness)
  DIR/robustness_matrices.csv  the matrices, long: group, metric, method,
                               model_a, model_b, r, ci_low, ci_high
  DIR/robustness_<group>_<metric>_<method>.png   annotated heat maps (paper 000
                               Figs. 10 and 11)
  DIR/regret_by_dimension.csv  regret vs d_KL^10 and d_KL^1 per bandit input
                               dimension (Figs. 16, 17), and the figures
                               fig16_regret_vs_dkl1_by_dim / fig17_regret_vs_dkl10_by_dim
  and a section of report.md with one line per (group, metric).

Groups of models (a model is one family, named e.g. "relu-w50"):
  activation  the families with hidden sizes 50-50 (Fig. 10), if 2 or more;
  width       the relu families (Fig. 11), if 2 or more;
  all         every family, when some family is in neither group.
Metrics: d_KL^1, d_KL^10, d_KL^{10,kappa=2} from the testbed, and regret from
the bandit runs at the input dimension with the most families (ties: the
smallest). Methods: Pearson on log scores and Spearman.

The headline analysis of `analyze` (correlations.csv and Figs. 2-10) then uses
one slice, `main_slice`: the default family relu (50, 50) (or the first family
present) and, for the bandit, that family's smallest input dimension.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from decision_bench.analysis.figures import (
    figure_caption,
    new_figure,
    save_figure,
    agent_colour,
    place_point_labels,
    readable_log_ticks,
)
from decision_bench._src.files import write_results_csv
from decision_bench.analysis.correlation import interval_text
from decision_bench.analysis.join import METRIC_LABELS, agent_level_points, join_regret, metric_rows
from decision_bench.analysis.robustness import (
    CORRELATION_METHODS,
    SCORE_METRICS,
    bootstrap_model_correlations,
    heatmap,
    regret_kl_correlation_by_dimension,
)
from decision_bench.evaluation.sweeps import DEFAULT_ACTIVATION, DEFAULT_HIDDEN_SIZES, hidden_sizes_label

__all__ = [
    "DEFAULT_MODEL",
    "HEATMAP_NAMES",
    "MODEL_GROUPS",
    "RobustnessOutputs",
    "family_label",
    "main_slice",
    "model_groups",
    "needs_robustness",
    "render_robustness",
    "robustness_outputs",
    "with_models",
]

DEFAULT_HIDDEN = hidden_sizes_label(DEFAULT_HIDDEN_SIZES)  # "50-50"
METHOD_NAMES = {"pearson_log": "Pearson (log)", "spearman": "Spearman"}
METRIC_TEXT = {"dkl_1": "d_KL^1", "dkl_10": "d_KL^10", "dkl_10_kappa2": "d_KL^{10,kappa=2}", "regret": "regret"}
MODEL_GROUPS = ("activation", "width", "all")  # model_groups' names, in its order
# Every heat map robustness_outputs can write (it writes .png; .pdf: older versions'):
# the only robustness_* figures an analysis may remove from a results directory.
HEATMAP_NAMES = tuple(
    f"robustness_{group}_{metric}_{method}.{fmt}"
    for group in MODEL_GROUPS for metric in SCORE_METRICS for method in CORRELATION_METHODS for fmt in ("png", "pdf")
)  # fmt: skip
GROUP_TEXT = {
    "activation": "activations at hidden sizes 50-50 (paper 000 Fig. 10)",
    "width": "relu at several widths (paper 000 Fig. 11)",
    "all": "every family",
}
SUMMARY_COLUMNS = (
    "group", "metric", "method", "mean", "mean_low", "mean_high", "level", "num_agents",
    "num_models", "num_seeds", "num_resamples", "num_valid", "models",
)  # fmt: skip
MATRIX_COLUMNS = ("group", "metric", "method", "model_a", "model_b", "r", "ci_low", "ci_high")


def _hidden_text(value) -> str:
    """A hidden_sizes cell as its "50-50" label (a one-layer "50" may have been read as a number)."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def family_label(activation, hidden_sizes) -> str:
    """"relu-w50" for two equal hidden layers of width 50, else e.g. "tanh-10-20"."""
    widths = _hidden_text(hidden_sizes).split("-")
    if len(widths) == 2 and widths[0] == widths[1]:
        return f"{activation}-w{widths[0]}"
    return f"{activation}-{'-'.join(widths)}"


DEFAULT_MODEL = family_label(DEFAULT_ACTIVATION, DEFAULT_HIDDEN)  # "relu-w50"


def with_models(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with a string column `model` (its family) and `_activation`, `_hidden`.

    Rows without the columns activation and hidden_sizes (older results, or a
    bandit.csv written before families) are the default family relu (50, 50);
    rows of a prior with no network (activation empty) are named by their prior.
    """
    n = len(frame)
    activation = frame["activation"] if "activation" in frame.columns else pd.Series(DEFAULT_ACTIVATION, index=frame.index)
    hidden = frame["hidden_sizes"] if "hidden_sizes" in frame.columns else pd.Series(DEFAULT_HIDDEN, index=frame.index)
    prior = frame["prior"].astype(str) if "prior" in frame.columns else pd.Series("mlp", index=frame.index)
    no_net = activation.isna().to_numpy() | hidden.isna().to_numpy()
    act = np.where(no_net, "", activation.astype(str).to_numpy()) if n else np.array([], dtype=object)
    hid = np.array([_hidden_text(v) if not missing else "" for v, missing in zip(hidden, no_net)], dtype=object)
    models = [p if missing else family_label(a, h) for p, a, h, missing in zip(prior, act, hid, no_net)]
    return frame.assign(model=pd.Series(models, index=frame.index, dtype=object), _activation=act, _hidden=hid)


def _dims(bandit: pd.DataFrame) -> list[float]:
    if "input_dim" not in bandit.columns:
        return []
    return sorted(pd.to_numeric(bandit["input_dim"], errors="coerce").dropna().unique().tolist())


def needs_robustness(testbed: pd.DataFrame, bandit: pd.DataFrame) -> bool:
    """True when the results hold more than one family, or bandit runs of more than one input dimension."""
    families = set(with_models(testbed)["model"]) | set(with_models(bandit)["model"])
    return len(families) > 1 or len(_dims(bandit)) > 1


def main_slice(testbed: pd.DataFrame, bandit: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """(testbed, bandit, description) of the headline analysis when `needs_robustness`.

    The testbed rows of the default family relu-w50 (else the first family in the
    table) and the bandit runs of the same family at its smallest input dimension.
    """
    tb, bd = with_models(testbed), with_models(bandit)
    models = list(pd.unique(tb["model"]))
    model = DEFAULT_MODEL if DEFAULT_MODEL in models else models[0]
    tb = testbed[(tb["model"] == model).to_numpy()]
    bd_rows = bandit[(bd["model"] == model).to_numpy()]
    if bd_rows.empty:
        raise ValueError(
            f"bandit.csv has no runs of the generative family {model!r} that the headline analysis uses "
            f"(it has {sorted(set(bd['model']))})"
        )
    text = f"family {model}"
    dims = _dims(bd_rows)
    if dims:
        bd_rows = bd_rows[pd.to_numeric(bd_rows["input_dim"], errors="coerce") == dims[0]]
        text += f", bandit input dimension {dims[0]:g}"
    return tb, bd_rows, text


def model_groups(models: pd.DataFrame) -> dict[str, list[str]]:
    """{group: models} from a frame with columns model, _activation, _hidden (module doc)."""
    meta = models.drop_duplicates("model")
    meta = meta[meta["_activation"] != ""]
    activation, width, every = MODEL_GROUPS
    groups = {
        activation: list(meta.loc[meta["_hidden"] == DEFAULT_HIDDEN, "model"]),
        width: list(meta.loc[meta["_activation"] == DEFAULT_ACTIVATION, "model"]),
    }
    groups = {name: members for name, members in groups.items() if len(members) >= 2}
    covered = {m for members in groups.values() for m in members}
    everything = list(meta["model"])
    if len(everything) >= 2 and not set(everything) <= covered:
        groups[every] = everything
    return groups


def _width_order(models: list[str], frame: pd.DataFrame) -> list[str]:
    """The width group ordered by first hidden width (5, 10, 20, 50, 100), not by appearance."""
    hidden = frame.drop_duplicates("model").set_index("model")["_hidden"]
    return sorted(models, key=lambda m: [int(w) for w in hidden[m].split("-") if w.isdigit()])


@dataclasses.dataclass(frozen=True)
class RobustnessOutputs:
    summary: pd.DataFrame  # SUMMARY_COLUMNS
    matrices: pd.DataFrame  # MATRIX_COLUMNS
    by_dimension: pd.DataFrame  # analysis.robustness.BY_DIMENSION_COLUMNS (empty without 2+ bandit dims)
    regret_dimension: float | None  # the bandit input dimension of the regret matrices
    dimension_matching: bool  # by_dimension used testbed rows of the same input dimension
    figures: tuple[Path, ...]
    notes: tuple[str, ...]


def _regret_rows(bandit: pd.DataFrame) -> tuple[pd.DataFrame, float | None]:
    """The bandit rows at the input dimension with the most families (ties: smallest)."""
    dims = _dims(bandit)
    if not dims:
        return bandit, None
    dim_col = pd.to_numeric(bandit["input_dim"], errors="coerce")
    counts = {d: bandit.loc[dim_col == d, "model"].nunique() for d in dims}
    best = max(dims, key=lambda d: (counts[d], -d))
    return bandit[dim_col == best], best


def robustness_outputs(
    testbed: pd.DataFrame,
    bandit: pd.DataFrame,
    stage: Path,
    num_resamples: int,
    seed: int,
    level: float = 0.90,
    draw_figures: bool = True,
) -> RobustnessOutputs:
    """Computes and writes (into `stage`) the robustness tables and, with
    `draw_figures` (which needs matplotlib), the figures (module doc).

    testbed, bandit: the checked tables (testbed after drop_nonfinite_kl). The
    bootstrap of (group g, metric m, method k) uses default_rng([seed, g, m, k]);
    `level` is the intervals' coverage (0.90, as the rest of the report). A
    group or metric that cannot be computed (fewer than 2 agents or models with
    scores) is left out with a note, never an error.
    """
    stage = Path(stage)
    tb, bd = with_models(testbed), with_models(bandit)
    regret_rows, regret_dim = _regret_rows(bd)
    notes: list[str] = []
    figures: list[Path] = []
    summary, matrices = [], []
    meta = pd.concat([tb[["model", "_activation", "_hidden"]], bd[["model", "_activation", "_hidden"]]])
    groups = model_groups(meta)
    if not groups:
        notes.append("robustness: fewer than 2 generative families; no model-by-model correlations")
    for g, (group, members) in enumerate(groups.items()):
        if group == "width":
            members = _width_order(members, meta)
        for m, metric in enumerate(SCORE_METRICS):
            source = regret_rows if metric == "regret" else tb
            rows = source[source["model"].isin(members)]
            present = [x for x in members if x in set(rows["model"])]
            if len(present) < 2:
                if metric == "regret" or not rows.empty:
                    notes.append(f"robustness ({group}, {METRIC_TEXT[metric]}): fewer than 2 models with results")
                continue
            if metric != "regret" and metric_rows(rows, metric).empty:
                continue  # a metric the testbed did not measure (e.g. no dyadic design)
            # models in the group's order (widths ascending), whatever the rows' order
            rows = rows.iloc[np.argsort([present.index(x) for x in rows["model"]], kind="stable")]
            for k, method in enumerate(CORRELATION_METHODS):
                rng = np.random.default_rng([seed, g, m, k])
                try:
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always", RuntimeWarning)
                        result = bootstrap_model_correlations(rows, metric, method, num_resamples, rng, level)
                except ValueError as err:
                    notes.append(f"robustness ({group}, {METRIC_TEXT[metric]}, {method}): left out: {err}")
                    continue
                notes += [f"robustness ({group}, {METRIC_TEXT[metric]}, {method}): {w.message}" for w in caught]
                summary.append({"group": group, **result.summary(), "models": " ".join(result.point.columns)})
                labels = list(result.point.columns)
                for a in labels:
                    for b in labels:
                        matrices.append({
                            "group": group, "metric": metric, "method": method, "model_a": a, "model_b": b,
                            "r": result.point.at[a, b], "ci_low": result.low.at[a, b], "ci_high": result.high.at[a, b],
                        })  # fmt: skip
                title = (
                    f"{METRIC_TEXT[metric]}, {METHOD_NAMES[method]} across agents ({result.num_agents} agents, "
                    f"{result.num_seeds} seeds)\nmean off-diagonal {result.mean:.2f} "
                    f"[{result.mean_low:.2f}, {result.mean_high:.2f}], {int(100 * level)}% bootstrap"
                )
                path = stage / f"robustness_{group}_{metric}_{method}.png"
                if not draw_figures:
                    continue
                try:
                    figures.append(heatmap(result.point, title, path, result.low, result.high))
                except ImportError as err:
                    notes.append(f"robustness heat maps skipped: {err}")
    by_dim, matching = _by_dimension(tb, bd, num_resamples, seed, notes)
    if not by_dim.empty and draw_figures:
        figures += _plot_by_dimension(tb, bd, by_dim, stage, matching, notes)
    tables = {
        "robustness_summary.csv": pd.DataFrame(summary, columns=list(SUMMARY_COLUMNS)),
        "robustness_matrices.csv": pd.DataFrame(matrices, columns=list(MATRIX_COLUMNS)),
    }
    if not by_dim.empty:
        tables["regret_by_dimension.csv"] = by_dim
    for name, frame in tables.items():
        write_results_csv(stage / name, frame)
    return RobustnessOutputs(
        summary=tables["robustness_summary.csv"],
        matrices=tables["robustness_matrices.csv"],
        by_dimension=by_dim,
        regret_dimension=regret_dim,
        dimension_matching=matching,
        figures=tuple(figures),
        notes=tuple(dict.fromkeys(notes)),
    )


def _default_family(tb: pd.DataFrame, bd: pd.DataFrame) -> str | None:
    models = list(pd.unique(tb["model"]))
    if not models:
        return None
    return DEFAULT_MODEL if DEFAULT_MODEL in models else models[0]


def _by_dimension(tb, bd, num_resamples, seed, notes) -> tuple[pd.DataFrame, bool]:
    """Figs. 16-17 on the headline family, when its bandit runs span 2+ input dimensions."""
    model = _default_family(tb, bd)
    tb_m, bd_m = tb[tb["model"] == model], bd[bd["model"] == model]
    dims = _dims(bd_m)
    if len(dims) < 2:
        return pd.DataFrame(), True
    tb_dims = set(_dims(tb_m)) if "input_dim" in tb_m.columns else set()
    matching = set(dims) <= tb_dims
    if not matching:
        notes.append(
            f"regret by bandit dimension: the testbed has no rows at input dimensions "
            f"{sorted(set(dims) - tb_dims)}, so every bandit dimension is correlated with all testbed rows "
            f"of {model} (as paper 000's Figs. 16-17 use its 2-D testbed)"
        )
    drop = ["model", "_activation", "_hidden"]
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            table = regret_kl_correlation_by_dimension(
                tb_m.drop(columns=drop), bd_m.drop(columns=drop), ("dkl_10", "dkl_1"),
                num_resamples=num_resamples, seed=seed, match_dimension=matching,
            )  # fmt: skip
    except ValueError as err:
        notes.append(f"regret by bandit dimension: left out: {err}")
        return pd.DataFrame(), matching
    notes += [f"regret by bandit dimension: {w.message}" for w in caught]
    return table, matching


def _plot_by_dimension(tb, bd, table, stage, matching, notes) -> list[Path]:
    """Figs. 16 (d_KL^1) and 17 (d_KL^10): agent mean regret against agent mean d_KL, one panel per dimension."""
    model = _default_family(tb, bd)
    tb_m, bd_m = tb[tb["model"] == model], bd[bd["model"] == model]
    dims = sorted(table["input_dim"].unique())
    paths: list[Path] = []
    for metric, stem in (("dkl_1", "fig16_regret_vs_dkl1_by_dim"), ("dkl_10", "fig17_regret_vs_dkl10_by_dim")):
        try:
            fig, axes = new_figure(4.0 * len(dims), 3.6, ncols=len(dims))
        except ImportError as err:
            notes.append(f"figures of regret by dimension skipped: {err}")
            return paths
        labelled = []
        for ax, dim in zip(axes, dims):
            tb_d = tb_m[pd.to_numeric(tb_m["input_dim"], errors="coerce") == dim] if matching else tb_m
            bd_d = bd_m[pd.to_numeric(bd_m["input_dim"], errors="coerce") == dim]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # reported by the table's computation
                points = agent_level_points(tb_d, join_regret(tb_d, bd_d, [metric]))
            points = points[(points["kl"] > 0) & (points["regret"] > 0)]
            ax.scatter(points["kl"], points["regret"], s=22, color=[agent_colour(a) for a in points["agent"]], zorder=3)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.margins(0.12)  # room for the labels of the outermost points
            row = table[(table["input_dim"] == dim) & (table["metric"] == metric)]
            title = f"bandit d = {dim:g}"
            if not row.empty:
                r = row.iloc[0]
                title += (
                    f"\nPearson (log) {interval_text(r.pearson_log, r.pearson_ci_low, r.pearson_ci_high, 2)}, "
                    f"n={int(r.n)}"
                )
            ax.set_title(title, fontsize=8)
            ax.set_xlabel(f"agent mean testbed {METRIC_LABELS[metric]}")
            ax.set_ylabel("agent mean bandit regret")
            labelled.append((ax, points))
        figure_caption(
            fig,
            "Each point: one agent at one bandit input dimension d: its mean testbed d_KL against its mean final "
            "bandit regret over seeds; no error bars. Brackets: 90% percentile-bootstrap intervals over the agents.",
            4.0 * len(dims),
        )
        readable_log_ticks(*axes)
        for i, (ax, points) in enumerate(labelled):
            place_point_labels(ax, points["kl"].to_numpy(float), points["regret"].to_numpy(float), points["agent"],
                               draw=i == 0)  # fmt: skip
        paths += save_figure(fig, stage, stem)
    return paths


def _fmt(value: float) -> str:
    return "nan" if not np.isfinite(value) else f"{value:.2f}"


def render_robustness(result: RobustnessOutputs) -> list[str]:
    """The report section: one line per (group, metric) with both methods, then the by-dimension rows."""
    lines = ["## Robustness across generative models (paper 000 Sec. 6, Figs. 10-11)", ""]
    if result.summary.empty:
        lines += ["No model-by-model correlation could be computed (see the data notes).", ""]
    else:
        level = int(round(100 * float(result.summary["level"].iloc[0])))
        lines += [
            "For each metric, every agent gets one score per generative model (mean over settings of the mean "
            "over seeds); the correlation between two models is that of the agents' score vectors. Each line "
            f"gives the mean off-diagonal correlation with its {level}% bootstrap interval (seeds resampled "
            "jointly for every agent and model). The paper finds high correlations for the joint d_KL^10 and "
            "regret, and lower ones, possibly negative, for the marginal d_KL^1.",
            "",
        ]
        if result.regret_dimension is not None:
            lines += [f"Regret scores are the bandit runs at input dimension {result.regret_dimension:g}.", ""]
        for group, rows in result.summary.groupby("group", sort=False):
            first = rows.iloc[0]
            lines.append(f"**{GROUP_TEXT.get(group, group)}** (models: {first['models'].replace(' ', ', ')}):")
            lines.append("")
            for metric, by_metric in rows.groupby("metric", sort=False):
                parts = [
                    f"{METHOD_NAMES[r['method']]} {interval_text(r['mean'], r['mean_low'], r['mean_high'], 2)}"
                    for _, r in by_metric.iterrows()
                ]
                r0 = by_metric.iloc[0]
                lines.append(
                    f"- {METRIC_TEXT[metric]}: mean off-diagonal correlation " + "; ".join(parts)
                    + f" ({int(r0['num_models'])} models, {int(r0['num_agents'])} agents, {int(r0['num_seeds'])} seeds)."
                )
            lines.append("")
    if not result.by_dimension.empty:
        basis = (
            "testbed rows of the same input dimension"
            if result.dimension_matching
            else "all testbed rows (the testbed lacks some of the bandit dimensions)"
        )
        lines += [
            "## Regret against d_KL by bandit input dimension (paper 000 Figs. 16-17)",
            "",
            f"Agent points: agent mean final regret at each bandit dimension against its mean d_KL over {basis}; "
            f"{int(round(100 * float(result.by_dimension['ci_level'].iloc[0])))}% bootstrap intervals over agents.",
            "",
        ]
        for _, r in result.by_dimension.iterrows():
            lines.append(
                f"- d = {r['input_dim']:g}, {METRIC_TEXT[r['metric']]}: Pearson (log) "
                f"{interval_text(r['pearson_log'], r['pearson_ci_low'], r['pearson_ci_high'], 2)}, Spearman "
                f"{interval_text(r['spearman'], r['spearman_ci_low'], r['spearman_ci_high'], 2)}, n = {int(r['n'])}."
            )
        lines.append("")
    return lines
