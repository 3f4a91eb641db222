"""`tl.device_print` prints the lines Triton prints on a GPU:
`pid (x, y, z) idx (i, j)<prefix><value>`, indices padded to their
dimension's width, hex as C's `0x%0Nx` / `%a`, and a scalar once per GPU
thread of the program (num_warps * warp size)."""
import itertools
import re
from collections import Counter

import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import HealthCheck, given, settings, strategies as st
import family_ir


@triton.jit
def tensor_kernel(X, M: tl.constexpr, N: tl.constexpr, TWO_D: tl.constexpr, HEX: tl.constexpr):
    if TWO_D:
        x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    else:
        x = tl.load(X + tl.arange(0, N))
    if HEX:
        tl.device_print("x: ", x, hex=True)
    else:
        tl.device_print("x: ", x)


@triton.jit
def scalar_kernel(X):
    print("s:", tl.load(X))


@triton.jit
def no_operand_kernel():
    print("hello")


@triton.jit
def pid_kernel():
    print("", tl.program_id(0) * 10 + tl.program_id(1))


@triton.jit
def operands_kernel(X, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    tl.device_print("", x, x * 2)


@triton.jit
def pointer_kernel(X, N: tl.constexpr):
    tl.device_print("ptr ", X + tl.arange(0, N))


@triton.jit
def percent_kernel(X, N: tl.constexpr):
    tl.device_print("50%d ", tl.load(X + tl.arange(0, N)))


def c_hex_float(v) -> str:
    """C's `%a` of `v` as a double (glibc's spelling)."""
    v = float(v)
    if np.isinf(v):
        return "-inf" if v < 0 else "inf"
    sign, text = ("-", v.hex()[1:]) if v.hex().startswith("-") else ("", v.hex())
    mant, exp = text[2:].split("p")
    mant = mant.rstrip("0").rstrip(".")
    return f"{sign}0x{mant}p{exp}"


def gpu_value(v, dtype: np.dtype, hex: bool) -> str:
    """One value as Triton's GPU printf prints it."""
    if dtype.kind == "f":
        return c_hex_float(v) if hex else f"{float(v):f}"
    if not hex:
        return str(int(v))
    bits = dtype.itemsize * 8
    # (narrower integers reach printf as 32-bit ones, extended by their sign)
    mask = (1 << max(bits, 32)) - 1
    return f"0x{int(v) & mask:0{bits // 4}x}"


def gpu_lines(x: np.ndarray, prefix: str = " x: ", hex: bool = False) -> Counter:
    """The lines a GPU prints for `x` in program (0, 0, 0)."""
    widths = [len(str(d - 1)) for d in x.shape]
    lines = Counter()
    for idx in np.ndindex(*x.shape):
        places = ", ".join(f"{i:{w}}" for i, w in zip(idx, widths))
        lines[f"pid (0, 0, 0) idx ({places}){prefix}{gpu_value(x[idx], x.dtype, hex)}"] += 1
    return lines


def printed(capfd) -> Counter:
    return Counter(line for line in capfd.readouterr().out.splitlines() if line)


def test_the_reference_gives_the_lines_of_tritons_test_subprocess():
    """(the lines below as Triton's test_subprocess.py expects them: indices
    padded to their dimension's width, the prefix made ` x: ` by Triton)"""
    x = np.arange(128, dtype=np.int32)
    assert gpu_lines(x)["pid (0, 0, 0) idx (  5) x: 5"] == 1
    assert gpu_lines(x.reshape(64, 2))["pid (0, 0, 0) idx ( 5, 1) x: 11"] == 1


def test_a_1d_tensor(capfd):
    x = np.arange(-4, 124, dtype=np.int32)
    tensor_kernel[(1,)](x, M=1, N=128, TWO_D=False, HEX=False)
    out = printed(capfd)
    assert out == gpu_lines(x)
    assert out["pid (0, 0, 0) idx (  0) x: -4"] == 1 and out["pid (0, 0, 0) idx (127) x: 123"] == 1


DTYPES = [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32, np.float16, np.float32,
          np.float64]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dtype=st.sampled_from(DTYPES), m=st.sampled_from([0, 1, 2, 16]), n=st.sampled_from([1, 4, 16]),
       hex=st.booleans(), seed=st.integers(0, 2**16))
def test_shapes_and_dtypes(capfd, dtype, m, n, hex, seed):
    """Every element once, as a GPU prints it (m == 0: a 1-D tensor)."""
    rng = np.random.default_rng(seed)
    shape = (m, n) if m else (n,)
    if np.dtype(dtype).kind == "f":
        x = (rng.standard_normal(shape) * 100).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    capfd.readouterr()
    tensor_kernel[(1,)](x, M=max(m, 1), N=n, TWO_D=bool(m), HEX=hex)
    assert printed(capfd) == gpu_lines(x, hex=hex)


@pytest.mark.parametrize("dtype, value, text", [
    (np.int16, 5, "0x0005"), (np.int32, 5, "0x00000005"), (np.int64, 5, "0x0000000000000005"),
    (np.int8, -1, "0xffffffff"), (np.int16, -2, "0xfffffffe"), (np.int64, -1, "0xffffffffffffffff"),
    (np.float32, 1.5, "0x1.8p+0"), (np.float16, -0.0, "-0x0p+0"), (np.float64, 0.1, "0x1.999999999999ap-4"),
    (np.float32, np.inf, "inf"), (np.float32, 6.0, "0x1.8p+2"),
])
def test_hex(capfd, dtype, value, text):
    """Integers zero-padded to their type's hex digits (narrower than 32 bits:
    printed as the 32-bit value a GPU's printf gets); floats as C's `%a`."""
    x = np.full(4, value, dtype=dtype)
    tensor_kernel[(1,)](x, M=1, N=4, TWO_D=False, HEX=True)
    assert printed(capfd) == Counter({f"pid (0, 0, 0) idx ({i}) x: {text}": 1 for i in range(4)})


def test_unsigned_values_print_unsigned(capfd):
    x = np.arange(2**31, 2**31 + 4, dtype=np.uint32)
    tensor_kernel[(1,)](x, M=1, N=4, TWO_D=False, HEX=False)
    assert printed(capfd) == Counter({f"pid (0, 0, 0) idx ({i}) x: {2**31 + i}": 1 for i in range(4)})


def test_pointers_print_their_addresses(capfd):
    x = np.zeros(8, dtype=np.int32)
    pointer_kernel[(1,)](x, N=8)
    lines = list(printed(capfd))
    found = [re.fullmatch(r"pid \(0, 0, 0\) idx \((\d)\) ptr: 0x([0-9a-f]+)", line) for line in lines]
    assert all(found), lines
    addresses = {int(m[1]): int(m[2], 16) for m in found}
    assert sorted(addresses) == list(range(8))
    assert all(addresses[i] - addresses[0] == 4 * i for i in range(8))


@pytest.mark.parametrize("warps", [1, 4, 128])
def test_a_scalar_prints_once_per_gpu_thread(capfd, warps):
    scalar_kernel[(1,)](np.array([42], dtype=np.int16), num_warps=warps)
    assert printed(capfd) == Counter({"pid (0, 0, 0) idx () s: 42": warps})
    no_operand_kernel[(1,)](num_warps=warps)
    assert printed(capfd) == Counter({"pid (0, 0, 0) hello": warps})


def test_program_ids(capfd):
    pid_kernel[(2, 3)](num_warps=2)
    assert printed(capfd) == Counter({f"pid ({i}, {j}, 0) idx (): {i * 10 + j}": 2
                                      for i, j in itertools.product(range(2), range(3))})


@triton.jit
def counting_kernel(counter_ptr):
    print("", tl.program_id(0))
    tl.atomic_add(counter_ptr, 1)


@pytest.mark.parametrize("dpus", [1, 4])
def test_each_program_prints_once_in_order(capfd, dpus):
    """DPUs that share an array (one counter here, merged by the host) run one
    by one, each once: a launch that prints prints each line once, in order."""
    counter = np.zeros(1, np.int32)
    counting_kernel[(8,)](counter, num_dpus=dpus)
    lines = capfd.readouterr().out.splitlines()
    # (each DPU runs a block of consecutive programs: DPU by DPU is program order)
    assert lines == [f"pid ({p}, 0, 0) idx (): {p}" for p in range(8)]
    assert counter[0] == 8


def test_several_operands(capfd):
    x = np.arange(4, dtype=np.int32)
    operands_kernel[(1,)](x, N=4)
    want = Counter()
    for i in range(4):
        want[f"pid (0, 0, 0) idx ({i}): (operand 0) {i}"] += 1
        want[f"pid (0, 0, 0) idx ({i}): (operand 1) {2 * i}"] += 1
    assert printed(capfd) == want


def test_the_prefix_is_printed_as_it_is(capfd):
    """(not read as a printf format)"""
    percent_kernel[(1,)](np.arange(2, dtype=np.int32), N=2)
    assert printed(capfd) == Counter({"pid (0, 0, 0) idx (0) 50%d: 0": 1, "pid (0, 0, 0) idx (1) 50%d: 1": 1})


def test_tasklets_print_the_lines_once(capfd):
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    tensor_kernel[(1,)](x, M=4, N=8, TWO_D=True, HEX=False, num_tasklets=4)
    assert printed(capfd) == gpu_lines(x)


# --- the family's IR on the golden corpus (family_ir) ---------------------------------------

def test_corpus_debug_ir_at_1_and_4_tasklets_and_under_a_wram_limit():
    """`tt.print` becomes the C library's printf (flushed); `tt.assert` the
    runtime's failure call."""
    def markers(names):
        return (["llvm.call @printf(", "llvm.call @fflush("] if "tt.print" in names else []) + \
            (["llvm.call @__dpu_fail("] if "tt.assert" in names else [])
    assert family_ir.check_family({"tt.print", "tt.assert"}, markers)
