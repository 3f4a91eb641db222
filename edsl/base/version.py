"""The installed distribution's version (its metadata: pyproject.toml's)."""
from __future__ import annotations

DISTRIBUTION = "triton-edsl"        # (the package index's `edsl` is another project)


def version() -> str:
    from importlib.metadata import version as installed
    return installed(DISTRIBUTION)
