"""`fl.call` on Triton's stock nvidia backend, compiled without a GPU: the
placeholders in TTIR/TTGIR, the library linked into the kernel, the order
check of the llir stage, the final PTX (barriers, the pool in dynamic shared
memory after Triton's, no call left), the stages hook and the kernel cache key."""
import gc
import importlib.util
import linecache
import os
import re
import sys
import textwrap

import pytest
import triton
import triton.language as tl
from hypothesis import given, settings, strategies as st
from triton import knobs
from triton.compiler.errors import CompilationError
from triton.runtime.errors import OutOfResources

import edsl
from edsl import InOut, Input, fl
from edsl.base.errors import CompileError
from edsl.gpu import stages
from edsl.inject import gpu_library as library
from edsl.inject.gpu_library import Operand, RunPlan, TileSlot
from gpu_helpers import barriers, compile_sm90, example, linked_libraries, static_shared
from gpu_kernels import prefix_sum, reverse, reverse_2d


@triton.jit
def reverse_kernel(x_ptr, o_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    y = fl.call(reverse, [tl.zeros_like(x)], [x])
    tl.store(o_ptr + offs, y)


@triton.jit
def chain_kernel(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, TILES: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    for t in range(TILES):
        x = tl.load(x_ptr + t * M * N + offs)
        y = fl.call(reverse_2d, [tl.zeros_like(x)], [x])
        z = fl.call(prefix_sum, [tl.zeros_like(x)], [y])
        tl.store(o_ptr + t * M * N + offs, z)


@triton.jit
def dot_kernel(a_ptr, b_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    acc = tl.dot(tl.load(a_ptr + rm[:, None] * K + rk[None, :]), tl.load(b_ptr + rk[:, None] * N + rn[None, :]))
    y = fl.call(prefix_sum, [tl.zeros_like(acc)], [acc])
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], y)


SIG_1D = {"x_ptr": "*fp32", "o_ptr": "*fp32"}
SIG_DOT = {"a_ptr": "*fp16", "b_ptr": "*fp16", "o_ptr": "*fp32"}


def _pool_bytes(cc, triton: bool = False) -> int:
    """The bytes of the calls' pool: the kernel's dynamic shared memory beyond
    Triton's own (`triton`: the kernel has some), where the LLVM IR places it;
    no static shared array."""
    assert static_shared(cc.asm["ptx"]) == {} and "__edsl_gpu_pool" not in cc.asm["llir"]
    at = re.findall(r"getelementptr \(i8, ptr addrspace\(3\) @global_smem, i64 (\d+)\)", cc.asm["llir"])
    assert at and len(set(at)) == 1, at
    offset = int(at[0])
    assert (offset > 0) == triton and offset % 16 == 0
    return cc.metadata.shared - offset


def _placeholder_lines(ttgir: str) -> list[str]:
    return [re.search(r'symbol = "__edsl_gpu_(\w+?)(?:_[0-9a-f]{16}_[0-9a-f]{12})?"', line).group(1)
            for line in ttgir.splitlines() if '"__edsl_gpu_' in line]


# --- the placeholders and what becomes of them -----------------------------------------

def test_a_call_is_sync_puts_run_gets_in_ttir_and_ttgir():
    cc = compile_sm90(reverse_kernel, SIG_1D, {"B": 128})
    for stage in ("ttir", "ttgir"):
        assert _placeholder_lines(cc.asm[stage]) == ["sync", "put_f32", "put_f32", "run", "get_f32"], stage
    put = next(line for line in cc.asm["ttgir"].splitlines() if "__edsl_gpu_put_f32" in line)
    assert "pure = false" in put and "tensor<128xf32, #blocked" in put and "tensor<128xi32, #blocked" in put


def test_ptx_of_a_call_has_its_barriers_and_pool_and_no_call():
    cc = compile_sm90(reverse_kernel, SIG_1D, {"B": 128})
    ptx = cc.asm["ptx"]
    assert barriers(ptx) == 3                               # before the puts, around the body
    assert _pool_bytes(cc) == 2 * 128 * 4                   # y then x, row-major
    assert "call" not in ptx                                # adapters and body inlined
    assert re.search(r"\bst\.shared\.(?:f32|b32)", ptx) and re.search(r"\bld\.shared\.(?:f32|b32)", ptx)


def test_kernel_without_fl_call_is_untouched():
    @triton.jit
    def plain(x_ptr, o_ptr, B: tl.constexpr):
        offs = tl.arange(0, B)
        tl.store(o_ptr + offs, tl.load(x_ptr + offs) * 2)
    ptx = compile_sm90(plain, SIG_1D, {"B": 128}).asm["ptx"]
    assert "__edsl" not in ptx and barriers(ptx) == 0


def test_calls_in_a_loop_chain_through_one_pool():
    cc = compile_sm90(chain_kernel, SIG_1D, {"M": 32, "N": 32, "TILES": 3})
    runs, elems = stages.placeholders(cc.asm["ttgir"])
    assert len(runs) == 2 and elems == {"f32"}
    assert _placeholder_lines(cc.asm["ttgir"]) == ["sync", "put_f32", "put_f32", "run", "get_f32"] * 2
    assert _pool_bytes(cc) == 2 * 32 * 32 * 4               # the larger call, not the sum
    assert barriers(cc.asm["ptx"]) == 6


@triton.jit
def branch_kernel(x_ptr, o_ptr, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    if tl.program_id(0) % 2 == 0:     # the same way for every thread of a CTA
        y = fl.call(reverse, [tl.zeros_like(x)], [x])
    else:
        y = x * 2
    tl.store(o_ptr + offs, y)


def test_a_call_in_a_branch_stays_in_its_block():
    cc = compile_sm90(branch_kernel, SIG_1D, {"B": 64})
    lines = cc.asm["ttgir"].splitlines()
    branch = next(i for i, line in enumerate(lines) if "scf.if" in line)
    calls = [i for i, line in enumerate(lines) if '"__edsl_gpu_' in line]
    assert calls and all(i > branch for i in calls)
    assert len(stages.placeholders(cc.asm["ttgir"])[0]) == 1 and barriers(cc.asm["ptx"]) == 3


def test_tl_dot_accumulator_is_staged_from_its_mma_layout():
    cc = compile_sm90(dot_kernel, SIG_DOT, {"M": 64, "N": 64, "K": 32})
    puts = [line for line in cc.asm["ttgir"].splitlines() if "__edsl_gpu_put_f32" in line]
    assert any("#mma" in line for line in puts), puts
    assert _pool_bytes(cc, triton=True) == 2 * 64 * 64 * 4   # after tl.dot's own shared memory


@settings(max_examples=6, deadline=None)
@given(rows=st.sampled_from([1, 2, 16, 32]), cols=st.sampled_from([16, 32, 128]))
def test_pool_offsets_are_row_major_for_any_tile(rows, cols):
    @triton.jit
    def tile_kernel(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
        offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
        x = tl.load(x_ptr + offs)
        tl.store(o_ptr + offs, fl.call(prefix_sum, [tl.zeros_like(x)], [x]))
    cc = compile_sm90(tile_kernel, SIG_1D, {"M": rows, "N": cols})
    assert _pool_bytes(cc) == 2 * rows * cols * 4
    plan = next(p for s, p in library_plans(cc).items())
    assert [o.tile for o in plan.operands] == [TileSlot((rows, cols), "f32", 0),
                                               TileSlot((rows, cols), "f32", rows * cols * 4)]


def library_plans(cc) -> dict:
    from edsl.gpu.placeholders import PLANS
    runs, _ = stages.placeholders(cc.asm["ttgir"])
    return {s: PLANS[s] for s in runs}


# --- the library -------------------------------------------------------------------------

def _plan(fn, *operands) -> RunPlan:
    return RunPlan(f"__edsl_gpu_run_test_{fn.__name__}", fn, tuple(operands))


def test_library_defines_pool_helpers_adapter_and_function():
    tile = "memref<?xf32, 3>"
    plan = _plan(reverse, Operand("tile", tile, TileSlot((128,), "f32", 0)),
                 Operand("tile", tile, TileSlot((128,), "f32", 512)))
    text, _ = library.build([plan], {"f32"})
    assert re.search(r"@__edsl_gpu_pool = external addrspace\(3\) global \[0 x i8\], align 16", text)
    assert re.search(r"define i32 @__edsl_gpu_sync\(i32 %0\)", text)
    assert re.search(r"define i32 @__edsl_gpu_put_f32\(float %0, i32 %1\)", text)
    assert re.search(r"define float @__edsl_gpu_get_f32\(i32 %0\)", text)
    callee = library.function_symbol(reverse)
    assert re.search(rf"define \{{.*\}} @{callee}\(ptr addrspace\(3\)", text)
    adapter = text[text.index("define i32 @__edsl_gpu_run_test_reverse"):]
    adapter = adapter[:adapter.index("\n}\n")]
    # y at offset 0 and x at 512: (allocated, aligned, offset 0, size 128, stride 1) each
    assert re.search(rf"call .*@{callee}\(ptr addrspace\(3\) @__edsl_gpu_pool, ptr addrspace\(3\) "
                     rf"@__edsl_gpu_pool, i64 0, i64 128, i64 1, ptr addrspace\(3\) getelementptr (?:inbounds )?(?:nuw )?"
                     rf"\(i8, ptr addrspace\(3\) @__edsl_gpu_pool, i64 512\), ", adapter), adapter
    assert adapter.count("barrier") == 2


@edsl.dialect
def add_pointers(out: Input["!llvm.ptr<global>"], x: Input["memref<?xf32, global>"], n: Input["i32"],
                 scale: Input["f16"]):
    for i in range(edsl.thread_id(), n, edsl.num_threads()):
        x[i] = x[i] * edsl.f32(scale)


def test_library_passes_pointers_and_scalars():
    plan = _plan(add_pointers, Operand("pointer", "!llvm.ptr<1>", arg_type="i64"),
                 Operand("pointer", "memref<?xf32, 1>", arg_type="i64"),
                 Operand("scalar", "i32", arg_type="i32"), Operand("scalar", "f16", arg_type="f16"))
    text, _ = library.build([plan], set())
    assert re.search(r"define i32 @__edsl_gpu_run_test_add_pointers\(i64 %0, i64 %1, i32 %2, half %3\)", text)
    adapter = text[text.index("define i32 @__edsl_gpu_run_test_add_pointers"):]
    assert "inttoptr i64 %0 to ptr addrspace(1)" in adapter and "inttoptr i64 %1 to ptr addrspace(1)" in adapter
    assert f"i64 {library.UNKNOWN_EXTENT}" in adapter   # the unknown extent of x


def test_library_pins_the_ctas_size_when_given():
    plan = _plan(add_pointers, Operand("pointer", "!llvm.ptr<1>", arg_type="i64"),
                 Operand("pointer", "memref<?xf32, 1>", arg_type="i64"),
                 Operand("scalar", "i32", arg_type="i32"), Operand("scalar", "f16", arg_type="f16"))
    free, _ = library.build([plan], set())
    assert "@llvm.nvvm.read.ptx.sreg.ntid.x()" in free
    pinned, _ = library.build([plan], set(), threads=256)
    assert "ntid" not in pinned                                  # num_threads() is the constant 256
    assert re.search(r"call range\(i32 0, 256\) i32 @llvm\.nvvm\.read\.ptx\.sreg\.tid\.x\(\)", pinned)


def test_a_loop_over_a_tile_by_thread_is_unrolled():
    # gpu_softmax's three passes over the row, `range(thread_id(), n, num_threads())`
    # on an 8192-element tile and 512 threads: 16 steps each, unrolled since the
    # CTA's size is known (no backward branch but the kernel's row loop).
    sm = example("gpu_softmax")
    sig = {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32", "out_stride": "i32", "n_rows": "i32",
           "n_cols": "i32"}
    ptx = compile_sm90(sm.softmax_kernel, sig, {"BLOCK": 8192, "WARPS": 16}, num_warps=16).asm["ptx"]
    loops = [label for label in re.findall(r"^\$(L__BB\d+_\d+):", ptx, re.M)
             if re.search(rf"^\s*(?:@%p\d+ |@!%p\d+ )?bra(?:\.uni)?\s+\${label};", ptx[ptx.index(f"${label}:"):], re.M)]
    assert len(loops) == 1, loops
    # the row's 16 elements a thread, read from the tile in each of the three passes
    assert len(re.findall(r"\bld\.shared\.(?:f32|b32)\s+%r\d+, \[%r\d+(?:\+\d+)?\];", ptx)) >= 3 * 16


def test_library_of_two_functions_shares_declarations():
    @edsl.dialect
    def expo(y: InOut["memref<?xf32>"]):
        for i in range(edsl.thread_id(), y.shape[0], edsl.num_threads()):
            y[i] = edsl.exp(y[i])

    @edsl.dialect
    def expo2(y: InOut["memref<?xf32>"]):
        y[0] = edsl.exp(y[0]) + 1.0

    tile = Operand("tile", "memref<?xf32, 3>", TileSlot((64,), "f32", 0))
    text, _ = library.build([_plan(expo, tile), _plan(expo2, tile)], {"f32"})
    assert text.count("declare float @__nv_expf(float)") == 1
    assert f"@{library.function_symbol(expo)}(" in text and f"@{library.function_symbol(expo2)}(" in text


# --- the order check of the llir stage ---------------------------------------------------

def _ttgir():
    return compile_sm90(reverse_kernel, SIG_1D, {"B": 128}).asm["ttgir"]


def _swap(text: str, first: str, second: str) -> str:
    lines = text.splitlines()
    a = next(i for i, line in enumerate(lines) if first in line)
    b = next(i for i, line in enumerate(lines) if second in line)
    lines[a], lines[b] = lines[b], lines[a]
    return "\n".join(lines)


def test_order_check_accepts_what_triton_prints():
    runs, elems = stages.placeholders(_ttgir())
    assert len(runs) == 1 and runs[0].startswith("__edsl_gpu_run_") and elems == {"f32"}


@pytest.mark.parametrize("first, second, message", [
    ("__edsl_gpu_run_", "__edsl_gpu_get_f32", "a get after the staging"),
    ("__edsl_gpu_sync", "__edsl_gpu_put_f32", "a put after the idle"),
])
def test_order_check_refuses_moved_placeholders(first, second, message):
    with pytest.raises(CompileError) as err:
        stages.placeholders(_swap(_ttgir(), first, second))
    assert message in err.value.message and "not compiled rather than compiled wrong" in err.value.message


def test_order_check_refuses_a_get_after_the_next_call_began():
    text = _ttgir()
    get = next(line for line in text.splitlines() if "__edsl_gpu_get_f32" in line)
    sync = next(line for line in text.splitlines() if "__edsl_gpu_sync" in line)
    with pytest.raises(CompileError):
        stages.placeholders(text.replace(get, sync + "\n" + get))


def test_order_check_refuses_warp_specialized_kernels():
    with pytest.raises(CompileError) as err:
        stages.placeholders(_ttgir() + "\n// ttg.warp_specialize")
    assert "warp-specialized" in err.value.message


def test_order_check_refuses_calls_nested_inside_staging():
    text = _ttgir()
    lines = text.splitlines()
    put = next(line for line in lines if "__edsl_gpu_put_f32" in line)
    whole_call = [line for line in lines if "__edsl_gpu_sync" in line or "__edsl_gpu_run_" in line]
    nested = "\n".join(["    scf.if %c {", *whole_call, "    }"])
    with pytest.raises(CompileError) as err:
        stages.placeholders(text.replace(put, put + "\n" + nested, 1))
    assert "inside the staging" in err.value.message


# --- errors at the kernel's line ----------------------------------------------------------

@triton.jit
def big_kernel(x_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, 128)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + offs, fl.call(prefix_sum, [tl.zeros_like(x)], [x]))


def test_tiles_beyond_48_kib_live_in_dynamic_shared_memory():
    cc = compile_sm90(big_kernel, SIG_1D, {"N": 64})
    assert _pool_bytes(cc) == 65536 and cc.metadata.shared == 65536   # Triton's launcher opts in to it


def test_tiles_beyond_what_a_block_may_opt_in_to_are_out_of_resources():
    with pytest.raises(OutOfResources) as err:        # (which Triton's autotuner skips)
        compile_sm90(big_kernel, SIG_1D, {"N": 256})
    assert "Required: 262144" in str(err.value) and "Hardware limit: 232448" in str(err.value)
    assert "fl.call's tiles take 262144 bytes after Triton's 0" in str(err.value)


LLIR_HEAD = """; ModuleID = 'LLVMDialectModule'
source_filename = "LLVMDialectModule"
target datalayout = "e-p3:32:32"

"""


@pytest.mark.parametrize("triton_bytes, offset", [(0, 0), (8192, 8192), (8200, 8208)])
def test_the_pool_is_placed_after_tritons_shared_memory(triton_bytes, offset):
    uses = ("@__edsl_gpu_pool = external addrspace(3) global [0 x i8], align 16\n"
            "define void @k() {\n  %1 = getelementptr i8, ptr addrspace(3) @__edsl_gpu_pool, i32 4\n"
            "  store float 0.0, ptr addrspace(3) @__edsl_gpu_pool\n  ret void\n}\n")
    smem = "@global_smem = external addrspace(3) global [0 x i8], align 16\n" if triton_bytes else ""
    text, shared = library.place_pool(LLIR_HEAD + smem + uses, triton_bytes, 1024)
    base = f"getelementptr (i8, ptr addrspace(3) @global_smem, i64 {offset})"
    assert shared == offset + 1024 and "@__edsl_gpu_pool" not in text
    assert f"ptr addrspace(3) {base}, i32 4" in text and f"store float 0.0, ptr addrspace(3) {base}" in text
    assert text.count("@global_smem = external addrspace(3) global [0 x i8], align 16") == 1
    assert text.index("@global_smem =") > text.index("target datalayout")      # after the header


@edsl.dialect
def global_out(y: InOut["memref<?xf32, global>"]):
    y[0] = 1.0


@triton.jit
def wrong_dtype_kernel(x_ptr, o_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs).to(tl.int32)
    tl.store(o_ptr + offs, fl.call(reverse, [x], [x]))


@triton.jit
def tile_for_pointer_kernel(x_ptr, o_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    fl.call(add_pointers, [], [tl.load(x_ptr + offs), x_ptr, 3, 1.0])


@triton.jit
def inout_in_global_kernel(x_ptr, o_ptr, B: tl.constexpr):
    fl.call(global_out, [x_ptr], [])


@pytest.mark.parametrize("kernel, message", [
    (wrong_dtype_kernel, "out 0 for parameter 'y' (memref<?xf32, 3>) has element type int32"),
    (tile_for_pointer_kernel, "in 0 for parameter 'out' (!llvm.ptr<1>) must be a pointer, got a tensor"),
    (inout_in_global_kernel, "InOut parameter 'y' (memref<?xf32, 1>) must be a memref in shared memory"),
])
def test_operand_mismatches_name_the_parameter(kernel, message):
    with pytest.raises(CompilationError) as err:
        compile_sm90(kernel, SIG_1D, {"B": 64})
    assert message in str(err.value)


@triton.jit
def pointer_kernel(x_ptr, o_ptr, n, B: tl.constexpr):
    fl.call(add_pointers, [], [o_ptr, x_ptr, n, 0.5])


def test_pointers_and_scalars_reach_the_adapter():
    cc = compile_sm90(pointer_kernel, {"x_ptr": "*fp32", "o_ptr": "*fp32", "n": "i32"}, {"B": 1})
    run = next(line for line in cc.asm["ttgir"].splitlines() if "__edsl_gpu_run_" in line)
    assert "(i64, i64, i32, f16) -> i32" in run
    assert "__edsl_gpu_put" not in cc.asm["ttgir"]
    assert barriers(cc.asm["ptx"]) == 3 and "ld.global" in cc.asm["ptx"] and "st.global" in cc.asm["ptx"]


# --- the examples ---------------------------------------------------------------------------

EXAMPLE_KERNELS = [
    ("gpu_vector_add", "add_kernel", {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {}),
    ("gpu_softmax", "softmax_kernel", {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32",
                                       "out_stride": "i32", "n_rows": "i32", "n_cols": "i32"}, {"BLOCK": 8192, "WARPS": 4}),
    ("gpu_matmul", "matmul_kernel", {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32",
                                     "K": "i32"}, {"BM": 64, "BN": 64, "BK": 32}),
    ("gpu_topk", "topk_kernel", {"x_ptr": "*fp32", "vals_ptr": "*fp32", "idx_ptr": "*i32", "n_cols": "i32"},
     {"BLOCK": 4096, "K": 16}),
    ("fl_softmax", "softmax_kernel", {"out_ptr": "*fp32", "in_ptr": "*fp32", "n_cols": "i32", "stride": "i32"},
     {"BLOCK": 512}),
    ("fl_matmul", "matmul_kernel", {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32",
                                    "K": "i32"}, {"BM": 16, "BN": 16, "BK": 16}),
    ("fl_topk", "topk_kernel", {"x_ptr": "*fp32", "vals_ptr": "*fp32", "idx_ptr": "*i32", "n_cols": "i32"},
     {"BLOCK": 256, "K": 8}),
]


@pytest.mark.parametrize("name, kernel, signature, constexprs", EXAMPLE_KERNELS, ids=[e[0] for e in EXAMPLE_KERNELS])
def test_examples_compile_to_a_cubin(name, kernel, signature, constexprs):
    cc = compile_sm90(getattr(example(name), kernel), signature, constexprs)
    assert cc.asm["cubin"] and "call" not in cc.asm["ptx"]
    assert barriers(cc.asm["ptx"]) >= 3


# --- the stages hook ------------------------------------------------------------------------

@pytest.fixture
def hook_slot():
    """Restore Triton's hook after a test changes it."""
    saved = knobs.runtime.add_stages_inspection_hook
    yield
    knobs.runtime.add_stages_inspection_hook = saved


def test_importing_fl_installs_the_hook_once():
    hook = knobs.runtime.add_stages_inspection_hook
    assert isinstance(hook, stages.StagesHook)
    assert stages.install() is hook


def test_a_hook_set_before_is_composed(hook_slot):
    seen = []

    def user_hook(*args):
        if not args:
            return "user-key", "user-hash"
        seen.append(sorted(args[1]))

    knobs.runtime.add_stages_inspection_hook = user_hook
    hook = stages.install()
    assert hook.inner is user_hook
    key, digest = hook()
    assert key.startswith("edsl-gpu-") and key.endswith("user-key") and digest != "user-hash"
    cc = compile_sm90(reverse_kernel, SIG_1D, {"B": 64})
    assert seen and "llir" in seen[0] and _pool_bytes(cc) == 2 * 64 * 4


def test_a_hook_set_after_is_an_error_at_the_call(hook_slot):
    knobs.runtime.add_stages_inspection_hook = lambda *args: ("k", "h") if not args else None
    with pytest.raises(CompilationError) as err:
        compile_sm90(reverse_kernel, SIG_1D, {"B": 32})
    assert "was replaced after edsl installed it" in str(err.value)
    assert "edsl.gpu.stages.install()" in str(err.value)



def test_the_library_is_built_with_the_collector_paused(monkeypatch):
    seen = []
    stock = library.build

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return stock(*args, **kwargs)

    monkeypatch.setattr(library, "build", spy)
    was = gc.isenabled()
    gc.enable()
    try:
        compile_sm90(reverse_kernel, SIG_1D, {"B": 256})
        assert seen == [False] and gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()

# --- the kernel's cache key -----------------------------------------------------------------

KERNEL_MODULE = textwrap.dedent('''
    import triton, triton.language as tl
    import edsl
    from edsl import InOut, Input, fl

    @edsl.dialect
    def body(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
        for i in range(edsl.thread_id(), y.shape[0], edsl.num_threads()):
            y[i] = x[i] BODY

    @triton.jit
    def kernel(x_ptr, o_ptr, B: tl.constexpr):
        offs = tl.arange(0, B)
        x = tl.load(x_ptr + offs)
        tl.store(o_ptr + offs, fl.call(body, [tl.zeros_like(x)], [x]))
''')


def _kernel_module(path, body: str, name: str):
    """The module at `path`, written with this EDSL body and imported afresh."""
    path.write_text(KERNEL_MODULE.replace("BODY", body))
    stamp = path.stat().st_mtime_ns + len(name) * 1_000_000_000   # a new time for each version
    os.utime(path, ns=(stamp, stamp))
    linecache.checkcache()
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_editing_the_edsl_function_changes_the_kernel_key(tmp_path):
    path = tmp_path / "kernels.py"
    first = _kernel_module(path, "* 2.0", "kernels_a").kernel.cache_key
    edited = _kernel_module(path, "* 3.0", "kernels_bb").kernel.cache_key
    back = _kernel_module(path, "* 2.0", "kernels_ccc").kernel.cache_key
    assert first != edited
    assert back == first


def test_the_key_holds_the_function_identity_and_the_gpu_code_version():
    from edsl.gpu import code_version
    (part,) = reverse.hash_attrs
    assert part.cache_key == f"{reverse.identity}/{code_version()}"
    assert reverse.__annotations__ == {"edsl": reverse.identity}


_KINDS = {"sync": "__edsl_gpu_sync", "put": "__edsl_gpu_put_f32", "run": "__edsl_gpu_run_0123456789abcdef_0123456789ab",
          "get": "__edsl_gpu_get_f32"}


def _block(kinds) -> str:
    ops = [f'    %{i} = tt.extern_elementwise %c0 {{libname = "", libpath = "", pure = false, '
           f'symbol = "{_KINDS[k]}"}} : (i32) -> i32 loc(#loc{i})' for i, k in enumerate(kinds)]
    return "module {\n  tt.func public @k() {\n" + "\n".join(ops) + "\n    tt.return\n  }\n}"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(sorted(_KINDS)), max_size=12))
def test_order_check_accepts_exactly_sequences_of_whole_calls(kinds):
    whole = re.fullmatch(r"(sync (put )*run (get )*)*", "".join(k + " " for k in kinds)) is not None
    try:
        stages.placeholders(_block(kinds))
        accepted = True
    except CompileError:
        accepted = False
    assert accepted == whole


# --- libdevice, linked only where something may call it --------------------------------

@triton.jit
def reverse_then_math_kernel(x_ptr, o_ptr, B: tl.constexpr, MATH: tl.constexpr):
    offs = tl.arange(0, B)
    y = fl.call(reverse, [tl.zeros([B], tl.float32)], [tl.load(x_ptr + offs)])
    if MATH:
        y = tl.sin(y) + tl.math.erf(y)        # lowered to libdevice calls by Triton
    tl.store(o_ptr + offs, y)


@pytest.mark.parametrize("math", [False, True])
def test_libdevice_is_linked_where_the_kernel_or_its_functions_may_call_it(math, monkeypatch):
    linked = linked_libraries(monkeypatch)
    cc = compile_sm90(reverse_then_math_kernel, {"x_ptr": "*fp32", "o_ptr": "*fp32"}, {"B": 128, "MATH": math})
    assert cc.asm["cubin"]
    assert ("libdevice" in linked[-1]) == math


def _softmax_like(y: InOut["memref<?xf32, shared>"]):
    for i in range(edsl.thread_id(), y.shape[0], edsl.num_threads()):
        y[i] = edsl.exp(y[i])


exp_fast, exp_precise = edsl.dialect(_softmax_like, fastmath=True), edsl.dialect(_softmax_like)


@triton.jit
def exp_kernel(x_ptr, o_ptr, B: tl.constexpr, FAST: tl.constexpr):
    offs = tl.arange(0, B)
    y = fl.call(exp_fast if FAST else exp_precise, [tl.load(x_ptr + offs)], [])
    tl.store(o_ptr + offs, y)


@pytest.mark.parametrize("fast", [False, True])
def test_fast_math_needs_no_libdevice(fast, monkeypatch):
    """A function compiled with fastmath computes exp by PTX's ex2.approx
    (ftz, as Triton's enable_reflect_ftz sets it) in its own module: the
    kernel links no libdevice. Without fastmath, libdevice's __nv_expf."""
    linked = linked_libraries(monkeypatch)
    cc = compile_sm90(exp_kernel, {"x_ptr": "*fp32", "o_ptr": "*fp32"}, {"B": 128, "FAST": fast})
    ptx = cc.asm["ptx"]
    assert ("libdevice" in linked[-1]) != fast
    assert "__nvvm_reflect" not in ptx          # (resolved by NVPTX's NVVMReflect)
    assert "ex2.approx.ftz.f32" in ptx      # (libdevice's __nv_expf ends in it too)
