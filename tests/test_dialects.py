"""The `mlir` bindings find a Python module for each dialect whose ops edsl's
contexts hold unregistered (edsl.base.dialects), so wrapping such ops does
not search for a module again and again."""
import sys

from mlir import ir

import edsl  # noqa: F401  (puts the modules on the bindings' search path)


class _Lookups:
    """Counts the imports of dialect modules tried while it is installed."""

    def __init__(self):
        self.names = []

    def find_spec(self, name, path=None, target=None):
        if name.rsplit(".", 1)[-1] in ("tt", "edsl"):
            self.names.append(name)
        return None

    def __enter__(self):
        sys.meta_path.insert(0, self)
        return self

    def __exit__(self, *exc):
        sys.meta_path.remove(self)


def _walk_twice(text: str) -> list:
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    module = ir.Module.parse(text, ctx)
    with _Lookups() as lookups:
        for _ in range(2):
            for op in module.body.operations:
                names = [inner.operation.name for inner in op.regions[0].blocks[0].operations]
    assert names == ["tt.get_program_id", "edsl.access", "func.return"]
    return lookups.names


def test_ops_of_dialects_without_python_classes_wrap_without_module_searches():
    text = """
    func.func @k() {
      %0 = "tt.get_program_id"() {axis = 0 : i32} : () -> i32
      "edsl.access"(%0) : (i32) -> ()
      return
    }"""
    _walk_twice(text)                   # (the first wrap of each dialect may load its module)
    assert _walk_twice(text) == []
