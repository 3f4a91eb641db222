"""The EDSL functions `fl.call` placeholders stand for, by placeholder name.

In TTIR an `fl.call` is a `tt.call` to a body-less private function
`__edsl_<name>_<hash>`; the backend that injects the body asks this registry
(of the process) which function the name stands for.
"""
from __future__ import annotations

PREFIX = "__edsl_"
_CALLEES: dict = {}      # placeholder name -> (function, its outputs)


def placeholder_symbol(fn, outputs: tuple | None = None) -> str:
    """The placeholder name of EDSL function `fn` (registered here);
    `outputs`: for a function in C, whose parameters say nothing of it,
    the operands whose new values the call returns."""
    key = fn.cache_key or f"{id(fn):x}"
    symbol = f"{PREFIX}{fn.__name__}_{key[:16]}"
    if outputs is not None:
        symbol += "_o" + "_".join(map(str, outputs))
    _CALLEES[symbol] = (fn, outputs)
    return symbol


def callee(symbol: str):
    """The EDSL function a placeholder name stands for, or None."""
    return _CALLEES.get(symbol, (None, None))[0]


def outputs_of(symbol: str) -> tuple | None:
    """The operands whose new values a placeholder of a C function returns."""
    return _CALLEES.get(symbol, (None, None))[1]
