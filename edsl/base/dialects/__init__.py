"""Python modules, without op classes, for the MLIR dialects whose ops edsl's
contexts hold unregistered: Triton's `tt` (a kernel's TTIR as read,
`backend.ttir_reader`) and edsl's own `edsl` (markers and placeholders).

The `mlir` bindings look up a dialect's Python module each time they wrap an
op of a dialect they have no module for, and a module not found is looked
up again the next time: a failed import, through every finder, for each
such op a pass walks (13 to 19 % of the time of compiling small kernels). Once these
modules are on the bindings' search path the lookup succeeds once per
dialect, and the ops stay generic `OpView`s."""
from mlir._mlir_libs import _mlir

if __name__ not in _mlir.globals.dialect_search_modules:
    _mlir.globals.append_dialect_search_prefix(__name__)
