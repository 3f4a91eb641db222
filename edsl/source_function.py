"""What raw functions written in C or CUDA C share: a Python stub naming a
source (`file=` or `source=`), its macros, the function of the source it
stands for, and its identity in the keys of Triton kernels naming it."""
from __future__ import annotations

import hashlib
import os

from .codegen import clang


class SourceFunction:
    """A raw function in a source language clang compiles (`LANGUAGE`, files `SUFFIX`)."""
    LANGUAGE = ""        # the `name=` of dialect()
    SUFFIX = ""

    def __init__(self, fn, file=None, source: str | None = None, defines: dict | None = None,
                 extern_func_name: str = ""):
        filename, text = clang.read_source(f'dialect(name="{self.LANGUAGE}")', file, source, fn, self.SUFFIX)
        defines = tuple(sorted((str(k), None if v is None else str(v)) for k, v in (defines or {}).items()))
        self.source = clang.Source(text, filename, defines, (os.path.dirname(filename),))
        self.extern_func_name = str(extern_func_name or "")
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        self.__triton_aggregate__ = True  # a global Triton admits in kernels (see EdslFunction)
        self._identity: str | None = None

    def __repr__(self) -> str:
        return f"<edsl {self.LANGUAGE} function {self.__qualname__} ({self.source.filename})>"

    def _digest(self) -> str:
        """A digest of the code the source compiles to (its preprocessed text)."""
        raise NotImplementedError

    @property
    def identity(self) -> str:
        """What identifies its code: the preprocessed source, defines and the name called."""
        if self._identity is None:
            self._identity = f"{self.LANGUAGE}:{self._digest()}:{self.extern_func_name}:{self.__name__}"
        return self._identity

    @property
    def cache_key(self) -> str:
        """A digest of `identity` (names its `fl.call` placeholders)."""
        return hashlib.sha256(self.identity.encode()).hexdigest()

    @property
    def __annotations__(self) -> dict:  # hashed by Triton 3.9 into the keys of kernels naming it
        return {"edsl": self.identity}

    @property
    def hash_attrs(self) -> tuple:
        from .gpu.cache_key import kernel_key_part
        return kernel_key_part(self)


__all__ = ["SourceFunction"]
