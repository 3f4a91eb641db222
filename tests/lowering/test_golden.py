"""Golden checks on the three texts of a compiled function: `.mlir` (builder
level), `.llvm` (LLVM dialect, the text injected into kernels) and `.llir`
(LLVM IR), and on custom pass pipelines.
"""
import inspect
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import edsl
from edsl import InOut, Input

DESC_1D = "!llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>"
DESC_2D = "!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>"
DESC_1D_MRAM = "!llvm.struct<(ptr<255>, ptr<255>, i64, array<1 x i64>, array<1 x i64>)>"


def def_line(fn) -> int:
    """The line of the `def` of an edsl function (below its decorators)."""
    lines, first = inspect.getsourcelines(fn.__wrapped__)
    return first + next(k for k, text in enumerate(lines) if text.lstrip().startswith("def "))


def llvm_func_signature(text: str, name: str) -> str:
    m = re.search(rf"^\s*llvm\.func @{name}\((.*)\) -> (.*) \{{$", text, re.M)
    assert m, f"no llvm.func @{name} in:\n{text}"
    return m.group(0).strip()


@edsl.dialect
def saxpy(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], a: Input["f32"]):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]


@edsl.dialect
def scale2d(y: InOut["memref<?x?xf32>"], s: Input["f32"]):
    for i in range(y.shape[0]):
        for j in range(y.shape[1]):
            y[i, j] = y[i, j] * s


@edsl.dialect
def mram_to_wram(dst: InOut["memref<?xf32, WRAM>"], src: Input["memref<?xf32, MRAM>"]):
    buf = edsl.wram_alloc(64, edsl.f32)
    edsl.mram_read(src, buf, 256)
    for i in range(64):
        dst[i] = buf[i]


# --- .mlir ------------------------------------------------------------------------------

def test_mlir_is_builder_level():
    text = saxpy.mlir
    assert "func.func @saxpy(%arg0: memref<?xf32>, %arg1: memref<?xf32>, %arg2: f32) -> memref<?xf32>" in text
    assert "scf.for" in text
    assert "memref.load" in text and "memref.store" in text
    assert "arith.mulf" in text and "arith.addf" in text
    assert "llvm." not in text


def test_mlir_keeps_memory_spaces():
    text = mram_to_wram.mlir
    assert "memref<?xf32, 255>" in text
    assert "memref<?xf32, 0>" not in text  # WRAM is the default space: no attribute
    assert "memref<?xf32>" in text


# --- .llvm ------------------------------------------------------------------------------

def test_llvm_memref_descriptor_1d():
    text = saxpy.llvm
    sig = llvm_func_signature(text, "saxpy")
    # Each memref expands to (allocated, aligned, offset, size, stride); the InOut
    # memref is returned as its descriptor.
    assert sig == (
        "llvm.func @saxpy(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: i64, %arg3: i64, %arg4: i64, "
        "%arg5: !llvm.ptr, %arg6: !llvm.ptr, %arg7: i64, %arg8: i64, %arg9: i64, %arg10: f32) "
        f"-> {DESC_1D} {{")
    for dialect in ("scf.", "memref.", "arith.", "func.func", "cf."):
        assert dialect not in text
    assert "llvm.fmul" in text and "llvm.fadd" in text
    assert "llvm.load" in text and "llvm.store" in text


def test_llvm_memref_descriptor_2d():
    sig = llvm_func_signature(scale2d.llvm, "scale2d")
    assert sig.endswith(f"-> {DESC_2D} {{")
    assert sig.count("!llvm.ptr") == 2 and sig.count(": i64") == 5


def test_llvm_mram_memref_is_addrspace_255():
    text = mram_to_wram.llvm
    sig = llvm_func_signature(text, "mram_to_wram")
    # dst (WRAM, address space 0) then src (MRAM, address space 255).
    assert sig.startswith("llvm.func @mram_to_wram(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: i64, "
                          "%arg3: i64, %arg4: i64, %arg5: !llvm.ptr<255>, %arg6: !llvm.ptr<255>, ")
    assert sig.endswith(f"-> {DESC_1D} {{")
    assert "!llvm.ptr<255>" in text
    assert "!llvm.ptr<0>" not in text


def test_llvm_mram_descriptor():
    @edsl.dialect
    def touch(y: InOut["memref<?xf32, MRAM>"]):
        y[0] = 1.0

    assert llvm_func_signature(touch.llvm, "touch").endswith(f"-> {DESC_1D_MRAM} {{")


def test_llvm_text_parses_back():
    from mlir import ir
    with ir.Context():
        module = ir.Module.parse(saxpy.llvm)
        assert "llvm.func @saxpy" in str(module)


# --- .llir ------------------------------------------------------------------------------

def test_llir_is_llvm_ir():
    text = saxpy.llir
    assert re.search(r"^define \{ ptr, ptr, i64, \[1 x i64\], \[1 x i64\] \} @saxpy\(", text, re.M)
    assert "fmul float" in text and "fadd float" in text
    assert "llvm.func" not in text


def test_llir_mram_pointers():
    text = mram_to_wram.llir
    assert "ptr addrspace(255)" in text
    assert re.search(r"^define .*@mram_to_wram\(", text, re.M)


# --- pipelines ----------------------------------------------------------------------------

def make_fill(pipeline=None):
    @edsl.dialect(pipeline=pipeline)
    def fill(y: InOut["memref<?xf32>"], v: Input["f32"]):
        for i in range(y.shape[0]):
            y[i] = v
    return fill


def test_custom_pipeline_is_honoured():
    partial = make_fill(["convert-scf-to-cf"])
    text = partial.llvm
    assert "cf.cond_br" in text and "cf.br" in text  # scf lowered to cf ...
    assert "scf.for" not in text
    assert "memref.store" in text                     # ... and nothing more
    assert "llvm.func" not in text
    assert "scf.for" in partial.mlir                  # .mlir is before the pipeline


def test_pipeline_is_part_of_the_cache_key():
    default, partial = make_fill(), make_fill(["convert-scf-to-cf"])
    assert default.cache_key != partial.cache_key
    assert "llvm.func @fill" in default.llvm
    assert "llvm.func" not in partial.llvm
    assert "llvm.func" not in make_fill(["convert-scf-to-cf"]).llvm


def test_explicit_default_pipeline_gives_the_same_text():
    from edsl.lowering import DEFAULT_PIPELINE
    explicit = make_fill(list(DEFAULT_PIPELINE))
    assert explicit.llvm == make_fill().llvm
    y = np.zeros(5, np.float32)
    explicit(y, 2.5)
    np.testing.assert_array_equal(y, 2.5)


def test_unknown_pass_is_a_lowering_error():
    bad = make_fill(["convert-scf-to-cf", "no-such-pass"])
    with pytest.raises(edsl.LoweringError) as err:
        bad.llvm
    assert "no-such-pass" in err.value.message


def test_running_a_partially_lowered_function_is_a_lowering_error():
    partial = make_fill(["convert-scf-to-cf"])
    with pytest.raises(edsl.LoweringError) as err:
        partial(np.zeros(4, np.float32), 1.0)
    assert "LLVM" in err.value.message
    assert err.value.loc is not None and err.value.loc.lineno == def_line(partial)


PARTIAL_LLIR_SCRIPT = """
import edsl
from edsl import InOut

@edsl.dialect(pipeline=["convert-scf-to-cf"])
def fill(y: InOut["memref<?xf32>"]):
    for i in range(y.shape[0]):
        y[i] = 1.0

try:
    fill.llir
except edsl.LoweringError as err:
    print("LoweringError:", err.message)
"""


def test_llir_of_a_partially_lowered_function_is_a_lowering_error(tmp_path):
    # In a child process: translating a module that still holds func/memref ops
    # must raise LoweringError, not bring the interpreter down.
    script = tmp_path / "partial_llir.py"
    script.write_text(PARTIAL_LLIR_SCRIPT)
    env = dict(os.environ, EDSL_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, f"exit status {done.returncode}\n{done.stderr[-2000:]}"
    assert "LoweringError:" in done.stdout and "LLVM IR" in done.stdout


# --- cache --------------------------------------------------------------------------------

def test_compiled_text_is_cached_in_the_session_directory(edsl_cache_dir):
    key = saxpy.cache_key
    assert key
    saxpy.llvm
    entry = json.loads((edsl_cache_dir / f"{key}.json").read_text())
    assert entry["llvm"] == saxpy.llvm
    assert entry["mlir"] == saxpy.mlir


@edsl.dialect(fastmath=True)
def fast_sum(out: InOut["memref<1xf32>"], x: Input["memref<?xf32>"]):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    out[0] = s


def test_fastmath_marks_float_ops_and_keeps_results_close():
    assert "fastmath<fast>" in fast_sum.mlir
    assert "fastmath<fast>" not in vector_add_like_mlir()
    x = np.random.default_rng(1).standard_normal(10_001).astype(np.float32)
    out = np.zeros(1, np.float32)
    fast_sum(out, x)
    assert abs(float(out[0]) - float(x.astype(np.float64).sum())) < 1e-2


def vector_add_like_mlir():
    @edsl.dialect
    def plain_sum(out: InOut["memref<1xf32>"], x: Input["memref<?xf32>"]):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i]
        out[0] = s
    return plain_sum.mlir


def test_the_dpu_pipeline_folds_a_negative_index_fixup_on_a_loop_index():
    """A subscript's fix-up `i < 0 ? i + n : i` on a loop index counting up
    from 0 is decided by its value range before lowering (so the DPU time
    estimate does not count a check the built program does not contain)."""
    from mlir import ir

    from edsl.lowering.pipeline import DEFAULT_PIPELINE, run_pipeline
    src = """
    func.func @f(%m: memref<?xi32>, %n: index) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %neg = arith.cmpi slt, %i, %c0 : index
        %w = arith.addi %i, %n : index
        %j = arith.select %neg, %w, %i : index
        %v = memref.load %m[%j] : memref<?xi32>
        memref.store %v, %m[%i] : memref<?xi32>
      }
      return
    }"""
    with ir.Context():
        module = ir.Module.parse(src)
        run_pipeline(module, DEFAULT_PIPELINE)
        text = str(module)
    assert "llvm.select" not in text
    assert text.count("llvm.icmp") == 1          # the loop's own test
