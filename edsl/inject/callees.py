"""The EDSL functions `fl.call` placeholders stand for, by placeholder name.

In TTIR an `fl.call` is a `tt.call` to a body-less private function
`__edsl_<name>_<hash>`; the backend that injects the body asks this registry
(of the process) which function the name stands for.
"""
from __future__ import annotations

PREFIX = "__edsl_"
_CALLEES: dict = {}


def placeholder_symbol(fn) -> str:
    """The placeholder name of EDSL function `fn` (registered here)."""
    key = fn.cache_key or f"{id(fn):x}"
    symbol = f"{PREFIX}{fn.__name__}_{key[:16]}"
    _CALLEES[symbol] = fn
    return symbol


def callee(symbol: str):
    """The EDSL function a placeholder name stands for, or None."""
    return _CALLEES.get(symbol)
