"""Figures fit for a paper: fixed agent colours, tick labels and point labels that do
not overprint, captions that say what the error bars are, titles that describe the data.

Each figure is drawn by the package's own function and captured before saving; the
checks measure the rendered text (fig.canvas.draw(), get_window_extent), so they
test what a reader sees, not which locator was chosen.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")

from decision_bench import agents as agent_registry
from decision_bench.analysis import figures
from decision_bench.analysis.correlation import CorrelationResult

RESULT = CorrelationResult(0.5, 0.1, 0.8, 0.4, 0.0, 0.7, 7)


@pytest.fixture
def captured(monkeypatch):
    """The figures the plotting functions would save, in order (nothing is written)."""
    drawn = []

    def keep(fig, directory, stem):
        drawn.append(fig)
        return [stem]

    monkeypatch.setattr(figures, "save_figure", keep)
    return drawn


def _visible_tick_labels(axis, ax, renderer):
    """(text, window box) of the tick labels the reader sees on `axis`: non-empty, visible,
    centred within the axes' extent along that axis."""
    frame = ax.get_window_extent(renderer)
    shown = []
    for label in axis.get_ticklabels(which="both"):
        if not (label.get_visible() and label.get_text()):
            continue
        box = label.get_window_extent(renderer)
        centre = (box.x0 + box.x1) / 2 if axis is ax.xaxis else (box.y0 + box.y1) / 2
        low, high = (frame.x0, frame.x1) if axis is ax.xaxis else (frame.y0, frame.y1)
        if low - 1 <= centre <= high + 1:
            shown.append((label.get_text(), box))
    return shown


def _overlapping_pairs(boxes):
    return [(a, b) for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2) if box_a.overlaps(box_b)]


# ----------------------------------------------------------------------------- colours


def test_every_registered_agent_has_its_own_fixed_colour():
    names = agent_registry.names()
    assert set(names) <= set(figures.AGENT_COLOURS), sorted(set(names) - set(figures.AGENT_COLOURS))
    colours = [figures.agent_colour(name) for name in names]
    assert len(set(colours)) == len(colours)
    assert figures.agent_colour("mlp") == figures.AGENT_COLOURS["mlp"]


def test_a_custom_agents_colour_depends_on_its_name_only():
    colour = figures.agent_colour("my_ensemble")
    assert colour == figures.agent_colour("my_ensemble")
    assert colour.startswith("#") and len(colour) == 7
    assert colour not in figures.AGENT_COLOURS.values()
    assert len({figures.agent_colour(f"custom_{i}") for i in range(20)}) == 20


@pytest.mark.slow  # a fresh interpreter imports the package (jax): seconds
def test_a_custom_agents_colour_is_the_same_in_another_process():
    colour = figures.agent_colour("my_ensemble")
    # Another process with another string-hash salt gets the same colour.
    code = "from decision_bench.analysis.figures import agent_colour; print(agent_colour('my_ensemble'))"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert other.stdout.strip() == colour


def _bandit_rows(agents):
    rows = []
    for i, agent in enumerate(agents):
        for seed in (0, 1):
            for step in (10, 20):
                rows.append(dict(agent=agent, seed=seed, step=step, cumulative_regret=(i + 1) * step + seed,
                                 final_regret=(i + 1) * 20 + seed, error=""))  # fmt: skip
    return pd.DataFrame(rows)


def test_colours_are_the_same_whatever_agents_a_run_has_and_their_order(captured, tmp_path):
    figures.plot_regret_curves(_bandit_rows(["mlp", "ensemble", "my_agent"]), tmp_path)
    figures.plot_regret_curves(_bandit_rows(["my_agent", "bbb", "mlp"]), tmp_path)
    by_run = []
    for fig in captured:
        (ax,) = fig.axes
        by_run.append({line.get_label(): line.get_color() for line in ax.get_lines()})
    for run in by_run:
        assert run == {agent: figures.agent_colour(agent) for agent in run}
    assert by_run[0]["mlp"] == by_run[1]["mlp"] and by_run[0]["my_agent"] == by_run[1]["my_agent"]


# ----------------------------------------------------------------------------- log ticks


def test_the_overlap_check_detects_matplotlibs_default_labels_on_a_short_log_axis():
    """The bug the issue shows (3x10^-3 4x10^-3 6x10^-3): proof that the check below can fail."""
    fig, (ax,) = figures.new_figure(5.0, 4.0)
    ax.scatter([0.0029, 0.03], [1.0, 2.0])
    ax.set_xscale("log")
    fig.canvas.draw()
    assert _overlapping_pairs(_visible_tick_labels(ax.xaxis, ax, fig.canvas.get_renderer()))


@pytest.mark.parametrize(
    "kl_range, regret_range",
    [((0.0029, 0.0085), (120.0, 900.0)), ((0.0029, 0.03), (1.0, 2.0)), ((0.029, 0.9), (0.05, 2000.0)), ((0.2, 0.34), (40.0, 1000.0)),
     ((1e-5, 3.0), (1e-3, 1e6))],
)  # fmt: skip
def test_log_axis_tick_labels_do_not_overlap(captured, tmp_path, kl_range, regret_range):
    rng = np.random.default_rng(0)
    kl = np.geomspace(*kl_range, 12)
    regret = np.geomspace(*regret_range, 12)[rng.permutation(12)]
    joined = pd.DataFrame({"metric": "dkl_10", "agent": np.repeat(["mlp", "ensemble", "bbb"], 4),
                           "seed": np.tile(range(4), 3), "kl": kl, "regret": regret})  # fmt: skip
    figures.plot_regret_vs_kl(joined, "dkl_10", RESULT, tmp_path, "fig9")
    (fig,) = captured
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    for axis in (ax.xaxis, ax.yaxis):
        labels = _visible_tick_labels(axis, ax, renderer)
        assert len(labels) >= 2, [text for text, _ in labels]
        assert not _overlapping_pairs(labels), [text for text, _ in labels]


# ----------------------------------------------------------------------------- point labels


def test_agent_labels_in_fig10_do_not_overlap(captured, tmp_path):
    # bbb and dropout nearly on top of each other (the demo's dyadic panel), mlp close by.
    points = {"mlp": (0.240, 914.0), "bbb": (0.231, 566.0), "dropout": (0.233, 609.0), "ensemble": (0.244, 46.7),
              "ensemble+": (0.196, 90.3), "epinet": (0.256, 82.3), "hypermodel": (0.201, 81.2)}  # fmt: skip
    agents = pd.DataFrame(
        [{"metric": m, "agent": a, "kl": kl, "regret": r} for m in ("dkl_10", "dkl_1") for a, (kl, r) in points.items()]
    )
    figures.plot_agent_regret_vs_kl(agents, {"dkl_10": RESULT, "dkl_1": RESULT}, tmp_path)
    (fig,) = captured
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        labels = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts]
        assert sorted(text for text, _ in labels) == sorted(points)
        assert not _overlapping_pairs(labels), _overlapping_pairs(labels)
        frame = ax.get_window_extent(renderer)
        assert all(frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1 for _, b in labels)


def test_point_labels_avoid_each_other_even_on_identical_points():
    fig, (ax,) = figures.new_figure(4.0, 3.0)
    ax.scatter([1.0, 1.0, 1.0, 2.0], [1.0, 1.0, 1.0, 2.0])
    ax.set_xlim(0, 3)
    ax.set_ylim(0, 3)
    notes = figures.place_point_labels(ax, [1.0, 1.0, 1.0, 2.0], [1.0, 1.0, 1.0, 2.0], ["a", "bb", "ccc", "d"])
    fig.canvas.draw()
    boxes = [(n.get_text(), n.get_window_extent(fig.canvas.get_renderer())) for n in notes]
    assert not _overlapping_pairs(boxes)


# ----------------------------------------------------------------------------- captions and titles


def _testbed_rows(num_trains):
    rows = []
    for agent, num_train, seed, tau in itertools.product(("mlp", "ensemble", "ensemble+"), num_trains, (0, 1), (1, 10)):
        rows.append(dict(agent=agent, input_dim=2, num_train=num_train, temperature=0.1, seed=seed, tau=tau,
                         kappa=np.nan, kl=0.01 * tau * (1 + seed) * (2 if agent == "mlp" else 1)))  # fmt: skip
    return pd.DataFrame(rows)


def test_every_figure_says_what_its_marks_and_error_bars_are(captured, tmp_path):
    testbed = _testbed_rows((10, 100))
    joined = pd.DataFrame({"metric": "dkl_10", "agent": ["mlp", "mlp", "bbb", "bbb"], "seed": [0, 1, 0, 1],
                           "kl": [0.1, 0.2, 0.3, 0.4], "regret": [1.0, 2.0, 3.0, 5.0]})  # fmt: skip
    agents = joined.groupby(["metric", "agent"], as_index=False)[["kl", "regret"]].mean()
    figures.plot_normalised_kl(testbed, tmp_path)
    figures.plot_prior_functions(testbed, tmp_path)
    figures.plot_regret_curves(_bandit_rows(["mlp", "bbb"]), tmp_path)
    figures.plot_regret_vs_kl(joined, "dkl_10", RESULT, tmp_path, "fig9")
    figures.plot_agent_regret_vs_kl(agents, {"dkl_10": RESULT}, tmp_path)
    captions = [fig.get_supxlabel() for fig in captured]
    assert len(captions) == 5
    for caption in captions[:3]:  # bars, points with error bars, bands
        assert "\u00b11 standard error" in caption.replace("\n", " ")
    for caption in captions[3:]:  # scatter plots: no error bars, bootstrap intervals in the title
        text = caption.replace("\n", " ")
        assert "no error bars" in text and "90% percentile-bootstrap" in text


def test_fig5_with_one_training_set_size_compares_the_agents_at_that_size(captured, tmp_path):
    figures.plot_prior_functions(_testbed_rows((100,)), tmp_path)
    (fig,) = captured
    for ax in fig.axes:
        assert ax.get_xscale() == "linear"
        assert [t.get_text() for t in ax.get_xticklabels()] == ["ensemble", "ensemble+"]
        assert "T = 100" in ax.get_title()
        assert len(ax.containers) == 2  # one point with its error bar per agent
    assert "one training-set size" in fig.get_supxlabel().replace("\n", " ")
    captured.clear()
    figures.plot_prior_functions(_testbed_rows((10, 100)), tmp_path)
    assert all(ax.get_xscale() == "log" for ax in captured[0].axes)


def test_titles_name_a_data_set_and_its_real_dimension():
    iris = {"env": "ClassificationBandit-v0", "dataset": "iris", "input_dim": 15, "num_actions": 3, "temperature": 1.0}
    assert figures.setting_title(iris) == "ClassificationBandit-v0: iris (4 features, 3 classes)"
    neural = {"env": "NeuralBandit-v0", "input_dim": 2, "num_actions": 40, "temperature": 0.1}
    assert figures.setting_title(neural) == "NeuralBandit-v0, d=2, N=40, beta=0.1"


def test_the_bandit_commands_figure_is_titled_with_the_data_set(monkeypatch, tmp_path):
    from decision_bench.analysis.figures import plot_regret

    drawn = []
    original = figures.new_figure
    monkeypatch.setattr(figures, "new_figure", lambda *a, **k: drawn.append(original(*a, **k)) or drawn[-1])
    rows = _bandit_rows(["mlp", "logistic"]).assign(
        env="ClassificationBandit-v0", dataset="iris", input_dim=15, num_actions=3, temperature=1.0
    )
    plot_regret(rows, tmp_path / "bandit_regret.png")
    ((fig, (ax,)),) = drawn
    assert ax.get_title() == "ClassificationBandit-v0: iris (4 features, 3 classes), 2 seeds"
    assert "d=15" not in ax.get_title() and "beta" not in ax.get_title()
    assert {line.get_label(): line.get_color() for line in ax.get_lines()} == {
        "mlp": figures.agent_colour("mlp"), "logistic": figures.agent_colour("logistic")}  # fmt: skip
    assert (tmp_path / "bandit_regret.png").stat().st_size > 0
