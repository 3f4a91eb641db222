"""`triton.experimental.tle.raw.mlir`: printing and asserting in raw functions."""
from ....codegen.language import vassert, vprintf

__all__ = ["vprintf", "vassert"]
