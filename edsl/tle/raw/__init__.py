"""`triton.experimental.tle.raw`: the decorator and the parameter annotations."""
from ...codegen.annotations import InOut, Input
from ...function import dialect

__all__ = ["dialect", "Input", "InOut"]
