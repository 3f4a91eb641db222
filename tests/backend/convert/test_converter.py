"""IR-text unit tests of the TTIR -> upstream MLIR conversion steps."""
import re

import pytest

from edsl.backend.convert import convert_ttir
from edsl.base.errors import CompileError, DpuError
from edsl.lowering import DEFAULT_PIPELINE, run_pipeline

HEAD = '#loc = loc("k.py":1:1)\n#loc5 = loc("k.py":5:3)\nmodule {\n'
TAIL = "    tt.return loc(#loc)\n  } loc(#loc)\n} loc(#loc)\n"
SIG = "  tt.func public @k(%x: !tt.ptr<f32> loc(#loc), %y: !tt.ptr<f32> loc(#loc), %n: i32 loc(#loc)) {\n"


def convert(body: str, **kw):
    module, info = convert_ttir(HEAD + SIG + body + TAIL, **kw)
    return str(module), info, module


VECTOR = """    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32> loc(#loc5)
    %ns = tt.splat %n : i32 -> tensor<64xi32> loc(#loc5)
    %m = arith.cmpi slt, %r, %ns : tensor<64xi32> loc(#loc5)
    %px = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>> loc(#loc5)
    %ax = tt.addptr %px, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32> loc(#loc5)
    %v = tt.load %ax, %m : tensor<64x!tt.ptr<f32>> loc(#loc5)
    %w = arith.mulf %v, %v : tensor<64xf32> loc(#loc5)
    %py = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>> loc(#loc5)
    %ay = tt.addptr %py, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32> loc(#loc5)
    tt.store %ay, %w, %m : tensor<64x!tt.ptr<f32>> loc(#loc5)
"""


def test_elementwise_chains_fuse_and_only_loads_get_buffers():
    text, info, _ = convert(VECTOR)
    views = re.findall(r"memref.view %arg\d+\[%\w+\]\[\] : memref<\?xi8> to (memref<\w+>)", text)
    assert views == ["memref<64xf32>"]                   # the load result, in the DPU's WRAM
    assert "memref.alloca" not in text
    assert [b.what for b in info.wram] == ["tt.load result", "DMA staging buffer"]
    assert info.wram_bytes == 256 + 272
    assert "tensor<" not in text and "tt." not in text
    assert text.count("call @__dpu_dma") >= 4          # load: span + element; store: span + element
    assert "arith.mulf" in text


def test_kernel_signature_and_main_loop():
    text, info, _ = convert(VECTOR)
    assert info.name == "k"
    assert re.search(r"func.func @k\(%arg0: i64, %arg1: i64, %arg2: i32, (%arg\d+: i32, ){6}%arg\d+: "
                     r"memref<\?xi8>, %arg\d+: !llvm.ptr\)", text)
    assert "func.func @__dpu_main" in text and "llvm.func @__dpu_dma(" in text
    assert "func.func @__dpu_launch" in text
    assert "call @edsl_dpu_me" not in text and "call @edsl_dpu_barrier" not in text   # one tasklet


def test_converted_module_lowers_to_llvm():
    _, _, module = convert(VECTOR)
    run_pipeline(module, DEFAULT_PIPELINE)
    assert "llvm.func @k" in str(module) and "scf." not in str(module)


def test_reduce_becomes_a_loop_carrying_the_accumulator():
    body = """    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32> loc(#loc5)
    %s = "tt.reduce"(%r) <{axis = 0 : i32}> ({
    ^bb0(%a: i32 loc(#loc5), %b: i32 loc(#loc5)):
      %t = arith.maxsi %a, %b : i32 loc(#loc5)
      tt.reduce.return %t : i32 loc(#loc5)
    }) : (tensor<16xi32>) -> i32 loc(#loc5)
    %p = tt.addptr %x, %s : !tt.ptr<f32>, i32 loc(#loc5)
    %f = arith.sitofp %s : i32 to f32 loc(#loc5)
    tt.store %p, %f : !tt.ptr<f32> loc(#loc5)
"""
    text, info, _ = convert(body)
    assert re.search(r"scf.for %\w+ = %c1 to %c16 step %c1\w* iter_args\(%\w+ = %\w+\) -> \(i32\)", text)
    assert "arith.maxsi" in text
    assert [b.what for b in info.wram] == ["DMA staging buffer"]


def test_loop_carried_tensor_gets_one_buffer():
    body = """    %c0 = arith.constant 0 : i32 loc(#loc5)
    %c1 = arith.constant 1 : i32 loc(#loc5)
    %z = arith.constant dense<0.0> : tensor<8xf32> loc(#loc5)
    %acc = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> (tensor<8xf32>) : i32 {
      %one = arith.constant dense<1.0> : tensor<8xf32> loc(#loc5)
      %b = arith.addf %a, %one : tensor<8xf32> loc(#loc5)
      scf.yield %b : tensor<8xf32> loc(#loc5)
    } loc(#loc5)
    %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32> loc(#loc5)
    %px = tt.splat %x : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>> loc(#loc5)
    %ax = tt.addptr %px, %r : tensor<8x!tt.ptr<f32>>, tensor<8xi32> loc(#loc5)
    tt.store %ax, %acc : tensor<8x!tt.ptr<f32>> loc(#loc5)
"""
    text, info, _ = convert(body)
    whats = [b.what for b in info.wram]
    assert "loop-carried tensor" in whats
    assert re.search(r"scf.for %\w+ = %\w+ to %arg2 step %\w+\s+: i32 \{", text)   # no tensor iter_args


def test_integer_division_gets_a_guarded_divisor():
    body = """    %q = arith.divsi %n, %n : i32 loc(#loc5)
    %f = arith.sitofp %q : i32 to f32 loc(#loc5)
    tt.store %x, %f : !tt.ptr<f32> loc(#loc5)
"""
    text, _, _ = convert(body)
    guard = text.index("arith.select")
    assert guard < text.index("arith.divsi")


def test_wram_budget_is_checked_against_the_limit():
    # Over the budget, the load result is kept in MRAM (test_spill.py); under
    # what staging alone needs, nothing helps.
    _, info, _ = convert(VECTOR, wram_limit=512)
    assert info.wram_bytes <= 512 and [r.what for r in info.spills] == ["tt.load result"]
    with pytest.raises(DpuError, match=r"needs 528 bytes of WRAM, more than the 200 bytes") as err:
        convert(VECTOR, wram_limit=200)
    assert "in WRAM stay 272 bytes for the DMA staging buffer" in str(err.value)
    assert err.value.loc.lineno == 5


def test_unlowered_op_names_itself_and_line():
    body = """    %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32> loc(#loc5)
    %h = tt.elementwise_inline_asm "mov $0, $1;" {constraints = "=r,r", packed_element = 1 : i32, pure = true} %r : tensor<8xi32> -> tensor<8xi32> loc(#loc5)
"""
    with pytest.raises(CompileError, match="'tt.elementwise_inline_asm' is not supported") as err:
        convert(body)
    assert (err.value.loc.filename, err.value.loc.lineno) == ("k.py", 5)
