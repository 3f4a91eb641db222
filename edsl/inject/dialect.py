"""The `edsl` dialect of the region-op injector, declared at run time with IRDL
so that MLIR's verifier checks the placeholders' operand and result types.

  edsl.region ({ EDSL function body; llvm.return %r }) -> type of %r
      The body of an EDSL function (LLVM dialect) at a call site. Its operands
      (outs, then ins) are the values its extract ops read from above: IRDL
      binds one type per constraint, so a variadic operand list of mixed
      types cannot be declared. `llvm.return` inside it means "leave the
      region with this value" (IRDL cannot declare a terminator, and
      `llvm.return` verifies in any parent).
  edsl.extract_allocated_ptr / extract_aligned_ptr (memref) -> !llvm.ptr<as>
  edsl.extract_offset (memref) -> i64
  edsl.extract_sizes / extract_strides (memref) -> i64 per dimension
  edsl.extract_ptr (pointer operand) -> !llvm.ptr<as>
  edsl.pack (region result) {index} -> memref
      The descriptor returned for InOut operand `index`, as a memref again.
"""
from __future__ import annotations

import weakref

from mlir import ir
from mlir.dialects import irdl

_IRDL = r'''
irdl.dialect @edsl {
  irdl.operation @region {
    %any = irdl.any
    %body = irdl.region
    irdl.results(res: optional %any)
    irdl.regions(body: %body)
  }
  irdl.operation @extract_allocated_ptr {
    %m = irdl.base "!builtin.memref"
    %p = irdl.base "!llvm.ptr"
    irdl.operands(memref: %m)
    irdl.results(ptr: %p)
  }
  irdl.operation @extract_aligned_ptr {
    %m = irdl.base "!builtin.memref"
    %p = irdl.base "!llvm.ptr"
    irdl.operands(memref: %m)
    irdl.results(ptr: %p)
  }
  irdl.operation @extract_offset {
    %m = irdl.base "!builtin.memref"
    %i = irdl.is i64
    irdl.operands(memref: %m)
    irdl.results(offset: %i)
  }
  irdl.operation @extract_sizes {
    %m = irdl.base "!builtin.memref"
    %i = irdl.is i64
    irdl.operands(memref: %m)
    irdl.results(sizes: variadic %i)
  }
  irdl.operation @extract_strides {
    %m = irdl.base "!builtin.memref"
    %i = irdl.is i64
    irdl.operands(memref: %m)
    irdl.results(strides: variadic %i)
  }
  irdl.operation @extract_ptr {
    %any = irdl.any
    %p = irdl.base "!llvm.ptr"
    irdl.operands(pointer: %any)
    irdl.results(ptr: %p)
  }
  irdl.operation @pack {
    %any = irdl.any
    %m = irdl.base "!builtin.memref"
    %i = irdl.base "#builtin.integer"
    irdl.operands(descriptor: %any)
    irdl.results(memref: %m)
    irdl.attributes {"index" = %i}
  }
}
'''

_loaded: "weakref.WeakSet[ir.Context]" = weakref.WeakSet()


def load(context: ir.Context) -> None:
    """Make the `edsl` dialect known to `context` (once)."""
    if context in _loaded:
        return
    with context:
        irdl.load_dialects(ir.Module.parse(_IRDL))
    _loaded.add(context)
