"""Kernels whose programs share array elements across DPUs, or whose
tasklets share a scalar, for the tests of what each DPU's own MRAM and its
tasklets give on the model (tests/backend) and in the exported project
(tests/export)."""
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
    elif MODE == "min":
        tl.atomic_min(out_ptr + idx, x)
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


@triton.jit
def group_sums(x_ptr, sums_ptr, lock_ptr, N, GROUPS: tl.constexpr, BLOCK: tl.constexpr):
    """The partial sums of the backward pass of Triton's layer-norm tutorial:
    each row added into row `row % GROUPS` of `sums` under that row's lock,
    the first stored as it is (a count read, then set by an atomic)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    lock = lock_ptr + row % GROUPS
    count_ptr = lock + GROUPS
    sums = sums_ptr + (row % GROUPS) * N + cols
    partial = tl.load(x_ptr + row * N + cols, mask=mask, other=0)
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    count = tl.load(count_ptr)
    if count == 0:
        tl.atomic_xchg(count_ptr, 1)
    else:
        partial += tl.load(sums, mask=mask)
    tl.store(sums, partial, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(lock, 0)


@triton.jit
def read_then_count(counter_ptr, out_ptr, BLOCK: tl.constexpr):
    """Each program stores the counter as it read it, then adds 1 to it."""
    seen = tl.load(counter_ptr)
    tl.atomic_add(counter_ptr, 1)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full([BLOCK], 0, tl.int32) + seen)
