"""Finding operations in a module (the bindings walk; passes then rewrite
what they found, which a walk in progress must not see)."""
from __future__ import annotations

from mlir import ir


def collect(module, predicate) -> list[ir.Operation]:
    """The operations of `module` (a Module or an Operation) for which
    `predicate(op)` holds, in walk order."""
    found = []

    def visit(op):
        if predicate(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    (module.operation if isinstance(module, ir.Module) else module).walk(visit)
    return found
