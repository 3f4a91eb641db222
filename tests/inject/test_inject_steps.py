"""The region-op injector, step by step on IR text, then end to end: an EDSL
function inlined into a tiled host kernel, run and compared with NumPy."""
import ctypes

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from mlir import ir
from mlir.dialects import memref
from mlir.passmanager import PassManager

import edsl
from edsl import InOut, Input
from edsl.dpu.runtime import Program, build
from edsl.base.errors import DpuError
from edsl.lowering.walk import collect
from edsl.inject import (ParamKind, build_region, inline_regions, load_dialect, lower_placeholders,
                         stage_operands)
from edsl.lowering import DEFAULT_PIPELINE, run_pipeline


@edsl.dialect
def saxpy_tile(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], a: Input["f32"]):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]


@edsl.dialect
def scale_mram(y: InOut["memref<?xf32>"], p: Input["memref<?xf32, MRAM>"]):
    for i in range(y.shape[0]):
        y[i] = y[i] * p[i]


KERNEL = r'''
func.func private @tile_call(memref<4xf32>, memref<4xf32>, f32) -> memref<4xf32>
func.func @kernel(%x: memref<?xf32>, %y: memref<?xf32>, %a: f32) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %n = memref.dim %y, %c0 : memref<?xf32>
  scf.for %t = %c0 to %n step %c4 {
    %bx = memref.alloca() : memref<4xf32>
    %by = memref.alloca() : memref<4xf32>
    %sx = memref.subview %x[%t][4][1] : memref<?xf32> to memref<4xf32, strided<[1], offset: ?>>
    %sy = memref.subview %y[%t][4][1] : memref<?xf32> to memref<4xf32, strided<[1], offset: ?>>
    memref.copy %sx, %bx : memref<4xf32, strided<[1], offset: ?>> to memref<4xf32>
    memref.copy %sy, %by : memref<4xf32, strided<[1], offset: ?>> to memref<4xf32>
    %r = func.call @tile_call(%by, %bx, %a) : (memref<4xf32>, memref<4xf32>, f32) -> memref<4xf32>
    memref.copy %r, %sy : memref<4xf32> to memref<4xf32, strided<[1], offset: ?>>
  }
  return
}
'''


def _run(module, text):
    PassManager.parse(f"builtin.module({text})").run(module.operation)


def _inject_calls(module, fn):
    """Replace each func.call to the tile declaration by the EDSL region (steps b and a)."""
    calls = collect(module, lambda op: op.name == "func.call")
    kinds = [ParamKind.of(ir.Type.parse(p.type_text)) for p in fn.info.params]
    n_outs = sum(p.param.is_inout for p in fn.info.params)
    for call in calls:
        with call.location, ir.InsertionPoint(call):
            operands = list(call.operands)
            outs, _ = stage_operands(operands[:n_outs], lambda t: memref.alloca(t, [], []))
            packs = build_region(fn.llvm, fn.__name__, kinds, outs + operands[n_outs:],
                                 list(range(n_outs)))
        for r, p in zip(call.results, packs):
            r.replace_all_uses_with(p)
        call.erase()


@pytest.fixture
def ctx():
    with ir.Context() as c, ir.Location.unknown():
        load_dialect(c)
        yield c


def test_build_region_places_placeholders(ctx):
    m = ir.Module.parse(KERNEL)
    _inject_calls(m, saxpy_tile)
    m.operation.verify()
    text = str(m)
    assert '"edsl.region"' in text
    for op in ("extract_allocated_ptr", "extract_aligned_ptr", "extract_offset", "extract_sizes",
               "extract_strides", "pack"):
        assert f'"edsl.{op}"' in text
    assert "func.call" not in text
    # the EDSL body is there, its return now leaves the region
    assert "llvm.fmul" in text and "llvm.return" in text


def test_placeholders_become_descriptor_fields(ctx):
    m = ir.Module.parse(KERNEL)
    _inject_calls(m, saxpy_tile)
    assert lower_placeholders(m) > 0
    text = str(m)
    assert '"edsl.extract' not in text and '"edsl.pack' not in text
    assert "!llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>" in text
    assert "llvm.extractvalue" in text and "unrealized_conversion_cast" in text


def test_mram_operands_are_address_space_255(ctx):
    m = ir.Module.parse(r'''
    func.func private @tile_call(memref<8xf32>, memref<?xf32, 255>) -> memref<8xf32>
    func.func @k(%b: memref<8xf32>, %p: memref<?xf32, 255>) -> memref<8xf32> {
      %r = func.call @tile_call(%b, %p) : (memref<8xf32>, memref<?xf32, 255>) -> memref<8xf32>
      return %r : memref<8xf32>
    }''')
    _inject_calls(m, scale_mram)
    m.operation.verify()
    lower_placeholders(m)
    text = str(m)
    assert "!llvm.struct<(ptr<255>, ptr<255>, i64, array<1 x i64>, array<1 x i64>)>" in text
    assert "!llvm.ptr<255>" in text


def test_inline_splits_block_and_branches(ctx):
    m = ir.Module.parse(KERNEL)
    _inject_calls(m, saxpy_tile)
    _run(m, "convert-scf-to-cf")
    lower_placeholders(m)
    assert inline_regions(m) == 1
    m.operation.verify()
    text = str(m)
    assert '"edsl.region"' not in text
    assert text.count("llvm.return") == 0  # every region exit is a branch now
    assert "llvm.br" in text


def test_stage_operands_counts_wram(ctx):
    m = ir.Module.parse("func.func @k(%a: memref<4096xf32>, %b: memref<16xi8>) { return }")
    fn = m.body.operations[0]
    entry = fn.regions[0].blocks[0]
    with ir.InsertionPoint.at_block_begin(entry):
        bufs, nbytes = stage_operands(list(entry.arguments), lambda t: memref.alloca(t, [], []))
    assert nbytes == 4096 * 4 + 16 and len(bufs) == 2
    # (whether they fit WRAM is the call's check, with the kernel's line: tests/backend/test_errors.py)


def _compile_kernel():
    ctx = ir.Context()
    with ctx, ir.Location.unknown():
        load_dialect(ctx)
        m = ir.Module.parse(KERNEL)
        _inject_calls(m, saxpy_tile)
        m.operation.verify()
        _run(m, "convert-scf-to-cf")
        lower_placeholders(m)
        inline_regions(m)
        m.operation.verify()
        run_pipeline(m, [p for p in DEFAULT_PIPELINE if p != "convert-scf-to-cf"])
        assert "edsl." not in str(m)
        return ctx, Program(build(m, ["kernel"], "kernel"), "kernel")


_KERNEL = []


@settings(max_examples=25, deadline=None)
@given(tiles=st.integers(0, 8), a=st.floats(-4, 4, width=32), seed=st.integers(0, 2**16))
def test_injected_kernel_matches_numpy(tiles, a, seed):
    if not _KERNEL:
        _KERNEL.append(_compile_kernel())
    _, program = _KERNEL[0]
    rng = np.random.default_rng(seed)
    n = 4 * tiles
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    expect = np.float32(a) * x + y
    args = []
    for arr in (x, y):
        args += [ctypes.c_void_p(arr.ctypes.data), ctypes.c_void_p(arr.ctypes.data), ctypes.c_int64(0),
                 ctypes.c_int64(n), ctypes.c_int64(1)]
    args.append(ctypes.c_float(a))
    packed = (ctypes.c_void_p * len(args))(*(ctypes.addressof(v) for v in args))
    program.entry("kernel")(packed)
    np.testing.assert_allclose(y, expect, rtol=1e-6, atol=1e-6)
