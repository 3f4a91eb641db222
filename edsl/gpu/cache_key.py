"""An EDSL function as part of the cache key of the Triton kernels that call it
(Triton hashes an aggregate's `hash_attrs`)."""
from __future__ import annotations

from . import code_version


def kernel_key_part(fn) -> tuple:
    """The `hash_attrs` of an EDSL function seen as a Triton aggregate: a stand-in
    JIT function whose `cache_key` is the function's identity and the version of
    edsl's GPU code, so that editing either recompiles the kernels calling it
    (Triton 3.6 hashes no other part of an aggregate)."""
    return (_KEY_PART(f"{fn.identity}/{code_version()}"),) if _KEY_PART is not None else ()


def _key_part_class():
    from ..backend.triton_internals import jit_callable_class
    JITCallable = jit_callable_class()
    if JITCallable is None:  # a Triton without it hashes `__annotations__`
        return None

    class KernelKeyPart(JITCallable):
        noinline = False

        def __init__(self, key: str):  # noqa: super().__init__ wants a Python function
            self._key = key
            self.used_global_vals = {}
            self.__name__ = "edsl function"

        @property
        def cache_key(self) -> str:
            return self._key

    return KernelKeyPart


_KEY_PART = _key_part_class()
