"""The package layout of DESIGN.md: imports only go downward, no module imports a sibling layer."""

from __future__ import annotations

import ast
from pathlib import Path

import decision_bench

PACKAGE = Path(decision_bench.__file__).parent

# Layer of each top-level part (DESIGN.md): a module may import its own part and
# lower layers only. data sits beside envs (envs may use data, not the reverse);
# bandit and evaluation are siblings and never import each other.
LAYERS = {
    "_src": 0,
    "specs": 1,
    "priors": 2,
    "data": 3,
    "envs": 4,
    "agents": 5,
    "bandit": 6,
    "evaluation": 6,
    "experiments": 7,
    "analysis": 8,
    "cli": 9,
}


def _part(module: str) -> str | None:
    """'decision_bench.bandit.loop' -> 'bandit'; None for the package root itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "decision_bench" else None


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import of decision_bench anywhere in the file
    (module level and inside functions: a lazy import is still a dependency)."""
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "decision_bench":
                found += [(node.lineno, f"decision_bench.{a.name}") for a in node.names]
            elif node.module.startswith("decision_bench."):
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("decision_bench.")]
    return found


def _violations() -> list[str]:
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative == Path("__init__.py"):
            continue  # the package's facade re-exports the public API from every layer
        own = relative.parts[0].removesuffix(".py")
        for line, module in _imported_modules(path):
            target = _part(module)
            if target is None or target == own or target == "__version__":
                continue
            if target not in LAYERS or own not in LAYERS:
                problems.append(f"{relative}:{line} imports {module}: a part missing from LAYERS")
            elif LAYERS[target] >= LAYERS[own]:
                problems.append(f"{relative}:{line} ({own}) imports {module} ({target}): not below it")
    return problems


def test_every_part_of_the_package_has_a_layer():
    parts = {p.name.removesuffix(".py") for p in PACKAGE.iterdir()
             if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))}
    assert parts - {"__init__"} == set(LAYERS)


def test_imports_only_go_downward():
    assert _violations() == []


def test_the_layer_check_catches_an_upward_import(tmp_path, monkeypatch):
    """The check itself can fail: an agents module importing the bandit is reported."""
    fake = tmp_path / "decision_bench"
    (fake / "agents").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "agents" / "bad.py").write_text("def f():\n    from decision_bench.bandit import run_bandit\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    assert [p.split(":")[0] for p in _violations()] == [str(Path("agents") / "bad.py")]
