"""Typed views of the TTIR ops whose attributes or operands the lowerings
read by name: one class an op, one line a field.

Triton's dialects are not registered in the upstream MLIR the conversion
runs in, so a TTIR op is a generic `ir.Operation`, its attributes found by
key and its operands by position; a view names them once, as Triton's own
op definitions (`TritonOps.td`) do: `Load(op).mask` rather than
`op.operands[1]` if there are two.
"""
from __future__ import annotations

from mlir import ir


def _operand(i: int):
    """Operand `i`, or None where the op has fewer (an optional operand)."""
    return property(lambda self: self.op.operands[i] if len(self.op.operands) > i else None)


def _int(key: str):
    return property(lambda self: ir.IntegerAttr(self.op.attributes[key]).value)


def _str(key: str, default: str | None = None):
    return property(lambda self: ir.StringAttr(self.op.attributes[key]).value
                    if key in self.op.attributes else default)


def _flag(key: str, default: bool = False):
    return property(lambda self: ir.BoolAttr(self.op.attributes[key]).value
                    if key in self.op.attributes else default)


class View:
    """A TTIR op read through named fields (`op`: the op itself)."""
    NAME = ""

    def __init__(self, op):
        self.op = getattr(op, "operation", op)
        assert self.op.name == self.NAME, f"a {self.NAME} view of {self.op.name}"


class Load(View):
    NAME = "tt.load"
    ptr, mask, other = _operand(0), _operand(1), _operand(2)


class Store(View):
    NAME = "tt.store"
    ptr, value, mask = _operand(0), _operand(1), _operand(2)


class MakeRange(View):
    NAME = "tt.make_range"
    start, end = _int("start"), _int("end")


class GetProgramId(View):
    NAME = "tt.get_program_id"
    axis = _int("axis")


class GetNumPrograms(View):
    NAME = "tt.get_num_programs"
    axis = _int("axis")


class Splat(View):
    NAME = "tt.splat"
    src = _operand(0)


class Unsplat(View):
    NAME = "tt.unsplat"
    src = _operand(0)


class Broadcast(View):
    NAME = "tt.broadcast"
    src = _operand(0)


class Reshape(View):
    NAME = "tt.reshape"
    src = _operand(0)


class Split(View):
    NAME = "tt.split"
    src = _operand(0)


class Join(View):
    NAME = "tt.join"
    lhs, rhs = _operand(0), _operand(1)


class Cat(View):
    NAME = "tt.cat"
    lhs, rhs = _operand(0), _operand(1)


class AddPtr(View):
    NAME = "tt.addptr"
    ptr, offset = _operand(0), _operand(1)


class Bitcast(View):
    NAME = "tt.bitcast"
    src = _operand(0)


class Histogram(View):
    NAME = "tt.histogram"
    src, mask = _operand(0), _operand(1)


class ExpandDims(View):
    NAME = "tt.expand_dims"
    src, axis = _operand(0), _int("axis")


class Trans(View):
    NAME = "tt.trans"
    src = _operand(0)

    @property
    def order(self) -> list[int]:
        return list(ir.DenseI32ArrayAttr(self.op.attributes["order"]))


class Gather(View):
    NAME = "tt.gather"
    src, indices, axis = _operand(0), _operand(1), _int("axis")


class Reduce(View):
    NAME = "tt.reduce"
    axis = _int("axis")


class Scan(View):
    NAME = "tt.scan"
    axis, reverse = _int("axis"), _flag("reverse")


class Assert(View):
    NAME = "tt.assert"
    condition, message = _operand(0), _str("message")


class AtomicRMW(View):
    NAME = "tt.atomic_rmw"
    ptr, val, mask, kind = _operand(0), _operand(1), _operand(2), _str("atomic_rmw_op")


class AtomicPoll(View):
    NAME = "tt.atomic_poll"
    ptr, expected, timeout = _operand(0), _operand(1), _operand(2)


class AtomicCAS(View):
    NAME = "tt.atomic_cas"
    ptr, cmp, val = _operand(0), _operand(1), _operand(2)


class FpToFp(View):
    NAME = "tt.fp_to_fp"
    rounding = _str("rounding", "rtne")            # (absent: round to nearest even)


class ClampF(View):
    NAME = "tt.clampf"

    @property
    def propagate_nan(self) -> bool:
        """NaN in, NaN out (`propagateNan = all`); else NaN is dropped as by fmax."""
        return "propagateNan" in self.op.attributes and "all" in str(self.op.attributes["propagateNan"])


class ExternElementwise(View):
    NAME = "tt.extern_elementwise"
    symbol = _str("symbol")


class MapElementwise(View):
    NAME = "tt.map_elementwise"
    pack = _int("pack")


class DotScaled(View):
    NAME = "tt.dot_scaled"
    a, b, c = _operand(0), _operand(1), _operand(2)
    a_format, b_format = _str("a_elem_type"), _str("b_elem_type")
    fast_math = _flag("fastMath")
    lhs_k_pack, rhs_k_pack = _flag("lhs_k_pack", True), _flag("rhs_k_pack", True)

    def _segment(self, k: int):
        sizes = list(ir.DenseI32ArrayAttr(self.op.attributes["operandSegmentSizes"]))
        return self.op.operands[sum(sizes[:k])] if sizes[k] else None

    @property
    def a_scale(self):
        return self._segment(3)

    @property
    def b_scale(self):
        return self._segment(4)
