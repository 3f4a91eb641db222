"""Kernels whose programs share array elements across DPUs, for the tests of
what each DPU's own MRAM gives on the model (tests/backend) and in the
exported project (tests/export)."""
import triton
import triton.language as tl

BLOCK = 8


@triton.jit
def scatter(x_ptr, idx_ptr, out_ptr, MODE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    idx = tl.load(idx_ptr + offs)
    if MODE == "store":
        tl.store(out_ptr + idx, x)
    elif MODE == "add":
        tl.atomic_add(out_ptr + idx, x)
    elif MODE == "max":
        tl.atomic_max(out_ptr + idx, x)
    elif MODE == "xor":
        tl.atomic_xor(out_ptr + idx, x)
    elif MODE == "xchg":
        tl.atomic_xchg(out_ptr + idx, x)
    else:                                    # "gather": read what programs store
        tl.store(out_ptr + offs, tl.load(out_ptr + idx) + x)


@triton.jit
def count(x_ptr, cnt_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK))
    tl.atomic_add(cnt_ptr, tl.sum(x))


@triton.jit
def flag(x_ptr):
    pid = tl.program_id(0)
    if pid == 0:
        tl.store(x_ptr, 5)
    else:
        tl.store(x_ptr + pid, tl.load(x_ptr))


@triton.jit
def wait_for(flag_ptr, out_ptr, SETTER: tl.constexpr):
    """Program SETTER stores a flag that every other program waits for."""
    pid = tl.program_id(0)
    if pid == SETTER:
        tl.store(flag_ptr, 1)
    else:
        n = 0
        while tl.load(flag_ptr, volatile=True) == 0:  # <wait>
            n += 1
        tl.store(out_ptr + pid, n)


@triton.jit
def take_tickets(counter_ptr, out_ptr, n, at):
    """Programs take tickets from one counter (element `at`) until `n` are
    taken: each atomic changes the counter, so the loop goes on towards its
    end."""
    taken = 0
    while tl.atomic_add(counter_ptr + at, 1) < n:  # <take>
        taken += 1
    tl.store(out_ptr + tl.program_id(0), taken)
