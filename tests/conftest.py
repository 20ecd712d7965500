"""Shared fixtures. JAX runs on the CPU here; keep problem sizes small."""

import jax
import pytest


@pytest.fixture
def key():
    return jax.random.key(0)
