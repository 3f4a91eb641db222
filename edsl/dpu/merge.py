"""The merge across the DPUs of a launch, written once in C (`merge.h`): the
DPU model runs it (`Merge`), compiled for the host by the clang of the
`ziglang` package and linked into the process by `edsl.dpu.jit`, its object
code cached as the runtime library's; exported projects' host runners
include the same file (`header()`, edsl.export.generate). What it does, and
why two DPUs' uses of a byte may or may not merge: edsl.dpu.sharing."""
from __future__ import annotations

import ctypes
import functools
import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from ..base import cache, templates
from ..target import dpu as abi
from . import jit

HERE = Path(__file__).resolve().parent
MERGE_H = HERE / "merge.h"
HALF_BITS_H = HERE / "half_bits.h"       # (merge.h includes it; exported projects get both)

# Bytes one DPU both stored to and updated atomically, or updated with
# different atomics: the kind of such a byte's use (merge.h's EDSL_MIXED, EDSL_MIXED_ATOMICS).
MIXED = -1
MIXED_ATOMICS = -2

def codes() -> list[tuple[str, Any]]:
    """The access log's codes (abi.Access, abi.AtomicOp, the fields of an
    atomic's kind), the kinds of mixed uses, and why a sharing is refused
    (abi.Shared) as (name, value) pairs for C (EDSL_<name>)."""
    merged = sum(1 << int(op) for op in abi.MERGED_ATOMICS)
    return [*((f"ACCESS_{a.name}", int(a)) for a in abi.Access),
            *((name, getattr(abi, name)) for name in ("ACCESS_MASK", "ATOMIC_OP_SHIFT", "ATOMIC_OP_MASK",
                                                       "ATOMIC_OLD_USED", "ATOMIC_FLOAT_SHIFT",
                                                       "ATOMIC_FLOAT_MASK", "ATOMIC_SIZE_SHIFT")),
            *((f"ATOMIC_{op.name}", int(op)) for op in abi.AtomicOp),
            *((f"ATOMIC_FLOAT_{t.upper()}", v) for t, v in abi.ATOMIC_FLOAT.items()),
            ("MERGED_ATOMICS", f"{merged:#x}u"),
            ("MIXED", f"({MIXED})"), ("MIXED_ATOMICS", f"({MIXED_ATOMICS})"),
            *((f"SHARED_{why.name}", int(why)) for why in abi.Shared)]


def header() -> str:
    """merge.h with its codes filled in."""
    return templates.fill(MERGE_H, codes=templates.c_defines(codes()))


class _Use(ctypes.Structure):
    _fields_ = [("dpu", ctypes.c_int64), ("kind", ctypes.c_int64), ("site", ctypes.c_int64)]


class Sharing(ctypes.Structure):
    """merge.h's `struct sharing`: the refusal of a launch's merge, if `found`."""
    _fields_ = [("found", ctypes.c_int), ("why", ctypes.c_int), ("key", ctypes.c_uint64 * 4),
                ("array", ctypes.c_int), ("address", ctypes.c_uint64), ("first", _Use), ("second", _Use)]


_vp, _i64, _sz = ctypes.c_void_p, ctypes.c_int64, ctypes.c_size_t
_ENTRIES = {
    "edsl_merge_new": (_vp, [ctypes.c_int, _sz, _vp, _vp, _vp, _vp, ctypes.POINTER(Sharing)]),
    "edsl_merge_take": (ctypes.c_int, [_vp, ctypes.c_uint32, _vp, _sz, _vp, _i64, _i64]),
    "edsl_merge_reads": (None, [_vp, ctypes.c_uint32, _vp, _sz]),
    "edsl_merge_free": (None, [_vp]),
}


@functools.lru_cache(None)
def _library() -> tuple[jit.ObjectProgram, dict]:
    """merge.h compiled for this host (once per machine: the object code is
    cached) and linked in: the program and its entries (`_ENTRIES`)."""
    from ..codegen import clang
    text = header()
    source = clang.Source(text, str(MERGE_H), (("EDSL_LOG_ENTRY", abi.LOG_ENTRY), ("EDSL_MERGE_ENTRIES", None)),
                          (str(HERE),))
    flags = ["-x", "c", "-std=gnu11", "-ffreestanding", "-nostdlibinc", "-isystem", clang.builtin_headers(),
             "-ffp-contract=off", "-O2", "-S", "-emit-llvm", "-o", "-", *source.flags()]
    parts = (jit.host_key(), text, HALF_BITS_H.read_text(), *flags)
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest()
    obj = cache.load_bytes(key, "o")
    if obj is None:
        obj = jit.compile_object(clang.run(source, flags, "C"))
        cache.store_bytes(key, "o", obj)
    program = jit.ObjectProgram(obj, "merge.h")
    entries = {name: ctypes.CFUNCTYPE(restype, *argtypes)(program.address(name))
               for name, (restype, argtypes) in _ENTRIES.items()}
    return program, entries


class Merge:
    """The merge of the bytes of spans [starts[k], ends[k]) (MRAM addresses,
    in order, apart), their bytes one after another at positions 0 .. n - 1:
    as transferred (`pristine`) and merged (`result`), uint8 arrays of n; its
    refusals kept in `refused`. A context manager: its memory is freed on exit."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray, pristine: np.ndarray, result: np.ndarray,
                 refused: Sharing):
        self._entries = _library()[1]
        starts, ends = (np.ascontiguousarray(v, dtype=np.int64) for v in (starts, ends))
        self._keep = (starts, ends, pristine, result, refused)
        # (array number 0: the number only names an array in the runner's errors)
        self._m = self._entries["edsl_merge_new"](0, len(starts), starts.ctypes.data, ends.ctypes.data,
                                                  pristine.ctypes.data, result.ctypes.data, ctypes.byref(refused))
        if not self._m:
            raise MemoryError(f"the merge across DPUs cannot allocate its {len(pristine)} bytes' state")

    def __enter__(self) -> Merge:
        return self

    def __exit__(self, *exc) -> None:
        self._entries["edsl_merge_free"](self._m)
        self._m = None

    def take(self, dpu: int, rows: np.ndarray, part: np.ndarray, part_lo: int, part_hi: int) -> None:
        """DPU `dpu`'s writes: its log rows (int64, abi.LOG_ENTRY each), and
        `part`, the bytes at positions part_lo .. part_hi - 1, of which only
        those its writes name are read: their final values."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        part = np.ascontiguousarray(part, dtype=np.uint8)
        if self._entries["edsl_merge_take"](self._m, dpu, rows.ctypes.data, len(rows), part.ctypes.data,
                                            part_lo, part_hi):
            raise MemoryError("the merge across DPUs cannot allocate its claims")

    def reads(self, dpu: int, rows: np.ndarray) -> None:
        """DPU `dpu`'s reads (log rows), once every DPU's writes are taken."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        self._entries["edsl_merge_reads"](self._m, dpu, rows.ctypes.data, len(rows))
