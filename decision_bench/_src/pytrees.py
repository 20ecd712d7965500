"""Frozen dataclasses as pytrees whose real numbers are leaves (priors, bandit cores).

A jitted function that takes such an object as an ordinary argument compiles once per
structure (the static fields: shapes, names) and takes the real numbers (a temperature,
a noise scale) as data: another value shares the compiled program, and a grid of
values can be vmapped. Both the priors and the bandit cores are registered here.
"""

from __future__ import annotations

from typing import Any

import jax


def build_unchecked(cls: type, **fields: Any) -> Any:
    """An instance of the frozen dataclass ``cls`` with ``fields`` set, bypassing
    ``__init__``: its checks need concrete numbers and would reject traced values.
    For values already checked (by the object they come from) or traced."""
    obj = object.__new__(cls)
    for name, value in fields.items():
        object.__setattr__(obj, name, value)
    return obj


def register_data_fields(cls: type, data_fields: tuple[str, ...], static_fields: tuple[str, ...]) -> None:
    """Makes the frozen dataclass ``cls`` a pytree: ``data_fields`` are its leaves (in
    that order), ``static_fields`` its structure (hashable values that set shapes or
    branches). Unflattening uses ``build_unchecked``: a traced leaf is never checked.

    Registration is by exact type: a subclass is registered on its own."""

    def flatten_with_keys(obj: Any) -> tuple[tuple, tuple]:
        # Keyed by field name, so paths (jax.tree_util.tree_flatten_with_path) read ".temperature".
        leaves = tuple((jax.tree_util.GetAttrKey(name), getattr(obj, name)) for name in data_fields)
        return leaves, tuple(getattr(obj, name) for name in static_fields)

    def flatten(obj: Any) -> tuple[tuple, tuple]:
        return tuple(getattr(obj, name) for name in data_fields), tuple(
            getattr(obj, name) for name in static_fields
        )

    def unflatten(static: tuple, leaves: Any) -> Any:
        return build_unchecked(cls, **dict(zip(static_fields, static)), **dict(zip(data_fields, leaves)))

    jax.tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)


def register_as_static(cls: type) -> None:
    """Makes ``cls`` a pytree without leaves whose structure is the object itself (it must
    be hashable: compared by its fields, or by identity): a core whose numbers live in
    host arrays set at construction (a data set), which a rebuilt object would lose."""
    jax.tree_util.register_pytree_node(cls, lambda obj: ((), obj), lambda obj, leaves: obj)
