"""scripts/build_docs.py: the API reference covers every public package and builds
without a pdoc warning (`make docs`, run by .ci/run)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("build_docs", ROOT / "scripts" / "build_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reference_covers_every_public_package():
    public = {
        f"decision_bench.{p.parent.name}"
        for p in (ROOT / "decision_bench").glob("*/__init__.py")
        if not p.parent.name.startswith("_")
    }
    assert public <= set(_script().MODULES)


@pytest.mark.slow  # imports the whole package and renders it: seconds of CPU, a minute on busy cores
def test_the_reference_builds_without_warnings_and_a_problem_is_reported(tmp_path):
    pytest.importorskip("pdoc")
    build_docs = _script()
    assert build_docs.build(tmp_path / "api") == []
    assert (tmp_path / "api" / "decision_bench" / "agents.html").read_text().count('id="make"') == 1
    # A module named twice is one of the problems pdoc warns about: the build must say so.
    problems = build_docs.build(tmp_path / "twice", ("decision_bench.specs", "decision_bench.specs"))
    assert any("already been added" in message for message in problems), problems
