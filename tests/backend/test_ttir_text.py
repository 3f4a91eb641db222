"""IR-text unit tests of the TTIR -> generic-form rewrite, one op form each."""
import pytest
from mlir import ir

from edsl.backend.convert import new_context
from edsl.backend.ttir_text import LocTable, rewrite_ttir, split_top
from edsl.errors import CompileError

T = "tensor<8x!tt.ptr<f32>>"
CASES = [
    ("%0 = tt.get_program_id y : i32", '%0 = "tt.get_program_id"() {axis = 1 : i32} : () -> i32'),
    ("%0 = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>",
     '%0 = "tt.make_range"() {end = 8 : i32, start = 0 : i32} : () -> tensor<8xi32>'),
    ("%1 = tt.splat %a : !tt.ptr<f32> -> " + T, '%1 = "tt.splat"(%a) : (!tt.ptr<f32>) -> ' + T),
    ("%2 = tt.addptr %1, %0 : " + T + ", tensor<8xi32>",
     '%2 = "tt.addptr"(%1, %0) : (' + T + ", tensor<8xi32>) -> " + T),
    ("%3 = tt.load %2, %m, %o : " + T,
     '%3 = "tt.load"(%2, %m, %o) : (' + T + ", tensor<8xi1>, tensor<8xf32>) -> tensor<8xf32>"),
    # A `tl.const` pointer: what it points to is f32, whatever the qualifier.
    ('%3 = tt.load %2 : tensor<8x!tt.ptr<f32, "constant">>',
     '%3 = "tt.load"(%2) : (tensor<8x!tt.ptr<f32, "constant">>) -> tensor<8xf32>'),
    ("%3 = tt.load %2 evictionPolicy = evict_last : " + T,
     '%3 = "tt.load"(%2) {evictionPolicy = "evict_last"} : (' + T + ") -> tensor<8xf32>"),
    ("tt.store %2, %3, %m : " + T,
     '"tt.store"(%2, %3, %m) : (' + T + ", tensor<8xf32>, tensor<8xi1>) -> ()"),
    ("%4 = tt.expand_dims %0 {axis = 1 : i32} : tensor<8xi32> -> tensor<8x1xi32>",
     '%4 = "tt.expand_dims"(%0) {axis = 1 : i32} : (tensor<8xi32>) -> tensor<8x1xi32>'),
    ("%5 = tt.trans %x {order = array<i32: 1, 0>} : tensor<2x4xf32> -> tensor<4x2xf32>",
     '%5 = "tt.trans"(%x) {order = array<i32: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>'),
    ("%6 = tt.reshape %x allow_reorder : tensor<2x4xf32> -> tensor<8xf32>",
     '%6 = "tt.reshape"(%x) {allow_reorder = true} : (tensor<2x4xf32>) -> tensor<8xf32>'),
    ("%7 = tt.dot %a, %b, %c, inputPrecision = tf32 : tensor<4x4xf16> * tensor<4x4xf16> -> tensor<4x4xf32>",
     '%7 = "tt.dot"(%a, %b, %c) {inputPrecision = "tf32"} : (tensor<4x4xf16>, tensor<4x4xf16>, '
     "tensor<4x4xf32>) -> tensor<4x4xf32>"),
    ("%8 = tt.atomic_rmw fadd, acq_rel, gpu, %p, %v, %t : (!tt.ptr<f32>, f32, i1) -> f32",
     '%8 = "tt.atomic_rmw"(%p, %v, %t) {atomic_rmw_op = "fadd", sem = "acq_rel", scope = "gpu"} '
     ": (!tt.ptr<f32>, f32, i1) -> f32"),
    ('tt.print " x: " {hex = false, isSigned = array<i32: 1>} : %p : i32',
     '"tt.print"(%p) {hex = false, isSigned = array<i32: 1>, prefix = " x: "} : (i32) -> ()'),
    ('tt.assert %c, "neg, really" : tensor<8xi1>',
     '"tt.assert"(%c) {message = "neg, really"} : (tensor<8xi1>) -> ()'),
    ("tt.reduce.return %a, %b : f32, i32", '"tt.reduce.return"(%a, %b) : (f32, i32) -> ()'),
    ("%9:2 = tt.split %x : tensor<4x2xf32> -> tensor<4xf32>",
     '%9:2 = "tt.split"(%x) : (tensor<4x2xf32>) -> (tensor<4xf32>, tensor<4xf32>)'),
    # As Triton 3.6 and 3.9 print them (`tl.split`, `.item()`, `tl.debug_barrier()`).
    ("%outLHS, %outRHS = tt.split %6 : tensor<8x2xf32> -> tensor<8xf32>",
     '%outLHS, %outRHS = "tt.split"(%6) : (tensor<8x2xf32>) -> (tensor<8xf32>, tensor<8xf32>)'),
    ("%10 = tt.unsplat %9 : tensor<1xi1>", '%10 = "tt.unsplat"(%9) : (tensor<1xi1>) -> i1'),
    ("%10 = tt.unsplat %9 : tensor<1x1xf32>", '%10 = "tt.unsplat"(%9) : (tensor<1x1xf32>) -> f32'),
    ("ttg.barrier all", '"ttg.barrier"() {addrSpace = "all"} : () -> ()'),
    ("ttg.barrier local|global_read", '"ttg.barrier"() {addrSpace = "local|global_read"} : () -> ()'),
]


# Hints of `tl.multiple_of`, `tl.max_contiguous` and `tl.max_constancy` sit in an
# attribute dictionary on whatever op defines the value: lines as Triton 3.6 and
# 3.9 print them (3.9 prints a load's eviction policy in the dictionary).
D1, D2 = "tt.divisibility = dense<1> : tensor<1xi32>", "tt.divisibility = dense<1> : tensor<2xi32>"
HINTED = [
    ("%xp_0 = tt.addptr %x, %xp {tt.divisibility = dense<16> : tensor<1xi32>} : !tt.ptr<f32>, i32",
     '%xp_0 = "tt.addptr"(%x, %xp) {tt.divisibility = dense<16> : tensor<1xi32>} : '
     "(!tt.ptr<f32>, i32) -> !tt.ptr<f32>"),
    ("%a_ptrs_33 = tt.addptr %a_ptrs_31, %a_ptrs_32 {tt.divisibility = dense<16> : tensor<2xi32>} : "
     "tensor<128x32x!tt.ptr<f16>>, tensor<128x32xi32>",
     '%a_ptrs_33 = "tt.addptr"(%a_ptrs_31, %a_ptrs_32) {tt.divisibility = dense<16> : tensor<2xi32>} : '
     "(tensor<128x32x!tt.ptr<f16>>, tensor<128x32xi32>) -> tensor<128x32x!tt.ptr<f16>>"),
    ("%p_1 = tt.addptr %p, %offs {tt.contiguity = dense<16> : tensor<1xi32>, tt.divisibility = dense<16> : "
     "tensor<1xi32>} : tensor<16x!tt.ptr<f32>>, tensor<16xi32>",
     '%p_1 = "tt.addptr"(%p, %offs) {tt.contiguity = dense<16> : tensor<1xi32>, tt.divisibility = dense<16> : '
     "tensor<1xi32>} : (tensor<16x!tt.ptr<f32>>, tensor<16xi32>) -> tensor<16x!tt.ptr<f32>>"),
    (f"%pid = tt.get_program_id x {{{D1}}} : i32",
     f'%pid = "tt.get_program_id"() {{{D1}, axis = 0 : i32}} : () -> i32'),
    ("%offs = tt.make_range {end = 8 : i32, start = 0 : i32, tt.contiguity = dense<8> : tensor<1xi32>} : "
     "tensor<8xi32>",
     '%offs = "tt.make_range"() {end = 8 : i32, start = 0 : i32, tt.contiguity = dense<8> : tensor<1xi32>} : '
     "() -> tensor<8xi32>"),
    ("%ps = tt.splat %n {tt.divisibility = dense<16> : tensor<1xi32>} : i32 -> tensor<16xi32>",
     '%ps = "tt.splat"(%n) {tt.divisibility = dense<16> : tensor<1xi32>} : (i32) -> tensor<16xi32>'),
    ("%iv_3 = tt.load %iv {tt.constancy = dense<8> : tensor<1xi32>} : tensor<8x!tt.ptr<i64>>",
     '%iv_3 = "tt.load"(%iv) {tt.constancy = dense<8> : tensor<1xi32>} : (tensor<8x!tt.ptr<i64>>) -> '
     "tensor<8xi64>"),
    ("%v_2 = tt.load %v_1 evictionPolicy = evict_last {tt.contiguity = dense<8> : tensor<1xi32>} : "
     "tensor<8x!tt.ptr<i32>>",
     '%v_2 = "tt.load"(%v_1) {tt.contiguity = dense<8> : tensor<1xi32>, evictionPolicy = "evict_last"} : '
     "(tensor<8x!tt.ptr<i32>>) -> tensor<8xi32>"),
    ("%v_2 = tt.load %v_1 {cachePolicy = #tt.cache_policy<cache_modifier = none, eviction_policy = evict_last>, "
     "tt.contiguity = dense<8> : tensor<1xi32>} : tensor<8x!tt.ptr<i32>>",
     '%v_2 = "tt.load"(%v_1) {cachePolicy = #tt.cache_policy<cache_modifier = none, eviction_policy = '
     "evict_last>, tt.contiguity = dense<8> : tensor<1xi32>} : (tensor<8x!tt.ptr<i32>>) -> tensor<8xi32>"),
    (f"%q_5 = tt.int_to_ptr %q_4 {{{D1}}} : i64 -> !tt.ptr<f32>",
     f'%q_5 = "tt.int_to_ptr"(%q_4) {{{D1}}} : (i64) -> !tt.ptr<f32>'),
    (f"%qi = tt.ptr_to_int %p_2 {{{D1}}} : tensor<8x!tt.ptr<f32>> -> tensor<8xi64>",
     f'%qi = "tt.ptr_to_int"(%p_2) {{{D1}}} : (tensor<8x!tt.ptr<f32>>) -> tensor<8xi64>'),
    (f"%b = tt.bitcast %v {{{D1}}} : tensor<8xf32> -> tensor<8xi32>",
     f'%b = "tt.bitcast"(%v) {{{D1}}} : (tensor<8xf32>) -> tensor<8xi32>'),
    (f"%e = tt.expand_dims %offs {{axis = 1 : i32, {D2}}} : tensor<8xi32> -> tensor<8x1xi32>",
     f'%e = "tt.expand_dims"(%offs) {{axis = 1 : i32, {D2}}} : (tensor<8xi32>) -> tensor<8x1xi32>'),
    (f"%bc = tt.broadcast %e {{{D2}}} : tensor<8x1xi32> -> tensor<8x2xi32>",
     f'%bc = "tt.broadcast"(%e) {{{D2}}} : (tensor<8x1xi32>) -> tensor<8x2xi32>'),
    (f"%tr = tt.trans %bc {{order = array<i32: 1, 0>, {D2}}} : tensor<8x2xi32> -> tensor<2x8xi32>",
     f'%tr = "tt.trans"(%bc) {{order = array<i32: 1, 0>, {D2}}} : (tensor<8x2xi32>) -> tensor<2x8xi32>'),
    (f"%w_6 = tt.reshape %w {{{D2}}} : tensor<16xi32> -> tensor<2x8xi32>",
     f'%w_6 = "tt.reshape"(%w) {{{D2}}} : (tensor<16xi32>) -> tensor<2x8xi32>'),
    (f"%jn = tt.join %ps, %offs {{{D2}}} : tensor<16xi32> -> tensor<16x2xi32>",
     f'%jn = "tt.join"(%ps, %offs) {{{D2}}} : (tensor<16xi32>, tensor<16xi32>) -> tensor<16x2xi32>'),
    (f"%outLHS, %outRHS = tt.split %1 {{{D1}}} : tensor<16x2xi32> -> tensor<16xi32>",
     f'%outLHS, %outRHS = "tt.split"(%1) {{{D1}}} : (tensor<16x2xi32>) -> (tensor<16xi32>, tensor<16xi32>)'),
    (f"%ct = tt.cat %offs, %offs {{{D1}}} : tensor<8xi32> -> tensor<16xi32>",
     f'%ct = "tt.cat"(%offs, %offs) {{{D1}}} : (tensor<8xi32>, tensor<8xi32>) -> tensor<16xi32>'),
    (f"%mh = tt.mulhiui %offs, %offs {{{D1}}} : tensor<8xi32>",
     f'%mh = "tt.mulhiui"(%offs, %offs) {{{D1}}} : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>'),
    (f"%g = tt.gather %offs[%offs] {{axis = 0 : i32, {D1}}} : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>",
     f'%g = "tt.gather"(%offs, %offs) {{axis = 0 : i32, {D1}}} : (tensor<8xi32>, tensor<8xi32>) -> '
     "tensor<8xi32>"),
    (f"%h = tt.histogram %offs {{{D1}}} : tensor<8xi32> -> tensor<8xi32>",
     f'%h = "tt.histogram"(%offs) {{{D1}}} : (tensor<8xi32>) -> tensor<8xi32>'),
    (f"%a_7 = tt.atomic_rmw add, acq_rel, gpu, %a_6, %c1_i64, %a {{{D1}}} : (!tt.ptr<i64>, i64, i1) -> i64",
     f'%a_7 = "tt.atomic_rmw"(%a_6, %c1_i64, %a) {{{D1}, atomic_rmw_op = "add", sem = "acq_rel", '
     'scope = "gpu"} : (!tt.ptr<i64>, i64, i1) -> i64'),
    (f"%c_11 = tt.atomic_cas acq_rel, gpu, %c_8, %c, %c_10 {{{D1}}} : (!tt.ptr<i64>, i64, i64) -> i64",
     f'%c_11 = "tt.atomic_cas"(%c_8, %c, %c_10) {{{D1}, sem = "acq_rel", scope = "gpu"}} : '
     "(!tt.ptr<i64>, i64, i64) -> i64"),
    (f"%dd_17 = tt.dot %dd_16, %dd_16, %dd, inputPrecision = tf32 {{{D2}}} : tensor<16x16xi8> * "
     "tensor<16x16xi8> -> tensor<16x16xi32>",
     f'%dd_17 = "tt.dot"(%dd_16, %dd_16, %dd) {{{D2}, inputPrecision = "tf32"}} : (tensor<16x16xi8>, '
     "tensor<16x16xi8>, tensor<16x16xi32>) -> tensor<16x16xi32>"),
    (f"%f8 = tt.fp_to_fp %v_5 {{{D1}}}, rounding = rtne : tensor<16xf32> -> tensor<16xf8E5M2>",
     f'%f8 = "tt.fp_to_fp"(%v_5) {{{D1}, rounding = "rtne"}} : (tensor<16xf32>) -> tensor<16xf8E5M2>'),
    (f"%c_5 = tt.clampf %f_4, %c_0, %c, propagateNan = none {{{D1}}} : tensor<8xf32>",
     f'%c_5 = "tt.clampf"(%f_4, %c_0, %c) {{{D1}, propagateNan = "none"}} : '
     "(tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>"),
    (f"%s = tt.precise_sqrt %f_4 {{{D1}}} : tensor<8xf32>",
     f'%s = "tt.precise_sqrt"(%f_4) {{{D1}}} : (tensor<8xf32>) -> tensor<8xf32>'),
    (f"%d_7 = tt.precise_divf %f_4, %d_6 {{{D1}}} : tensor<8xf32>",
     f'%d_7 = "tt.precise_divf"(%f_4, %d_6) {{{D1}}} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>'),
]


@pytest.mark.parametrize("custom, generic", CASES + HINTED)
def test_op_forms(custom, generic):
    out = rewrite_ttir("    " + custom + " loc(#loc3)\n")
    assert out == "    " + generic + " loc(#loc3)\n"


def test_func_and_return_become_func_dialect_and_parse():
    text = """#loc = loc("k.py":1:1)
#loc2 = loc("k.py":3:5)
module {
  tt.func public @k(%a: !tt.ptr<f32> loc("a"(#loc)), %n: i32 loc("n"(#loc))) attributes {noinline = false} {
    %0 = tt.splat %n : i32 -> tensor<4xi32> loc(#loc2)
    %1 = "tt.reduce"(%0) <{axis = 0 : i32}> ({
    ^bb0(%x: i32 loc(#loc2), %y: i32 loc(#loc2)):
      %s = arith.addi %x, %y : i32 loc(#loc2)
      tt.reduce.return %s : i32 loc(#loc2)
    }) : (tensor<4xi32>) -> i32 loc(#loc2)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
"""
    out = rewrite_ttir(text)
    assert "func.func public @k" in out and "func.return" in out
    module = ir.Module.parse(out, new_context())
    ops = [op.name for op in module.body.operations[0].regions[0].blocks[0].operations]
    assert ops == ["tt.splat", "tt.reduce", "func.return"]


def test_unknown_op_is_a_compile_error_at_the_kernel_line():
    text = '    %0 = tt.mystery %a : i32 loc(#loc7)\n#loc7 = loc("kern.py":12:3)\n'
    with pytest.raises(CompileError, match="'tt.mystery' is not supported") as err:
        rewrite_ttir(text)
    assert (err.value.loc.filename, err.value.loc.lineno) == ("kern.py", 12)


def test_a_form_not_read_is_a_compile_error_at_the_kernel_line():
    """Named as an unsupported form of the op, at the kernel's line (not at a line of
    Triton's library that the op was inlined from)."""
    text = ('    %0 = tt.addptr %a : i32 loc(#loc9)\n#loc7 = loc("kern.py":12:3)\n'
            '#loc8 = loc("/site-packages/triton/language/standard.py":40:5)\n'
            "#loc9 = loc(callsite(#loc8 at #loc7))\n")
    with pytest.raises(CompileError, match=r"operation 'tt\.addptr' in this form is not supported "
                       r"by the DPU backend: %0 = tt\.addptr %a : i32$") as err:
        rewrite_ttir(text)
    assert (err.value.loc.filename, err.value.loc.lineno) == ("kern.py", 12)


def test_loc_aliases_resolve_through_names():
    table = LocTable('#loc1 = loc("f.py":4:2)\n#loc2 = loc("x"(#loc1))\n')
    assert table.resolve("loc(#loc2)").lineno == 4


def test_split_top_respects_brackets_and_strings():
    assert split_top('%a, tensor<2x!tt.ptr<f32>>, "x, y", {a = 1, b = 2}') == \
        ["%a", "tensor<2x!tt.ptr<f32>>", '"x, y"', "{a = 1, b = 2}"]


def test_a_parse_error_names_the_kernel_line_not_the_rewritten_text():
    from edsl.backend.ttir_text import read_ttir
    text = """#loc = loc("k.py":1:1)
#loc4 = loc("k.py":4:7)
module {
  tt.func public @k(%a: i32 loc(#loc)) {
    %0 = arith.addi %a, %undefined : i32 loc(#loc4)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
"""
    with pytest.raises(CompileError, match=r"TTIR line 5: %0 = arith.addi") as err:
        read_ttir(text, new_context())
    assert (err.value.loc.filename, err.value.loc.lineno) == ("k.py", 4)
