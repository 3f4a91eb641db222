"""Triton's `tt` dialect: no op classes (see the package)."""
