"""The text an agent's fingerprint hashes (bandit checkpoints, stored cells)."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

FINGERPRINT_CHARS = 12

# The decay mode was a field of every agent config until it became the problem's
# (ProblemSpec.regularization). The text keeps printing it where that repr did --
# last, except in the two ensemble configs, after num_steps -- so that the
# fingerprints stored by runs of that version still match and nothing is recomputed.
_MODE_AFTER = {"EnsembleConfig": "num_steps", "EnsemblePlusConfig": "num_steps"}


def config_text(config: Any, regularization: str) -> str:
    """A registered agent's definition as text: its resolved config (a dataclass,
    printed as its repr prints it) with the decay mode it is built with."""
    if not dataclasses.is_dataclass(config):
        return f"{config!r} regularization={regularization!r}"
    items = [(f.name, f"{f.name}={getattr(config, f.name)!r}") for f in dataclasses.fields(config) if f.repr]
    after = _MODE_AFTER.get(type(config).__name__)
    names = [name for name, _ in items]
    at = names.index(after) + 1 if after in names else len(items)
    items.insert(at, ("regularization", f"regularization={regularization!r}"))
    return f"{type(config).__qualname__}({', '.join(text for _, text in items)})"


def text_fingerprint(*parts: str) -> str:
    """A short hash of the parts, one per line."""
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:FINGERPRINT_CHARS]
