"""Parameter annotations: `Input["memref<?xf32>"]`, `InOut["memref<4x?xi32, MRAM>"]`.

The string is an MLIR type, with the DPU memory spaces writable by name
(`WRAM`, `MRAM`). `InOut` memrefs may be updated by the function and are its
results, as in TLE-Raw; `Input` parameters are read-only. TLE-Raw's newer
spelling wraps the string in `typing.Literal` (`Input[Literal["i32"]]`) and
makes a memref a result by returning it (edsl.codegen.signature).
"""
from __future__ import annotations

import typing
from dataclasses import dataclass


def type_text(annotation) -> str | None:
    """The MLIR type string of `"t"` or `Literal["t"]`; None for anything else."""
    if isinstance(annotation, str):
        return annotation
    if typing.get_origin(annotation) is typing.Literal:
        args = typing.get_args(annotation)
        if len(args) == 1 and isinstance(args[0], str):
            return args[0]
    return None


@dataclass(frozen=True)
class Param:
    kind: str        # "Input" or "InOut"
    type_text: str   # MLIR type syntax, memory spaces possibly named

    @property
    def is_inout(self) -> bool:
        return self.kind == "InOut"

    def __repr__(self) -> str:
        return f'{self.kind}["{self.type_text}"]'


class _ParamKind:
    def __init__(self, kind: str):
        self._kind = kind

    def __getitem__(self, annotation) -> Param:
        text = type_text(annotation)
        if text is None:
            raise TypeError(f'{self._kind}[...] takes an MLIR type string, e.g. {self._kind}["memref<?xf32>"] '
                            f'or {self._kind}[Literal["memref<?xf32>"]]')
        return Param(self._kind, text)

    def __repr__(self) -> str:
        return self._kind


Input = _ParamKind("Input")
"""`Input["<MLIR type>"]`: a parameter the function reads and never writes (a
memref in the memory pointers point to, MRAM or global, is a pointer it may
write through, as in C)."""
InOut = _ParamKind("InOut")
"""`InOut["<MLIR type>"]`: a memref the function updates; its results, as in
TLE-Raw (`fl.call`'s outs)."""
