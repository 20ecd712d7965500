"""scripts/build_docs.py: the API reference covers every public package and builds
without a pdoc warning (`make docs`, run by .ci/run)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_reference_covers_every_public_package(load_script):
    public = {
        f"decision_bench.{p.parent.name}"
        for p in (ROOT / "decision_bench").glob("*/__init__.py")
        if not p.parent.name.startswith("_")
    }
    assert public <= set(load_script("build_docs").MODULES)


@pytest.mark.slow  # imports the whole package and renders it: seconds of CPU, a minute on busy cores
def test_the_reference_builds_without_warnings_and_a_problem_is_reported(tmp_path, load_script):
    pytest.importorskip("pdoc")
    build_docs = load_script("build_docs")
    assert build_docs.build(tmp_path / "api") == []
    assert (tmp_path / "api" / "decision_bench" / "agents.html").read_text().count('id="make"') == 1
    # A module named twice is one of the problems pdoc warns about: the build must say so.
    problems = build_docs.build(tmp_path / "twice", ("decision_bench.specs", "decision_bench.specs"))
    assert any("already been added" in message for message in problems), problems
