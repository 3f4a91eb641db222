"""Reading clang's LLVM IR of CUDA C raw functions (edsl.codegen.cuda) and
making it ready to link (edsl.inject.cuda_module): on IR text as clang 22
prints it, and on sources compiled here by the ziglang package's clang."""
import re

import pytest

from edsl.base.errors import CompileError
from edsl.codegen import clang, cuda, llvm_ir
from edsl.inject.cuda_module import link_ready

# clang -x cuda --cuda-device-only -O2 -S -emit-llvm of a function returning a
# memref descriptor struct, and of one returning a pointer (as clang 22 prints them).
DESCRIPTOR = """%struct.anon = type { ptr addrspace(3), ptr addrspace(3), i64, [1 x i64], [1 x i64] }

define dso_local %struct.anon @_Z7SoftmaxPU3AS3fS0_lllS0_S0_lll(ptr addrspace(3) noundef %0, ptr addrspace(3) noundef %1, i64 noundef %2, i64 noundef %3, i64 noundef %4, ptr addrspace(3) noundef readnone captures(none) %5, ptr addrspace(3) noundef readonly captures(none) %6, i64 noundef %7, i64 noundef %8, i64 noundef %9) local_unnamed_addr #0 {
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %17 = insertvalue %struct.anon poison, ptr addrspace(3) %0, 0
  %18 = insertvalue %struct.anon %17, ptr addrspace(3) %1, 1
  %19 = insertvalue %struct.anon %18, i64 %2, 2
  %20 = insertvalue %struct.anon %19, i64 %3, 3, 0
  %21 = insertvalue %struct.anon %20, i64 %4, 4, 0
  ret %struct.anon %21
}

define dso_local ptr @ret(ptr addrspace(1) noundef writeonly captures(ret: address, provenance) initializes((0, 4)) %0, i32 noundef %1) local_unnamed_addr #3 {
  %6 = addrspacecast ptr addrspace(1) %0 to ptr
  %7 = tail call contract float @expf(float noundef 1.0)
  ret ptr %6
}

define internal void @helper(i32 %0) {
  ret void
}

declare void @llvm.nvvm.barrier.cta.sync.aligned.all(i32) #1
declare dso_local float @expf(float noundef) local_unnamed_addr #2

attributes #0 = { convergent mustprogress norecurse nounwind "frame-pointer"="all" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" }
attributes #5 = { nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none) }

!llvm.module.flags = !{!0}
!llvm.ident = !{!1}
!0 = !{i32 4, !"nvvm-reflect-ftz", i32 0}
!1 = !{!"clang version 22.1.8"}
"""


def test_signatures_visibility_and_source_names():
    fns = llvm_ir.functions(DESCRIPTOR)
    soft = fns["_Z7SoftmaxPU3AS3fS0_lllS0_S0_lll"]
    assert soft.params == ("ptr addrspace(3)",) * 2 + ("i64",) * 3 + ("ptr addrspace(3)",) * 2 + ("i64",) * 3
    assert soft.result == "%struct.anon" and soft.external and soft.source_name == "Softmax"
    assert fns["ret"].params == ("ptr addrspace(1)", "i32") and fns["ret"].result == "ptr"
    assert not fns["helper"].external


def test_pick_by_name_or_the_one_visible():
    assert llvm_ir.pick(DESCRIPTOR, "Softmax", "f.cu").name.startswith("_Z7Softmax")
    assert llvm_ir.pick(DESCRIPTOR, "ret", "f.cu").name == "ret"
    with pytest.raises(CompileError, match=r"defines 2 __device__ functions \(Softmax, ret\).*extern_func_name"):
        llvm_ir.pick(DESCRIPTOR, "", "f.cu")
    with pytest.raises(CompileError, match="no function named 'Nope'"):
        llvm_ir.pick(DESCRIPTOR, "Nope", "f.cu")


def test_returned_memory_traced_to_parameters():
    fns = llvm_ir.functions(DESCRIPTOR)
    assert llvm_ir.returned_params(DESCRIPTOR, fns["_Z7SoftmaxPU3AS3fS0_lllS0_S0_lll"]) == [0]
    assert llvm_ir.returned_params(DESCRIPTOR, fns["ret"]) == [0]        # through the addrspacecast
    assert llvm_ir.returned_params(DESCRIPTOR, fns["helper"]) == []


def test_parameter_types_in_the_llvm_dialect():
    assert [llvm_ir.mlir_type(t) for t in ("ptr addrspace(3)", "ptr", "i64", "half", "float", "{ i32 }")] == \
        ["!llvm.ptr<3>", "!llvm.ptr", "i64", "f16", "f32", ""]


def test_link_ready_renames_definitions_strips_target_attributes_and_adds_the_wrapper():
    fn = llvm_ir.functions(DESCRIPTOR)["_Z7SoftmaxPU3AS3fS0_lllS0_S0_lll"]
    text = link_ready(DESCRIPTOR, fn, "__edsl_gpu_fn_abc_edsl")
    assert "@__edsl_gpu_fn_abc_edsl._Z7SoftmaxPU3AS3fS0_lllS0_S0_lll(" in text
    assert "@__edsl_gpu_fn_abc_edsl.helper(" in text and "@__edsl_gpu_fn_abc_edsl.ret(" in text
    assert "@__nv_expf(" in text and "@expf" not in text                   # libm -> libdevice
    assert "@llvm.nvvm.barrier.cta.sync.aligned.all" in text             # intrinsics keep their names
    assert "target-cpu" not in text and "target-features" not in text and "!llvm.module.flags" not in text
    # (LLVM 22's nocreateundeforpoison: Triton 3.6's LLVM cannot read it)
    assert "attributes #5 = { nocallback nofree nosync nounwind speculatable willreturn memory(none) }" in text
    wrapper = re.search(r"define void @__edsl_gpu_fn_abc_edsl\((.*)\) #\d+ \{\n(.*)\n", text)
    assert wrapper[1].startswith("ptr addrspace(3) %a0, ptr addrspace(3) %a1, i64 %a2")
    assert "call %struct.anon @__edsl_gpu_fn_abc_edsl._Z7Softmax" in wrapper[2]


# A function calling CUDA's __expf and __fdividef (clang 22 prints the header's
# calls of libdevice's fast functions so).
FAST = """define dso_local float @Fast(float noundef %0) local_unnamed_addr #0 {
  %2 = tail call float @__nv_fast_expf(float noundef %0) #3
  %3 = tail call float @__nv_fast_fdividef(float noundef %2, float noundef %0) #3
  ret float %3
}

declare dso_local float @__nv_fast_expf(float noundef) local_unnamed_addr #2
declare dso_local float @__nv_fast_fdividef(float noundef, float noundef) local_unnamed_addr #2

attributes #0 = { convergent mustprogress norecurse nounwind "target-cpu"="sm_90" }
"""


def test_link_ready_defines_the_fast_functions_fastmath_defines():
    """__expf is defined in the module (edsl.lowering.libdevice's definition,
    as EDSL functions' fastmath has it), no longer declared; a fast function
    it does not define (__fdividef) stays libdevice's."""
    fn = llvm_ir.functions(FAST)["Fast"]
    text = link_ready(FAST, fn, "__edsl_gpu_fn_abc_Fast")
    assert "@__nv_fast_expf" not in text
    assert "call float @__edsl_gpu_fn_abc_Fast.edsl.fast_expf(float noundef %0)" in text
    assert re.search(r"^define internal float @__edsl_gpu_fn_abc_Fast\.edsl\.fast_expf\(float", text, re.M)
    assert '@__edsl_gpu_fn_abc_Fast.edsl.cuda_ftz = private constant [11 x i8] c"__CUDA_FTZ\\00"' in text
    assert text.count("declare i32 @__nvvm_reflect(ptr)") == 1
    assert 'asm "ex2.approx.ftz.f32 $0, $1;"' in text and 'asm "ex2.approx.f32 $0, $1;"' in text
    assert "declare dso_local float @__nv_fast_fdividef(" in text and "!llvm.module.flags" not in text




def _compile(text, **defines):
    return cuda.compile_llvm(clang.Source(text, "/virtual/k.cu", tuple(defines.items())), "sm_90a")


def test_the_project_header_gives_cuda_builtins_without_a_toolkit():
    ll = _compile("""#include <cuda_fp16.h>
#include <math_constants.h>
extern "C" __device__ float f(__attribute__((address_space(1))) float *p, half h, int n) {
  __shared__ float s[32];
  s[threadIdx.x % 32] = p[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  atomicAdd(p, 1.0f);
  return __shfl_xor_sync(0xffffffffu, s[0], 1) + __half2float(h) + expf(CUDART_PI_F) + gridDim.x + warpSize;
}""")
    for needle in ("@llvm.nvvm.read.ptx.sreg.tid.x", "@llvm.nvvm.read.ptx.sreg.ctaid.x",
                   "@llvm.nvvm.read.ptx.sreg.nctaid.x", "@llvm.nvvm.barrier", "atomicrmw fadd",
                   "@llvm.nvvm.shfl.sync.bfly.f32", "addrspace(3) global [32 x float]", "@expf("):
        assert needle in ll, needle


def test_defines_and_templates():
    src = """template <typename T> __device__ T twice(T x) { return x + x; }
extern "C" __device__ ELEM NAME(ELEM x) { return twice<ELEM>(x); }"""
    fns = llvm_ir.functions(_compile(src, ELEM="double", NAME="twice_d"))
    assert fns["twice_d"].params == ("double",) and fns["twice_d"].result == "double"


def test_errors_name_the_file_line_and_column():
    with pytest.raises(CompileError) as info:
        _compile("__device__ void f(int n) {\n  int x = n +;\n}\n")
    assert info.value.loc.filename == "/virtual/k.cu" and info.value.loc.lineno == 2
    assert "expected expression" in info.value.message


TWO = """define dso_local { { ptr addrspace(3), ptr addrspace(3), i64, [1 x i64], [1 x i64] }, { ptr addrspace(3), ptr addrspace(3), i64, [1 x i64], [1 x i64] } } @two(ptr addrspace(3) %0, ptr addrspace(3) %1, i64 %2, i64 %3, i64 %4, ptr addrspace(3) %5, ptr addrspace(3) %6, i64 %7, i64 %8, i64 %9) {
  %11 = insertvalue { { ptr addrspace(3), ptr addrspace(3), i64, [1 x i64], [1 x i64] }, { ptr addrspace(3), ptr addrspace(3), i64, [1 x i64], [1 x i64] } } poison, ptr addrspace(3) %5, 0, 0
  %12 = insertvalue { { ptr addrspace(3), ptr addrspace(3), i64, [1 x i64], [1 x i64] }, { ptr addrspace(3), ptr addrspace(3), i64, [1 x i64], [1 x i64] } } %11, i64 %8, 0, 3, 0
  %13 = insertvalue { { ptr addrspace(3), ptr addrspace(3), i64, [1 x i64], [1 x i64] }, { ptr addrspace(3), ptr addrspace(3), i64, [1 x i64], [1 x i64] } } %12, ptr addrspace(3) %0, 1, 0
  ret { { ptr addrspace(3), ptr addrspace(3), i64, [1 x i64], [1 x i64] }, { ptr addrspace(3), ptr addrspace(3), i64, [1 x i64], [1 x i64] } } %13
}

define dso_local ptr addrspace(1) @either(ptr addrspace(1) %0, ptr addrspace(1) %1, i1 %2) {
  br i1 %2, label %4, label %5
4:
  ret ptr addrspace(1) %0
5:
  ret ptr addrspace(1) %1
}
"""


def test_a_struct_of_descriptors_returns_several_and_disagreeing_returns_none():
    fns = llvm_ir.functions(TWO)
    assert llvm_ir.returned_params(TWO, fns["two"]) == [5, 0]           # in the struct's order
    assert llvm_ir.returned_params(TWO, fns["either"]) is None          # which one depends on the run
