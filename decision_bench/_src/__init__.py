"""Shared plumbing below every other module (nothing here imports the package)."""
