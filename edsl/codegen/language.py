"""Functions usable inside `@edsl.dialect` bodies.

They are markers: the code generator recognises them (edsl.codegen.intrinsics
holds what each one emits and its typing rule); called from plain Python they
raise. Python's own `abs`, `min`, `max`, `int`, `float`, `bool`, `len` and the
functions of the `math` module are recognised too.
"""
from __future__ import annotations


class Intrinsic:
    """A function that only has a meaning inside an edsl body."""

    def __init__(self, name: str, doc: str):
        self.__name__ = self.name = name
        self.__doc__ = doc

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"edsl.{self.name}() can only be used inside an @edsl.dialect function")

    def __repr__(self) -> str:
        return f"<edsl intrinsic {self.name}>"


class ScalarType(Intrinsic):
    """A scalar type; calling it in a body converts: `f32(x)`, `i32(n)`."""

    def __init__(self, name: str):
        super().__init__(name, f"Convert a value to {name}.")


i1, i8, i16, i32, i64, index = (ScalarType(n) for n in ("i1", "i8", "i16", "i32", "i64", "index"))
f16, bf16, f32, f64 = (ScalarType(n) for n in ("f16", "bf16", "f32", "f64"))

# Math functions (float operands; integers are converted to f32 first).
_MATH = {
    "exp": "e**x", "exp2": "2**x", "log": "natural logarithm", "log2": "base-2 logarithm",
    "log10": "base-10 logarithm", "sqrt": "square root", "rsqrt": "1/sqrt(x)",
    "sin": "sine", "cos": "cosine", "tan": "tangent", "tanh": "hyperbolic tangent",
    "erf": "error function", "floor": "round down", "ceil": "round up",
    "trunc": "round toward zero", "round": "round half away from zero",
    "fma": "x*y + z, rounded once", "copysign": "x with the sign of y",
    "isnan": "x is NaN", "isinf": "x is infinite",
}
for _name, _doc in _MATH.items():
    globals()[_name] = Intrinsic(_name, _doc)
del _name, _doc

select = Intrinsic("select", "select(c, a, b): a where c is true, else b, without branching.")

# Intrinsics with one meaning on every target: the threads that run the
# function together (the tasklets of a DPU, the threads of a GPU's CTA).
thread_id = Intrinsic("thread_id", "The id of the running thread (0 .. num_threads()-1), i32: the tasklet id "
                      "(`me()`) on the DPU, `threadIdx.x` on a GPU.")
num_threads = Intrinsic("num_threads", "The number of threads running this function together, i32: the "
                        "tasklets of the DPU, the threads of the CTA (`blockDim.x`) on a GPU.")
barrier = Intrinsic("barrier", "Wait until every thread reaches this barrier (`barrier_wait` on the DPU, "
                    "`__syncthreads()` on a GPU).")

# Printing, and asserting with a message (TLE-Raw's names; edsl.codegen.printf).
vprintf = Intrinsic("vprintf", "vprintf(fmt, *args): C's printf from every thread that runs it: CUDA's `vprintf` "
                    "on a GPU, `printf` on the DPU; each conversion checked against its argument when compiled.")
vassert = Intrinsic("vassert", "vassert(cond, fmt, *args): where `cond` is false, print `fmt` with `args` "
                    "(vprintf) and stop as a failed `assert` does (a device-side assert on a GPU, an "
                    "`edsl.DpuError` at this line on the DPU).")

# GPU intrinsics.
block_id = Intrinsic("block_id", "block_id(axis=0): the index of the running CTA along `axis` (0, 1, 2), i32 "
                     "(`blockIdx`; Triton's program id). GPU only.")
num_blocks = Intrinsic("num_blocks", "num_blocks(axis=0): the number of CTAs along `axis`, i32 (`gridDim`). "
                       "GPU only.")
shuffle_xor = Intrinsic("shuffle_xor", "shuffle_xor(value, lane_mask): `value` (an i32 or f32) of the lane "
                        "whose lane id is this lane's xor `lane_mask`, within the warp (`__shfl_xor_sync` over "
                        "all 32 lanes: every lane of the warp must call it together). GPU only.")

# DPU intrinsics. On the host they run against the DPU model (edsl.dpu.runtime).
tasklet_id = Intrinsic("tasklet_id", "The id of the running tasklet (0 .. num_tasklets()-1), i32; `me()` in the "
                       "UPMEM SDK. DPU only: `thread_id()` means the same on every target.")
num_tasklets = Intrinsic("num_tasklets", "The number of tasklets running this function, i32. DPU only: "
                         "`num_threads()` means the same on every target.")
mram_read = Intrinsic(
    "mram_read",
    "mram_read(src, dst, nbytes, src_offset=0, dst_offset=0): DMA `nbytes` from the MRAM "
    "memref `src` to the WRAM memref `dst`; offsets in elements. Both addresses must be "
    "8-byte aligned and nbytes a multiple of 8 between 8 and 2048. DPU only.")
mram_write = Intrinsic(
    "mram_write",
    "mram_write(src, dst, nbytes, src_offset=0, dst_offset=0): DMA `nbytes` from the WRAM "
    "memref `src` to the MRAM memref `dst`, with the rules of mram_read. DPU only.")
wram_alloc = Intrinsic(
    "wram_alloc",
    "wram_alloc(shape, dtype): a WRAM buffer of static shape shared by the tasklets, "
    "8-byte aligned, counted against the 64 KiB WRAM of the DPU. DPU only.")

__all__ = ["Intrinsic", "ScalarType", "i1", "i8", "i16", "i32", "i64", "index", "f16", "bf16",
           "f32", "f64", "select", "thread_id", "num_threads", "barrier", "vprintf", "vassert", "block_id", "num_blocks",
           "shuffle_xor",
           "tasklet_id", "num_tasklets", "mram_read", "mram_write", "wram_alloc", *_MATH]
