"""Race notes leave a program built without the race check: the calls and the
address arithmetic only they used, and nothing else (IR text in, IR text out)."""
from mlir import ir

from edsl.lowering import strip_race_notes
from edsl.target.dpu import RACE_NOTE

MODULE = f"""
llvm.func @{RACE_NOTE}(i64, i64, i64, i64)
llvm.func @k(%d: !llvm.struct<(ptr, ptr, i64)>, %i: i64) {{
  %base = llvm.extractvalue %d[1] : !llvm.struct<(ptr, ptr, i64)>
  %addr = llvm.ptrtoint %base : !llvm.ptr to i64
  %four = llvm.mlir.constant(4 : i64) : i64
  %off = llvm.mul %i, %four : i64
  %at = llvm.add %addr, %off : i64
  %kind = llvm.mlir.constant(2 : i64) : i64
  %site = llvm.mlir.constant(77 : i64) : i64
  llvm.call @{RACE_NOTE}(%kind, %at, %four, %site) : (i64, i64, i64, i64) -> ()
  llvm.call @{RACE_NOTE}(%kind, %at, %four, %site) : (i64, i64, i64, i64) -> ()
  %p = llvm.getelementptr %base[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.mlir.constant(1.0 : f32) : f32
  llvm.store %v, %p : f32, !llvm.ptr
  llvm.return
}}
"""


def test_notes_and_their_own_arithmetic_go_the_rest_stays():
    with ir.Context(), ir.Location.unknown():
        m = ir.Module.parse(MODULE)
        assert strip_race_notes(m) == 2
        text = str(m)
    body = text[text.index("llvm.func @k"):]
    assert f"@{RACE_NOTE}(" not in body                         # the calls
    for gone in ("llvm.ptrtoint", "llvm.mul", "llvm.add", "77 : i64", "2 : i64"):
        assert gone not in body, gone                           # what only they used
    for kept in ("llvm.extractvalue", "llvm.getelementptr", "llvm.store", "1.000000e+00"):
        assert kept in body, kept                               # what the store uses
