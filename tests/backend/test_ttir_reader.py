"""The TTIR reader on modules Triton builds: Triton's module printed in MLIR's
generic form and parsed upstream, with no rule per op (`ttir_reader`)."""
import numpy as np
import pytest
import triton
import triton.language as tl
from mlir import ir

from edsl.backend import triton_internals
from edsl.backend.convert import new_context
from edsl.backend.ttir_reader import _parse_generic, read_ttir, split_top
from edsl.base.errors import CompileError


def _ops(module) -> list:
    found = []

    def visit(op):
        found.append(op)
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def _read(text: str):
    module = read_ttir(text, new_context())
    return module, {op.name: op for op in _ops(module)}


KERNEL = """#loc = loc("k.py":1:1)
#loc2 = loc("k.py":3:5)
#loc3 = loc("k.py":4:5)
module {
  tt.func public @k(%p: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("p"(#loc)), %n: i32 loc("n"(#loc))) attributes {noinline = false} {
    %o = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32> loc(#loc2)
    %s = tt.splat %p : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>> loc(#loc2)
    %a = tt.addptr %s, %o {tt.divisibility = dense<16> : tensor<1xi32>, tt.contiguity = dense<8> : tensor<1xi32>} : tensor<8x!tt.ptr<f32>>, tensor<8xi32> loc(#loc2)
    %x = tt.load %a : tensor<8x!tt.ptr<f32>> loc(#loc2)
    %h = tt.fp_to_fp %x, rounding = rtz : tensor<8xf32> -> tensor<8xf16> loc(#loc3)
    %c = tt.clampf %x, %x, %x, propagateNan = all : tensor<8xf32> loc(#loc3)
    %t = arith.constant true loc(#loc3)
    %v = arith.constant 1.0 : f32 loc(#loc3)
    %r = tt.atomic_rmw exch, acq_rel, gpu, %p, %v, %t : (!tt.ptr<f32>, f32, i1) -> f32 loc(#loc3)
    %1 = "tt.reduce"(%x) <{axis = 0 : i32}> ({
    ^bb0(%u: f32 loc(#loc2), %w: f32 loc(#loc2)):
      %m = arith.addf %u, %w : f32 loc(#loc2)
      tt.reduce.return %m : f32 loc(#loc2)
    }) : (tensor<8xf32>) -> f32 loc(#loc2)
    tt.store %a, %c : tensor<8x!tt.ptr<f32>> loc(#loc3)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
"""


def test_functions_become_func_ops_with_their_argument_attributes():
    module, ops = _read(KERNEL)
    fn = ops["func.func"]
    assert ir.StringAttr(fn.attributes["sym_name"]).value == "k"
    assert "tt.divisibility = 16 : i32" in str(fn.attributes["arg_attrs"])
    assert "func.return" in ops and "tt.func" not in ops and "tt.return" not in ops


def test_enum_properties_are_named_as_tritons_enums_name_them():
    _, ops = _read(KERNEL)
    rmw = ops["tt.atomic_rmw"]
    assert [ir.StringAttr(rmw.attributes[k]).value for k in ("atomic_rmw_op", "sem", "scope")] == \
        ["xchg", "acquire_release", "gpu"]
    assert ir.StringAttr(ops["tt.fp_to_fp"].attributes["rounding"]).value == "rtz"
    assert ir.StringAttr(ops["tt.clampf"].attributes["propagateNan"]).value == "all"


def test_properties_and_hints_are_attributes_of_the_op():
    """`tl.multiple_of` / `tl.max_contiguous` hints on a pointer tensor (Triton's
    grouped-GEMM tutorial) and the ops' own properties both read."""
    _, ops = _read(KERNEL)
    addptr = ops["tt.addptr"]
    assert str(addptr.attributes["tt.divisibility"]) == "dense<16> : tensor<1xi32>"
    assert str(addptr.attributes["tt.contiguity"]) == "dense<8> : tensor<1xi32>"
    assert ir.IntegerAttr(ops["tt.make_range"].attributes["end"]).value == 8
    assert ir.IntegerAttr(ops["tt.reduce"].attributes["axis"]).value == 0
    assert list(ir.DenseI32ArrayAttr(ops["tt.load"].attributes["operandSegmentSizes"])) == [1, 0, 0]


@triton.jit
def _hinted(a_ptr, b_ptr, n, B: tl.constexpr):
    offs = tl.arange(0, B)
    ptrs = tl.multiple_of(a_ptr + offs, 8)
    tl.store(b_ptr + tl.max_contiguous(offs, B), tl.load(ptrs, mask=offs < n) * 2)


def test_a_kernel_with_hints_on_pointer_tensors_runs():
    a = np.arange(16, dtype=np.float32)
    b = np.zeros_like(a)
    _hinted[(1,)](a, b, 16, B=16)
    np.testing.assert_array_equal(b, a * 2)


def test_launch_ordering_ops_are_dropped():
    text = KERNEL.replace("    tt.return loc(#loc)", "    tt.grid_dependency_wait loc(#loc3)\n"
                          "    tt.grid_dependency_launch_dependents loc(#loc3)\n    tt.return loc(#loc)")
    try:
        triton_internals.parse_ttir(text)
    except RuntimeError:
        pytest.skip(f"Triton {triton.__version__} has no grid-dependency ops (it writes them as inline "
                    "asm: test_driver's launch covers those)")
    _, ops = _read(text)
    assert not any("grid_dependency" in name for name in ops)


def test_a_text_tritons_parser_refuses_is_a_compile_error():
    with pytest.raises(CompileError, match="cannot read the kernel's TTIR"):
        read_ttir(KERNEL.replace("%o = tt.make_range", "%o = tt.make_rang"), new_context())


def test_a_parse_error_names_the_kernel_line_of_its_op():
    generic = ('#loc = loc("k.py":1:1)\n#loc4 = loc("k.py":4:7)\n"builtin.module"() ({\n'
               '  %0 = "arith.addi"(%undefined) : (i32) -> i32 loc(#loc4)\n}) : () -> () loc(#loc)\n')
    with pytest.raises(CompileError, match="cannot read the kernel's TTIR") as err:
        _parse_generic(generic, new_context())
    assert (err.value.loc.filename, err.value.loc.lineno) == ("k.py", 4)


def test_split_top_respects_brackets_and_strings():
    assert split_top('%a, tensor<2x!tt.ptr<f32>>, "x, y", {a = 1, b = 2}') == \
        ["%a", "tensor<2x!tt.ptr<f32>>", '"x, y"', "{a = 1, b = 2}"]
