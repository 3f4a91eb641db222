"""The typed views of TTIR ops (`edsl.backend.convert.ops`) on the TTIR that
Triton prints: every view's fields read on every op of its kind in the golden
corpus (the installed Triton's folder), each field checked against the op's
generic printed form, read independently here."""
from __future__ import annotations

import re

import pytest
from mlir import ir

from edsl.backend.convert import new_context, ops
from edsl.backend.ttir_reader import read_ttir
from test_ttir_corpus import MINE, load

VIEWS = {cls.NAME: cls for cls in vars(ops).values()
         if isinstance(cls, type) and issubclass(cls, ops.View) and cls.NAME}


def _corpus_ops() -> dict[str, list]:
    """The corpus's ops that have a view, by name (their modules kept alive)."""
    found: dict[str, list] = {}
    ctx = new_context()
    with ctx:
        for path in MINE:
            module = read_ttir(load(path)[0], ctx)

            def visit(op, module=module):
                if op.name in VIEWS:
                    found.setdefault(op.name, []).append((module, op))
                return ir.WalkResult.ADVANCE
            module.operation.walk(visit)
    return found


CORPUS_OPS = _corpus_ops()


def _printed(op, key: str) -> str | None:
    """An attribute's value as the op's generic form prints it."""
    m = re.search(r"\b" + key + r" = (array<[^>]*>|[^,}>]+)", str(op))
    return m[1].strip() if m else None


def test_the_corpus_reaches_the_views_of_its_common_ops():
    assert {"tt.load", "tt.store", "tt.make_range", "tt.get_program_id", "tt.expand_dims", "tt.reduce",
            "tt.scan", "tt.trans", "tt.atomic_rmw", "tt.assert", "tt.clampf", "tt.splat", "tt.broadcast",
            "tt.reshape", "tt.addptr", "tt.bitcast", "tt.cat", "tt.histogram"} <= set(CORPUS_OPS)


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_every_field_reads_as_printed(name):
    cls = VIEWS[name]
    fields = [f for f in dir(cls) if not f.startswith("_") and f not in ("NAME", "op")]
    for _, op in CORPUS_OPS.get(name, []):
        view = cls(op)
        values = {f: getattr(view, f) for f in fields}
        for f, v in values.items():
            if isinstance(v, ir.Value):
                assert any(v == o for o in op.operands), (name, f)
        for key, attr in (("axis", "axis"), ("start", "start"), ("end", "end"), ("pack", "pack")):
            if attr in values:
                assert values[attr] == int(_printed(op, key).split(":")[0]), (name, key)
        if name in ("tt.load", "tt.store"):
            n = len(op.operands)
            assert values["ptr"] == op.operands[0]
            assert (values["mask"] is None) == (n < (2 if name == "tt.load" else 3))
        if name == "tt.atomic_rmw":
            assert _printed(op, "atomic_rmw_op") == f'"{values["kind"]}"'
        if name == "tt.assert":
            assert _printed(op, "message") == f'"{values["message"]}"'
        if name == "tt.scan":
            assert values["reverse"] == (_printed(op, "reverse") == "true")
        if name == "tt.trans":
            assert values["order"] == [int(x) for x in re.findall(r"-?\d+", _printed(op, "order").split(":")[1])]


def test_a_view_of_another_op_is_refused():
    _, op = CORPUS_OPS["tt.store"][0]
    with pytest.raises(AssertionError, match="a tt.load view of tt.store"):
        ops.Load(op)
