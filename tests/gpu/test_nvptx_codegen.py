"""EDSL functions compiled for the nvptx64 target: `.llvm` / `.llir` text,
intrinsics with one meaning on both targets, memory spaces by name, math
through libdevice, and the errors for what one target does not have."""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
from mlir import ir
from mlir.dialects import arith, memref, nvvm, scf

import edsl
from edsl import InOut, Input
from source_lines import line_of


@edsl.dialect
def scale_rows(y: InOut["memref<?x?xf32>"], x: Input["memref<?x?xf32>"], a: Input["f32"]):
    t = edsl.thread_id()
    nt = edsl.num_threads()
    for i in range(t, y.shape[0], nt):
        for j in range(y.shape[1]):
            y[i, j] = a * x[i, j]
    edsl.barrier()


def test_portable_intrinsics_on_each_target():
    gpu = scale_rows.compile("nvptx64")
    assert "nvvm.read.ptx.sreg.tid.x" in gpu.llvm and "nvvm.read.ptx.sreg.ntid.x" in gpu.llvm
    assert "nvvm.barrier0" in gpu.llvm
    assert "edsl_dpu" not in gpu.llvm
    dpu = scale_rows.compile("upmem-dpu")
    assert "edsl_dpu_me" in dpu.llvm and "edsl_dpu_nr_tasklets" in dpu.llvm and "edsl_dpu_barrier" in dpu.llvm
    assert "nvvm" not in dpu.llvm


def test_llir_for_nvptx64():
    text = scale_rows.compile("nvptx64").llir
    assert 'target triple = "nvptx64-nvidia-cuda"' in text
    assert "@llvm.nvvm.read.ptx.sreg.tid.x()" in text
    assert "barrier" in text  # llvm.nvvm.barrier0 or its newer spelling
    # Tile parameters live in shared memory: their descriptors hold addrspace(3) pointers.
    define = next(line for line in text.splitlines() if line.startswith("define") and "@scale_rows" in line)
    params = define[define.index("@scale_rows("):]
    assert params.count("ptr addrspace(3)") == 4 and "float %" in params


def test_unqualified_tiles_are_shared_memory_on_the_gpu_and_wram_on_the_dpu():
    assert [p.type_text for p in scale_rows.params_for("nvptx64")][:2] == ["memref<?x?xf32, 3>"] * 2
    assert [p.type_text for p in scale_rows.params_for("upmem-dpu")][:2] == ["memref<?x?xf32>"] * 2


@edsl.dialect(target="nvptx64")
def gather(out: Input["memref<?xf32, global>"], table: Input["!llvm.ptr<global>"],
           pos: Input["memref<?xi32, shared>"], n: Input["i32"]):
    for i in range(edsl.block_id() * edsl.num_threads() + edsl.thread_id(), n,
                   edsl.num_threads() * edsl.num_blocks()):
        out[i] = edsl.f32(pos[i])


def test_memory_spaces_by_name_and_gpu_intrinsics():
    assert [p.type_text for p in gather.params] == ["memref<?xf32, 1>", "!llvm.ptr<1>", "memref<?xi32, 3>", "i32"]
    assert "nvvm.read.ptx.sreg.ctaid.x" in gather.llvm and "nvvm.read.ptx.sreg.nctaid.x" in gather.llvm
    assert "store float" in gather.llir and "ptr addrspace(1)" in gather.llir


def test_target_property_and_compile_target_agree():
    assert gather.target.name == "nvptx64"
    assert gather.llvm == gather.compile("nvptx64").llvm
    assert scale_rows.target.name == "upmem-dpu"
    assert scale_rows.llvm == scale_rows.compile().llvm


def test_each_target_has_its_cache_entry(edsl_cache_dir):
    gpu_key, dpu_key = scale_rows.key_for("nvptx64"), scale_rows.key_for("upmem-dpu")
    assert gpu_key != dpu_key and scale_rows.cache_key == dpu_key
    scale_rows.compile("nvptx64")
    entry = json.loads((edsl_cache_dir / f"{gpu_key}.json").read_text())
    assert entry["llvm"] == scale_rows.compile("nvptx64").llvm


@edsl.dialect
def math_zoo(y: InOut["memref<8xf32>"], z: InOut["memref<2xf64>"], x: Input["memref<8xf32>"]):
    y[0] = edsl.exp(x[0])
    y[1] = edsl.tanh(x[1])
    y[2] = edsl.sqrt(x[2])
    y[3] = round(x[3])
    y[4] = edsl.erf(x[4])
    y[5] = x[5] ** 2.5
    y[6] = abs(x[6])
    y[7] = edsl.log(x[7])
    z[0] = edsl.exp(z[1])


def test_math_goes_to_libdevice():
    text = math_zoo.compile("nvptx64").llir
    for name in ("__nv_expf", "__nv_tanhf", "__nv_sqrtf", "__nv_rintf", "__nv_erff", "__nv_powf", "__nv_logf",
                 "__nv_exp"):
        assert f"@{name}(" in text, name
    assert "@expf(" not in text and "@llvm.exp.f32" not in text   # NVPTX selects neither


def test_fastmath_defines_libdevices_fast_versions_in_the_module():
    text = edsl.dialect(math_zoo.fn, fastmath=True).compile("nvptx64").llir
    for name in ("expf", "logf", "powf"):       # defined here: no libdevice to link for them
        assert f"define internal float @edsl.fast_{name}(" in text, name
    assert "@__nv_fast_" not in text and "@__nv_expf(" not in text
    assert "ex2.approx.ftz.f32 $0, $1;" in text and "lg2.approx.f32 $0, $1;" in text
    assert '@__nvvm_reflect(ptr @edsl.cuda_ftz)' in text
    for name in ("__nv_tanhf", "__nv_erff", "__nv_exp"):   # no fast version: libdevice's as ever
        assert f"@{name}(" in text, name


def _libdevice_fast_body(text: str, name: str) -> tuple[list, list]:
    """libdevice's __nv_fast_<name>, disassembled: its approximate instructions
    (ftz and not) and the constants it multiplies by, in order."""
    body = re.search(rf"define float @__nv_fast_{name}\(.*?\n}}", text, re.S)[0]
    ops = re.findall(r"@llvm\.nvvm\.(\w+)\.approx(\.ftz)?\.f", body)
    return ops, re.findall(r"fmul float [^\n]*?(0x[0-9A-F]+)", body)


def _our_fast_body(text: str, name: str) -> tuple[list, list]:
    body = re.search(rf"define internal float @edsl\.fast_{name}\(.*?\n}}", text, re.S)[0]
    ops = [(op, ftz) for op, ftz in re.findall(r'asm "(\w+)\.approx(\.ftz)?\.f32', body)]
    return ops, re.findall(r"fmul float [^\n]*?(0x[0-9A-F]+)", body)


FAST = ["expf", "exp10f", "logf", "log2f", "log10f", "sinf", "cosf", "tanf", "powf"]


@pytest.fixture(scope="module")
def libdevice_text():
    import llvm
    import triton
    libdevice = pathlib.Path(triton.__file__).parent / "backends/nvidia/lib/libdevice.10.bc"
    dis = pathlib.Path(llvm.__file__).parent / "bin/llvm-dis"
    return subprocess.run([dis, libdevice, "-o", "-"], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def fast_text():
    """A module calling libm's nine f32 functions that libdevice has fast
    versions of, after `use_libdevice(fastmath=True)`, as LLVM IR."""
    from edsl import codegen
    from edsl.lowering import to_llvm_ir, use_libdevice
    calls = "\n".join(f"  %r{i} = llvm.call @{n}({', '.join(['%a'] * (2 if n == 'powf' else 1))}) : "
                      f"({', '.join(['f32'] * (2 if n == 'powf' else 1))}) -> f32" for i, n in enumerate(FAST))
    decls = "\n".join(f"llvm.func @{n}({', '.join(['f32'] * (2 if n == 'powf' else 1))}) -> f32" for n in FAST)
    with codegen.LOCK, codegen.context(), ir.Location.unknown():
        module = ir.Module.parse(f"{decls}\nllvm.func @f(%a: f32) {{\n{calls}\n  llvm.return\n}}")
        assert use_libdevice(module, fastmath=True) == len(FAST)
        return to_llvm_ir(module)


@pytest.mark.parametrize("name", FAST)
def test_fast_functions_are_libdevices_instruction_for_instruction(name, libdevice_text, fast_text):
    """Each fast function against libdevice's own body (llvm-dis of Triton's
    libdevice.10.bc): the same approximate instructions, ftz and not, in the
    same order, and the same constants."""
    ops, constants = _our_fast_body(fast_text, name)
    assert ops and (ops, constants) == _libdevice_fast_body(libdevice_text, name)


# --- the raw builder style of TLE-Raw, unchanged ------------------------------------------

@edsl.dialect(name="mlir")
def tle_copy(y: InOut["memref<?xf32, 3>"], x: Input["memref<?xf32, 3>"]):
    index = ir.IndexType.get()
    tidx = arith.index_cast(index, nvvm.read_ptx_sreg_tid_x(ir.IntegerType.get_signless(32)))
    bdimx = arith.index_cast(index, nvvm.read_ptx_sreg_ntid_x(ir.IntegerType.get_signless(32)))
    length = memref.dim(y, arith.constant(index, 0))
    for i in scf.for_(tidx, length, bdimx):
        memref.store(memref.load(x, [i]), y, [i])
        scf.yield_([])
    nvvm.barrier0()


def test_tle_raw_builder_code_compiles_for_the_gpu():
    text = tle_copy.compile("nvptx64").llir
    assert "@llvm.nvvm.read.ptx.sreg.tid.x()" in text
    assert "load float, ptr addrspace(3)" in text and "store float" in text


def test_shared_memory_parameters_are_errors_on_the_dpu():
    with pytest.raises(edsl.AnnotationError) as err:
        tle_copy.compile("upmem-dpu")
    assert err.value.loc.lineno == line_of(tle_copy, "def tle_copy")
    assert "memory space 3 does not exist on upmem-dpu" in err.value.message


@edsl.dialect
def tle_count(out: InOut["memref<?xi32>"]):
    t = nvvm.read_ptx_sreg_tid_x(ir.IntegerType.get_signless(32))
    out[0] = t


def test_nvvm_operation_on_the_dpu_names_the_builder_line():
    with pytest.raises(edsl.CompileError) as err:
        tle_count.llvm
    assert err.value.loc.lineno == line_of(tle_count, "nvvm.read_ptx_sreg_tid_x")
    assert "nvvm.read.ptx.sreg.tid.x" in err.value.message and "edsl.thread_id()" in err.value.message
    assert "nvvm.read.ptx.sreg.tid.x" in tle_count.compile("nvptx64").llvm


# --- one target's intrinsics and names on the other: errors at their line ---------------

@edsl.dialect
def uses_dma(y: InOut["memref<?xf32>"], src: Input["memref<?xf32, MRAM>"]):
    buf = edsl.wram_alloc(8, "f32")
    edsl.mram_read(src, buf, 32)
    y[0] = buf[0]


@edsl.dialect
def uses_tasklet_id(y: InOut["memref<?xi32>"]):
    y[0] = edsl.tasklet_id()


@edsl.dialect
def uses_wram_alloc(y: InOut["memref<?xf32>"]):
    buf = edsl.wram_alloc(8, "f32")
    y[0] = buf[0]


@edsl.dialect
def uses_block_id(y: InOut["memref<?xi32>"]):
    y[0] = edsl.block_id()


@edsl.dialect
def uses_shuffle(y: InOut["memref<?xf32>"], k: InOut["memref<?xi32>"]):
    t = edsl.thread_id()
    y[t] = edsl.shuffle_xor(y[t], 16)
    k[t] = edsl.shuffle_xor(k[t], 1)


@edsl.dialect
def shuffles_an_f64(y: InOut["memref<?xf64>"]):
    y[0] = edsl.shuffle_xor(y[0], 1)


def test_mram_memory_space_is_not_a_gpu_name():
    with pytest.raises(edsl.AnnotationError) as err:
        uses_dma.compile("nvptx64")
    assert err.value.loc.lineno == line_of(uses_dma, "def uses_dma")
    assert "MRAM is a memory space of upmem-dpu" in err.value.message and "global (1)" in err.value.message


@pytest.mark.parametrize("fn, needle, message", [
    (uses_tasklet_id, "edsl.tasklet_id()", "edsl.thread_id()"),
    (uses_wram_alloc, "edsl.wram_alloc", "shared memory"),
])
def test_dpu_intrinsics_on_the_gpu(fn, needle, message):
    with pytest.raises(edsl.CompileError) as err:
        fn.compile("nvptx64")
    assert err.value.loc.lineno == line_of(fn, needle)
    assert "intrinsic of upmem-dpu" in err.value.message and "compiled for nvptx64" in err.value.message
    assert message in err.value.message


def test_gpu_intrinsic_on_the_dpu():
    with pytest.raises(edsl.CompileError) as err:
        uses_block_id.llvm
    assert err.value.loc.lineno == line_of(uses_block_id, "edsl.block_id()")
    assert "intrinsic of nvptx64" in err.value.message
    assert "nvvm.read.ptx.sreg.ctaid.x" in uses_block_id.compile("nvptx64").llvm


def test_shuffle_xor_is_a_butterfly_shuffle_of_the_whole_warp_and_gpu_only():
    llir = uses_shuffle.compile("nvptx64").llir
    shuffles = [line for line in llir.splitlines() if "call" in line and "@llvm.nvvm.shfl.sync.bfly" in line]
    assert len(shuffles) == 2                               # every lane, clamped to the warp
    assert "bfly.f32(i32 -1, float %" in shuffles[0] and shuffles[0].endswith("i32 16, i32 31)")
    assert "bfly.i32(i32 -1, i32 %" in shuffles[1] and shuffles[1].endswith("i32 1, i32 31)")
    with pytest.raises(edsl.CompileError) as err:
        uses_shuffle.llvm
    assert err.value.loc.lineno == line_of(uses_shuffle, "edsl.shuffle_xor(y[t], 16)")
    assert "intrinsic of nvptx64" in err.value.message
    with pytest.raises(edsl.CompileError, match="shuffle_xor moves an i32 or f32 value") as err:
        shuffles_an_f64.compile("nvptx64")
    assert err.value.loc.lineno == line_of(shuffles_an_f64, "edsl.shuffle_xor")


@edsl.dialect
def by_thread(y: InOut["memref<?xf32>"], k: Input["i32"]):
    y[edsl.thread_id() + edsl.block_id()] = 1.0
    y[k] = 2.0


def test_thread_and_block_ids_need_no_negative_index_fix_up():
    text = by_thread.compile("nvptx64").mlir
    assert text.count("arith.select") == 1 and text.count("arith.cmpi slt") == 1   # y[k] alone


NVVM_FREE = """
import sys
import edsl
from edsl import InOut

@edsl.dialect(target="nvptx64")
def every_intrinsic(y: InOut["memref<?xf32>"]):
    t = edsl.thread_id() + edsl.block_id(1) * edsl.num_threads() + edsl.num_blocks(2)
    y[t] = edsl.shuffle_xor(y[t], 16)
    edsl.barrier()

every_intrinsic.llir
print(sorted(m for m in sys.modules if "nvvm" in m))
"""


def test_builtin_gpu_intrinsics_import_no_dialect_module_of_the_bindings(tmp_path):
    # (mlir.dialects.nvvm costs a compile in a new process ~9 ms: edsl's own
    # intrinsics make their ops without it; a body that imports it still works)
    (tmp_path / "nvvm_free.py").write_text(NVVM_FREE)
    done = subprocess.run([sys.executable, str(tmp_path / "nvvm_free.py")], capture_output=True, text=True,
                          env=dict(os.environ, EDSL_CACHE_DIR=str(tmp_path / "cache")))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@edsl.dialect
def shared_on_the_dpu(y: InOut["memref<?xf32, shared>"]):
    y[0] = 1.0


@edsl.dialect
def space_seven(y: InOut["memref<?xf32, 7>"]):
    y[0] = 1.0


def test_gpu_memory_space_names_on_the_dpu():
    with pytest.raises(edsl.AnnotationError) as err:
        shared_on_the_dpu.llvm
    assert "shared is a memory space of nvptx64" in err.value.message and "WRAM (0), MRAM (255)" in err.value.message
    assert "memref<?xf32, 3>" in shared_on_the_dpu.compile("nvptx64").mlir


@pytest.mark.parametrize("target", ["nvptx64", "upmem-dpu"])
def test_memory_space_numbers_a_target_lacks(target):
    with pytest.raises(edsl.AnnotationError) as err:
        space_seven.compile(target)
    assert "memory space 7 does not exist" in err.value.message


def test_unknown_target():
    with pytest.raises(edsl.CompileError) as err:
        scale_rows.compile("sm_90")
    assert "'upmem-dpu', 'nvptx64'" in err.value.message


@edsl.dialect(bounds_check=True)
def checked(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], k: Input["i32"]):
    assert k >= 0, "k must not be negative"
    for i in range(edsl.thread_id(), y.shape[0], edsl.num_threads()):
        y[i] = x[i + k]


def test_failed_checks_on_the_gpu_are_cuda_assertions_naming_the_line():
    text = checked.compile("nvptx64").llir
    line = line_of(checked, "assert k >= 0")
    assert f'{checked.fn.__code__.co_filename}:{line}:5: assert k >= 0 failed: k must not be negative\\00"' in text
    assert f"call void @__assertfail(ptr @__edsl_str, ptr @__edsl_str_1, i32 {line}, " in text
    assert f":{line + 2}:16: index out of bounds" in text and f":{line + 2}:9: index out of bounds" in text
    dpu = checked.compile("upmem-dpu").llvm
    assert "edsl_dpu_assert_fail" in dpu and "__assertfail" not in dpu


@edsl.dialect(name="mlir")
def named_barrier(y: InOut["memref<?xf32, 3>"]):
    i32 = ir.IntegerType.get_signless(32)
    # TLE-Raw writes nvvm.barrier(barrier_id=..., number_of_threads=...); these
    # bindings take the optional result first (docs/porting-tle-raw.md)
    nvvm.barrier(None, barrier_id=arith.constant(i32, 1), number_of_threads=arith.constant(i32, 128))


def test_the_port_guides_named_barrier_compiles_for_the_gpu():
    text = named_barrier.compile("nvptx64").llir
    assert "@llvm.nvvm.barrier" in text, text
