"""The C printer against MLIR's own JIT: small LLVM-dialect functions are run
through the ExecutionEngine and through the printed C (compiled with the host C
compiler), on the same inputs; the DPU runtime library printed from its IR
(its DMA routine against edsl.target.dpu); and ops the printer does not know are
errors."""
import ctypes
import math
import subprocess

import numpy as np
import pytest
from mlir import ir
from mlir.execution_engine import ExecutionEngine

from hypothesis import given, settings, strategies as st

from edsl.dpu import support
from edsl.target import dpu as abi
from edsl.base.errors import CompileError
from edsl.export.printer import print_module
from export_helpers import needs_cc

I64_FUNCS = """
  llvm.func @int_ops(%a: i64, %b: i64) -> i64 {
    %c7 = llvm.mlir.constant(7 : i64) : i64
    %t8 = llvm.trunc %a : i64 to i8
    %u8 = llvm.trunc %b : i64 to i8
    %m8 = llvm.mul %t8, %u8 : i8
    %s8 = llvm.sext %m8 : i8 to i64
    %z8 = llvm.zext %m8 : i8 to i64
    %d = llvm.sdiv %a, %c7 : i64
    %r = llvm.srem %a, %c7 : i64
    %ud = llvm.udiv %b, %c7 : i64
    %sh = llvm.ashr %a, %c7 : i64
    %lsh = llvm.lshr %a, %c7 : i64
    %x1 = llvm.xor %s8, %z8 : i64
    %x2 = llvm.add %x1, %d : i64
    %x3 = llvm.mul %x2, %r : i64
    %x4 = llvm.sub %x3, %ud : i64
    %x5 = llvm.xor %x4, %sh : i64
    %x6 = llvm.add %x5, %lsh : i64
    llvm.return %x6 : i64
  }
  llvm.func @compares(%a: i64, %b: i64) -> i64 {
    %ta = llvm.trunc %a : i64 to i16
    %tb = llvm.trunc %b : i64 to i16
    %c1 = llvm.icmp "slt" %ta, %tb : i16
    %c2 = llvm.icmp "ult" %ta, %tb : i16
    %c3 = llvm.icmp "sge" %a, %b : i64
    %c4 = llvm.icmp "ugt" %a, %b : i64
    %e1 = llvm.zext %c1 : i1 to i64
    %e2 = llvm.zext %c2 : i1 to i64
    %e3 = llvm.sext %c3 : i1 to i64
    %e4 = llvm.zext %c4 : i1 to i64
    %c2x = llvm.mlir.constant(2 : i64) : i64
    %c4x = llvm.mlir.constant(4 : i64) : i64
    %f2 = llvm.mul %e2, %c2x : i64
    %f4 = llvm.mul %e4, %c4x : i64
    %s1 = llvm.add %e1, %f2 : i64
    %s2 = llvm.add %s1, %f4 : i64
    %s3 = llvm.add %s2, %e3 : i64
    %sel = llvm.select %c1, %s3, %a : i1, i64
    %mx = llvm.intr.smax(%sel, %b) : (i64, i64) -> i64
    %mn = llvm.intr.umin(%mx, %a) : (i64, i64) -> i64
    %ab = "llvm.intr.abs"(%mn) <{is_int_min_poison = false}> : (i64) -> i64
    %pc = llvm.intr.ctpop(%ab) : (i64) -> i64
    %r = llvm.add %ab, %pc : i64
    llvm.return %r : i64
  }
  llvm.func @swap_loop(%n: i64, %unused: i64) -> i64 {
    %c0 = llvm.mlir.constant(0 : i64) : i64
    %c1 = llvm.mlir.constant(1 : i64) : i64
    %c20 = llvm.mlir.constant(20 : i64) : i64
    %k = llvm.urem %n, %c20 : i64
    llvm.br ^loop(%c0, %c1, %c0 : i64, i64, i64)
  ^loop(%a: i64, %b: i64, %i: i64):
    %more = llvm.icmp "slt" %i, %k : i64
    llvm.cond_br %more, ^body, ^done
  ^body:
    %s = llvm.add %a, %b : i64
    %i1 = llvm.add %i, %c1 : i64
    %odd = llvm.and %i, %c1 : i64
    %is_odd = llvm.icmp "ne" %odd, %c0 : i64
    llvm.cond_br %is_odd, ^loop(%b, %a, %i1 : i64, i64, i64), ^loop(%b, %s, %i1 : i64, i64, i64)
  ^done:
    %sw = llvm.trunc %k : i64 to i32
    llvm.switch %sw : i32, ^out(%a : i64) [
      3: ^out(%b : i64),
      5: ^out(%c0 : i64)
    ]
  ^out(%v: i64):
    llvm.return %v : i64
  }
  llvm.func @memory(%a: i64, %b: i64) -> i64 {
    %c1 = llvm.mlir.constant(1 : i64) : i64
    %c4 = llvm.mlir.constant(4 : i64) : i64
    %c16 = llvm.mlir.constant(16 : i64) : i64
    %buf = llvm.alloca %c4 x i64 {alignment = 8 : i64} : (i64) -> !llvm.ptr
    %buf2 = llvm.alloca %c4 x i64 {alignment = 8 : i64} : (i64) -> !llvm.ptr
    %p1 = llvm.getelementptr %buf[1] : (!llvm.ptr) -> !llvm.ptr, i64
    %p3 = llvm.getelementptr %buf[%c1, 2] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.array<2 x i64>
    llvm.store %a, %buf : i64, !llvm.ptr
    llvm.store %b, %p1 : i64, !llvm.ptr
    llvm.store %a, %p3 : i64, !llvm.ptr
    "llvm.intr.memcpy"(%buf2, %buf, %c16) <{isVolatile = false}> : (!llvm.ptr, !llvm.ptr, i64) -> ()
    %q1 = llvm.getelementptr %buf2[1] : (!llvm.ptr) -> !llvm.ptr, i64
    %v = llvm.load %q1 : !llvm.ptr -> i64
    %w = llvm.load %p3 : !llvm.ptr -> i64
    %s0 = llvm.mlir.poison : !llvm.struct<(i64, array<2 x i32>, ptr)>
    %t = llvm.trunc %v : i64 to i32
    %s1 = llvm.insertvalue %w, %s0[0] : !llvm.struct<(i64, array<2 x i32>, ptr)>
    %s2 = llvm.insertvalue %t, %s1[1, 1] : !llvm.struct<(i64, array<2 x i32>, ptr)>
    %s3 = llvm.insertvalue %t, %s2[1, 0] : !llvm.struct<(i64, array<2 x i32>, ptr)>
    %e0 = llvm.extractvalue %s3[0] : !llvm.struct<(i64, array<2 x i32>, ptr)>
    %e1 = llvm.extractvalue %s3[1, 1] : !llvm.struct<(i64, array<2 x i32>, ptr)>
    %e1w = llvm.sext %e1 : i32 to i64
    %r = llvm.mul %e0, %e1w : i64
    %pi = llvm.ptrtoint %p1 : !llvm.ptr to i64
    %pb = llvm.ptrtoint %buf : !llvm.ptr to i64
    %diff = llvm.sub %pi, %pb : i64
    %r2 = llvm.add %r, %diff : i64
    llvm.return %r2 : i64
  }
"""

F32_FUNCS = """
  llvm.func @float_ops(%a: f32, %b: f32) -> f32 {
    %one = llvm.mlir.constant(1.000000e-01 : f32) : f32
    %inf = llvm.mlir.constant(0x7F800000 : f32) : f32
    %s = llvm.fadd %a, %one : f32
    %p = llvm.fmul %s, %b : f32
    %q = llvm.fdiv %p, %a : f32
    %n = llvm.fneg %q : f32
    %e = llvm.intr.exp(%b) : (f32) -> f32
    %sq = llvm.intr.sqrt(%e) : (f32) -> f32
    %mx = llvm.intr.maxnum(%n, %sq) : (f32, f32) -> f32
    %mm = llvm.intr.maximum(%mx, %a) : (f32, f32) -> f32
    %fa = llvm.intr.fabs(%mm) : (f32) -> f32
    %fm = llvm.intr.fmuladd(%fa, %b, %one) : (f32, f32, f32) -> f32
    %u = llvm.fcmp "uno" %a, %b : f32
    %o = llvm.fcmp "ult" %a, %b : f32
    %r1 = llvm.select %u, %inf, %fm : i1, f32
    %r2 = llvm.select %o, %r1, %fa : i1, f32
    %i = llvm.fptosi %r2 : f32 to i32
    %back = llvm.sitofp %i : i32 to f32
    %bits = llvm.bitcast %r2 : f32 to i32
    %c1 = llvm.mlir.constant(1 : i32) : i32
    %bits2 = llvm.and %bits, %c1 : i32
    %bf = llvm.uitofp %bits2 : i32 to f32
    %d = llvm.fpext %back : f32 to f64
    %d2 = llvm.fptrunc %d : f64 to f32
    %t1 = llvm.fadd %d2, %bf : f32
    %t2 = llvm.fadd %t1, %r2 : f32
    llvm.return %t2 : f32
  }
"""


def _module(body: str):
    ctx = ir.Context()
    return ir.Module.parse("module {" + body + "}", ctx)


def _c_library(tmp_path, body: str, names, ctype: str):
    prog = print_module(_module(body), list(names), all_tasklets=False)
    wrappers = "\n".join(f"{ctype} test_{n}({ctype} a, {ctype} b) {{ return {prog.names[n]}(a, b); }}"
                         for n in names)
    src = "\n".join([
        "#include <stdint.h>", "#include <stdbool.h>", "#include <stddef.h>", "#include <math.h>",
        "#define __mram_ptr", "#define __dma_aligned __attribute__((aligned(8)))",
        "#define NR_TASKLETS 1", "static unsigned me(void) { return 0; }",
        "static inline void edsl_copy(void *d, const void *s, uint32_t n) "
        "{ for (uint32_t i = 0; i < n; i++) ((uint8_t *)d)[i] = ((const uint8_t *)s)[i]; }",
        "static inline float edsl_maximumf(float a, float b) "
        "{ if (a != a || b != b) return a + b; if (a == b) return signbit(a) ? b : a; return a > b ? a : b; }",
        *prog.types, *prog.globals, *prog.prototypes, *prog.functions, wrappers])
    (tmp_path / "t.c").write_text(src)
    r = subprocess.run(["cc", "-O1", "-std=gnu11", "-fPIC", "-shared", "-fno-strict-aliasing",
                        "-o", str(tmp_path / "t.so"), str(tmp_path / "t.c"), "-lm"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + src
    return ctypes.CDLL(str(tmp_path / "t.so"))


def _jit_call(engine, name, args, ct):
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(engine.raw_lookup(name))
    values = [ct(a) for a in args]
    result = ct(0)
    ptrs = (ctypes.c_void_p * 3)(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values],
                                 ctypes.cast(ctypes.pointer(result), ctypes.c_void_p))
    fn(ptrs)
    return result.value


INTS = [0, 1, -1, 7, -7, 100, -129, 255, 1000003, -2**31, 2**31 + 5, 2**62 + 3, -2**63]


@needs_cc
def test_integer_ops_match_the_jit(tmp_path):
    names = ["int_ops", "compares", "swap_loop", "memory"]
    lib = _c_library(tmp_path, I64_FUNCS, names, "int64_t")
    engine = ExecutionEngine(_module(I64_FUNCS), opt_level=0)
    for name in names:
        f = getattr(lib, f"test_{name}")
        f.restype, f.argtypes = ctypes.c_int64, [ctypes.c_int64] * 2
        for a in INTS:
            for b in INTS[:7]:
                if name == "int_ops" and a == -2**63:
                    continue     # sdiv overflow is undefined in both
                want = _jit_call(engine, name, [a, b], ctypes.c_int64)
                assert f(a, b) == want, (name, a, b)


FLOATS = [0.0, -0.0, 1.5, -2.25, 3.0e-3, 88.0, -1e30, math.inf, -math.inf, math.nan]


@needs_cc
def test_float_ops_match_the_jit(tmp_path):
    lib = _c_library(tmp_path, F32_FUNCS, ["float_ops"], "float")
    engine = ExecutionEngine(_module(F32_FUNCS), opt_level=0)
    f = lib.test_float_ops
    f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float] * 2
    for a in FLOATS:
        for b in FLOATS:
            want = _jit_call(engine, "float_ops", [a, b], ctypes.c_float)
            got = f(a, b)
            if not np.isfinite(np.float32(want)) or abs(want) > 2**31:
                continue     # fptosi out of range: undefined in both
            assert got == pytest.approx(want, rel=1e-6, abs=1e-6), (a, b)


def test_unknown_op_is_an_error_naming_it():
    body = """
  llvm.func @f(%a: i64) -> i64 {
    %r = llvm.intr.bitreverse(%a) : (i64) -> i64
    llvm.return %r : i64
  }"""
    with pytest.raises(CompileError, match="llvm.intr.bitreverse"):
        print_module(_module(body), ["f"])
    body = """
  llvm.func @g(%p: !llvm.ptr, %c: i64) -> i64 {
    %r = llvm.atomicrmw add %p, %c monotonic : !llvm.ptr, i64
    llvm.return %r : i64
  }"""
    with pytest.raises(CompileError, match="llvm.atomicrmw"):
        print_module(_module(body), ["g"])


def test_unsupported_types_and_callees_are_errors():
    body = """
  llvm.func @h(%a: f16) -> f16 {
    llvm.return %a : f16
  }"""
    with pytest.raises(CompileError, match="f16"):
        print_module(_module(body), ["h"])
    body = """
  llvm.func @printf(!llvm.ptr, ...) -> i32
  llvm.func @k(%p: !llvm.ptr) {
    %r = llvm.call @printf(%p) vararg(!llvm.func<i32 (ptr, ...)>) : (!llvm.ptr) -> i32
    llvm.return
  }"""
    with pytest.raises(CompileError, match="stdio"):
        print_module(_module(body), ["k"])
    body = """
  llvm.func @mystery(i64) -> i64
  llvm.func @k(%a: i64) -> i64 {
    %r = llvm.call @mystery(%a) : (i64) -> i64
    llvm.return %r : i64
  }"""
    with pytest.raises(CompileError, match="mystery"):
        print_module(_module(body), ["k"])


def test_runtime_calls_map_to_the_sdk():
    body = """
  llvm.func @edsl_dpu_me() -> i32
  llvm.func @edsl_dpu_nr_tasklets() -> i32
  llvm.func @edsl_dpu_barrier()
  llvm.func @k(%a: i32) -> i32 {
    %t = llvm.call @edsl_dpu_me() : () -> i32
    %n = llvm.call @edsl_dpu_nr_tasklets() : () -> i32
    llvm.call @edsl_dpu_barrier() : () -> ()
    %r = llvm.add %t, %n : i32
    llvm.return %r : i32
  }"""
    prog = print_module(_module(body), ["k"])
    text = "\n".join(prog.functions)
    assert "me()" in text and "NR_TASKLETS" in text and "barrier_wait(&edsl_barrier)" in text
    assert "edsl_dpu_me" not in text and "edsl_dpu_barrier" not in text


# -- the DPU runtime library, printed ----------------------------------------------------
def _linked(body: str = ""):
    """A module with the DPU runtime library linked in (as the export does)."""
    module = _module(body)
    with module.context:
        support.link(module)
    return module


def test_the_runtime_library_prints_from_its_ir_with_only_the_machine_mapped():
    prog = print_module(_linked(), [abi.DMA, abi.MRAM_READ, abi.MRAM_WRITE, abi.ASSERT_FAIL, abi.BOUNDS_FAIL])
    text = "\n".join(prog.functions)
    printed = {prog.names[s] for s in (abi.DMA, abi.FAIL, abi.MRAM_READ, abi.MRAM_WRITE, abi.ASSERT_FAIL,
                                       abi.BOUNDS_FAIL)}
    assert all(f"static void {name}(" in text for name in printed)
    # the copies of a transfer are the SDK's, the running tasklet's context is edsl_ctx[me()]
    assert "mram_read((const __mram_ptr void *)" in text and "mram_write(" in text
    assert "(void *)edsl_ctx[me()]" in text
    assert support.COPY_FROM_MRAM not in text and support.COPY_TO_MRAM not in text and abi.CTX not in text
    assert "pthread" not in text and "syscall" not in text
    # the flag that stops a DPU: volatile accesses (atomic in the IR)
    assert "*(volatile uint64_t *)" in text


def test_host_facilities_of_the_model_are_refused():
    """The model's thread-local context and futex barrier have no DPU
    equivalent: a function reaching them is an error naming the call."""
    with pytest.raises(CompileError, match="'edsl_dpu_enter' calls 'pthread_setspecific'.*host facility"):
        print_module(_linked(), [abi.ENTER])
    body = """
  llvm.func @syscall(i64, ...) -> i64
  llvm.func @wait(%p: !llvm.ptr) {
    %nr = llvm.mlir.constant(202 : i64) : i64
    %r = llvm.call @syscall(%nr, %p) vararg(!llvm.func<i64 (i64, ...)>) : (i64, !llvm.ptr) -> i64
    llvm.return
  }"""
    with pytest.raises(CompileError, match="'wait' calls 'syscall'"):
        print_module(_module(body), ["wait"])


def test_atomic_loads_and_stores_are_volatile_accesses():
    body = """
  llvm.func @flag(%p: !llvm.ptr, %v: i64) -> i64 {
    llvm.store %v, %p atomic release {alignment = 8 : i64} : i64, !llvm.ptr
    %r = llvm.load %p atomic acquire {alignment = 8 : i64} : !llvm.ptr -> i64
    %s = llvm.load volatile %p : !llvm.ptr -> i64
    %t = llvm.add %r, %s : i64
    llvm.return %t : i64
  }"""
    text = "\n".join(print_module(_module(body), ["flag"]).functions)
    assert text.count("*(volatile uint64_t *)") == 3


DMA_HARNESS = r"""
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#define __mram_ptr
#define __dma_aligned __attribute__((aligned(8)))
#define NR_TASKLETS 1
static unsigned me(void) { return 0; }
static int64_t edsl_ctx[1][1];
static void mram_read(const void *from, void *to, unsigned n) { memcpy(to, from, n); }
static void mram_write(const void *from, void *to, unsigned n) { memcpy(to, from, n); }
"""


@pytest.fixture(scope="module")
def printed_dma(tmp_path_factory):
    """The runtime's DMA routine printed as C and built with stand-in copies."""
    prog = print_module(_linked(), [abi.DMA])
    d = tmp_path_factory.mktemp("dma")
    src = "\n".join([DMA_HARNESS, *prog.types, *prog.globals, *prog.prototypes, *prog.functions,
                     f"void dma(uint64_t m, uint64_t w, uint64_t n, uint64_t dir, uint64_t site, void *ctx)"
                     f" {{ {prog.names[abi.DMA]}(m, w, n, dir, site, ctx); }}"])
    (d / "dma.c").write_text(src)
    r = subprocess.run(["cc", "-O1", "-std=gnu11", "-fPIC", "-shared", "-fno-strict-aliasing", "-o",
                        str(d / "dma.so"), str(d / "dma.c")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lib = ctypes.CDLL(str(d / "dma.so"))
    lib.dma.argtypes = [ctypes.c_uint64] * 5 + [ctypes.c_void_p]
    return lib


@needs_cc
@settings(max_examples=300, deadline=None)
@given(st.integers(0, 3000), st.integers(0, 600), st.integers(-8, 2100), st.sampled_from([abi.READ, abi.WRITE]))
def test_printed_dma_routine_checks_as_the_abi_says(printed_dma, mram_off, wram_off, n, direction):
    """The printed `__dpu_dma` against edsl.target.dpu: a transfer breaking the DMA
    rules, or leaving the launch's MRAM regions, is recorded (code, site,
    operands) and stops the DPU's later transfers; any other is counted and
    copied."""
    mram = np.arange(4096 + 8, dtype=np.int64).astype(np.uint8)
    wram = np.zeros(4096 + 8, dtype=np.uint8)              # room for any offset + size drawn
    mram_base = mram.ctypes.data + (-mram.ctypes.data % 8)     # 8-byte aligned
    wram_base = wram.ctypes.data + (-wram.ctypes.data % 8)
    regions = np.array([mram_base + 64, mram_base + 1088, mram_base + 2048, mram_base + 3072], dtype=np.int64)
    state = np.zeros(abi.DPU_SLOTS, dtype=np.int64)
    ctx = np.zeros(abi.CTX_SLOTS, dtype=np.int64)
    ctx[abi.Ctx.REGIONS], ctx[abi.Ctx.NREGIONS] = regions.ctypes.data, 2
    ctx[abi.Ctx.DPU] = state.ctypes.data
    m, w = mram_base + mram_off, wram_base + wram_off
    before_m, before_w = mram.copy(), wram.copy()
    printed_dma.dma(m, w, n, direction, 99, ctx.ctypes.data)

    inside = any(lo <= m and m + n <= hi for lo, hi in regions.reshape(2, 2))
    want = abi.Err.DMA_RULE if abi.dma_violation(m, w, n) else 0 if inside else abi.Err.MRAM_BOUNDS
    assert ctx[abi.Ctx.ERROR] == want
    if want:
        assert list(ctx[[abi.Ctx.ERR_SITE, abi.Ctx.ERR_MRAM, abi.Ctx.ERR_WRAM, abi.Ctx.ERR_BYTES,
                         abi.Ctx.ERR_DIR]]) == [99, m, w, n, direction]
        assert state[abi.Dpu.FAILED] == 1
        printed_dma.dma(regions[0], wram_base, 8, abi.READ, 1, ctx.ctypes.data)   # the DPU has stopped
        assert ctx[abi.Ctx.ERR_SITE] == 99 and ctx[abi.Ctx.READS] == 0
        assert (mram == before_m).all() and (wram == before_w).all()
        return
    count, nbytes = (abi.Ctx.READS, abi.Ctx.READ_BYTES) if direction == abi.READ else \
        (abi.Ctx.WRITES, abi.Ctx.WRITE_BYTES)
    assert ctx[count] == 1 and ctx[nbytes] == n and state[abi.Dpu.FAILED] == 0
    mo, wo = m - mram.ctypes.data, w - wram.ctypes.data
    if direction == abi.READ:
        assert (wram[wo:wo + n] == before_m[mo:mo + n]).all() and (mram == before_m).all()
    else:
        assert (mram[mo:mo + n] == before_w[wo:wo + n]).all() and (wram == before_w).all()
