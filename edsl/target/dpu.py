"""The DPU ABI: the one definition of what generated code, the DPU model and
the exported SDK project agree on.

Hardware facts (UPMEM SDK documentation: memory, DMA and tasklet chapters;
the PrIM study), the runtime symbols generated code calls, the launch
context every tasklet carries, the per-DPU state its tasklets share, and the
error codes. Importing this module is cheap (no MLIR, no NumPy).
"""
from __future__ import annotations

import string
from enum import IntEnum, IntFlag
from typing import NamedTuple

# ---- the hardware ---------------------------------------------------------------------

WRAM_BYTES = 64 * 1024          # scratchpad per DPU
MRAM_BYTES = 64 * 1024 * 1024   # DRAM bank per DPU
IRAM_BYTES = 24 * 1024          # instruction memory per DPU
MAX_TASKLETS = 24               # hardware threads per DPU
MAX_DPUS = 2560                 # the largest UPMEM system: 40 ranks of 64 DPUs (20 DIMMs)
PIPELINE_FULL_TASKLETS = 11     # tasklets needed to fill the 14-stage pipeline

DMA_ALIGN = 8                   # MRAM<->WRAM transfers: 8-byte aligned addresses,
DMA_MIN_BYTES = 8               # ... sizes a multiple of 8, from 8
DMA_MAX_BYTES = 2048            # ... to 2048 bytes per transfer

# LLVM address spaces in UPMEM's toolchain (`__mram_ptr` is 255).
WRAM_ADDRSPACE = 0
MRAM_ADDRSPACE = 255
MEMORY_SPACES = {"WRAM": WRAM_ADDRSPACE, "MRAM": MRAM_ADDRSPACE}


def memory_space(memref_type) -> int:
    """The address space of an MLIR memref type (0 when it names none)."""
    from mlir import ir          # (here, so that importing the ABI costs nothing)
    space = ir.MemRefType(memref_type).memory_space
    return 0 if space is None else ir.IntegerAttr(space).value


def is_mram(memref_type) -> bool:
    return memory_space(memref_type) == MRAM_ADDRSPACE


def align_up(n: int, to: int = DMA_ALIGN) -> int:
    """`n` rounded up to a multiple of `to` (DMA_ALIGN: what MRAM and WRAM
    buffers are padded to)."""
    return -(-n // to) * to


class DmaRule(IntFlag):
    """The rules an MRAM<->WRAM transfer can break (`dma_rules_broken`)."""
    SIZE = 1
    MRAM_ALIGN = 2
    WRAM_ALIGN = 4


class DmaRuleCheck(NamedTuple):
    """One DMA rule: `operand` ("mram", "wram" or "nbytes") is a multiple of
    DMA_ALIGN and, with `bounds`, within them; `message` says why a value
    breaks it (`{}` is the value, in hex with `hex`)."""
    rule: DmaRule
    operand: str
    bounds: tuple[int, int] | None
    hex: bool
    message: str


# The rules, once: the check here, the runtime library's (edsl.dpu.support)
# and the exported project's C (edsl.export.generate) are generated from them.
DMA_RULES = (
    DmaRuleCheck(DmaRule.SIZE, "nbytes", (DMA_MIN_BYTES, DMA_MAX_BYTES), False,
                 f"DMA size {{}} bytes: must be a multiple of {DMA_ALIGN} "
                 f"between {DMA_MIN_BYTES} and {DMA_MAX_BYTES}"),
    DmaRuleCheck(DmaRule.MRAM_ALIGN, "mram", None, True,
                 f"MRAM address {{}} is not {DMA_ALIGN}-byte aligned"),
    DmaRuleCheck(DmaRule.WRAM_ALIGN, "wram", None, True,
                 f"WRAM address {{}} is not {DMA_ALIGN}-byte aligned"),
)


def _broken_checks(mram: int, wram: int, nbytes: int):
    """(check, the operand's value) of each rule a transfer breaks, in order."""
    values = {"mram": mram, "wram": wram, "nbytes": nbytes}
    for check in DMA_RULES:
        v = values[check.operand]
        if v % DMA_ALIGN or (check.bounds and not check.bounds[0] <= v <= check.bounds[1]):
            yield check, v


def dma_rules_broken(mram: int, wram: int, nbytes: int) -> DmaRule:
    """The DMA rules a transfer of `nbytes` between these addresses breaks."""
    broken = DmaRule(0)
    for check, _ in _broken_checks(mram, wram, nbytes):
        broken |= check.rule
    return broken


def dma_violation(mram_addr: int, wram_addr: int, nbytes: int) -> str | None:
    """Why an mram_read/mram_write of these operands breaks the DMA rules (the
    first rule it breaks), or None."""
    for check, v in _broken_checks(mram_addr, wram_addr, nbytes):
        return check.message.format(f"{v:#x}" if check.hex else v)
    return None


# ---- runtime symbols ------------------------------------------------------------------
# What generated code calls; the DPU runtime library (edsl.dpu.support)
# defines each one in compiled code, and the exporter maps them to the SDK.

ME = "edsl_dpu_me"                    # () -> i32: the running tasklet's id (`me()`)
NR_TASKLETS = "edsl_dpu_nr_tasklets"  # () -> i32: tasklets of the DPU (NR_TASKLETS)
BARRIER = "edsl_dpu_barrier"          # (site: i64) -> (): every tasklet meets (`barrier_wait`)
# EDSL DMA: (mram_addr, wram_addr, nbytes, site, mram_end, wram_end) -> (), i64 each;
# the ends bound the two buffers.
MRAM_READ = "edsl_dpu_mram_read"
MRAM_WRITE = "edsl_dpu_mram_write"
ASSERT_FAIL = "edsl_dpu_assert_fail"  # (site: i64) -> (): a failed `assert`
BOUNDS_FAIL = "edsl_dpu_bounds_fail"  # (site: i64) -> (): an index out of bounds (bounds_check)
STEP_FAIL = "edsl_dpu_step_fail"      # (site: i64) -> (): a range() step of zero at run time
COUNTERS = "edsl_dpu_counters"        # () -> !llvm.ptr: this tasklet's i64 block counters
# Operation classes of the counters (edsl.lowering.counting, edsl.dpu.timing) that
# synchronize: a mutex's lock, unlock and trylock (UPMEM C's mutex.h); and any class
# issued while the tasklet holds a mutex, counted as HELD + its class: the tasklets
# holding one issue it one at a time.
MUTEX_LOCK, MUTEX_UNLOCK, MUTEX_TRYLOCK = "mutex_lock", "mutex_unlock", "mutex_trylock"
HELD = "held:"
# (pair: !llvm.ptr, nbytes: i64) -> (): one more transfer in a (transfers, bytes) slot pair
COUNT_TRANSFER = "__dpu_count_transfer"
# Record an access of a launch's arrays for the checks across DPUs (edsl.dpu.sharing):
# (kind: an `Access` code, mram_addr, nbytes, site: i64, ctx: !llvm.ptr) -> ()
NOTE = "__dpu_note"
# Watch an access made in a `while` loop for a wait that cannot end (`WAIT_REPEATS`), with
# NOTE's arguments; a store's kind resets the watch (made before each outermost while loop).
WATCH_WAIT = "__dpu_watch_wait"
NOTE_ACCESS = "edsl_dpu_note_access"  # (kind, mram_addr, nbytes, site: i64) -> (): NOTE, in EDSL code
# An EDSL access of WRAM or MRAM bytes for the check of races between a DPU's
# tasklets (edsl.dpu.races): (kind: an `Access` code, RACE_MRAM set for MRAM,
# address, nbytes, site: i64) -> (). The model logs it where the launch asks
# (`Ctx.RACE`); a DPU has no such check (the exporter prints nothing).
RACE_NOTE = "edsl_dpu_race_note"
LOG_FULL = "edsl_dpu_log_full"        # (ctx) -> (): the tasklet's log is full (model: grow it)
# The one DMA routine, which kernels call directly:
# (mram_addr, wram_addr, nbytes, direction, site: i64, ctx: !llvm.ptr) -> ()
DMA = "__dpu_dma"
# Record the DPU's first error (in the tasklet's context; none once the DPU has stopped: what
# follows, a deadlock of tasklets that gave up waiting included, is not the cause) and stop it:
# (ctx, code, site, mram_addr, wram_addr, nbytes, direction: i64) -> ()
FAIL = "__dpu_fail"
# Whether the DPU of the tasklet of `ctx` has stopped on an error: (ctx: !llvm.ptr) -> i1
FAILED = "__dpu_failed"
# The running tasklet's context (a thread-local set by `ENTER`).
CTX = "edsl_dpu_ctx"                  # () -> !llvm.ptr
ENTER = "edsl_dpu_enter"              # (ctx) -> (): this thread runs the tasklet of `ctx`
EXIT = "edsl_dpu_exit"                # (ctx) -> (): the tasklet of `ctx` has finished
# (ctx) -> (): the model's tasklet of `ctx` lets its DPU's next one run, where they share a
# host thread; nothing on a DPU, whose tasklets run side by side.
YIELD = "edsl_dpu_yield"
# (word: !llvm.ptr, value: i32) -> (): the running tasklet waits a while where the 32-bit word at
# `word` holds `value`, letting the others run (the model: it yields where its DPU's tasklets share
# a host thread, else sleeps on the word a bounded time); the caller checks again. WAKE_WORD
# (word: !llvm.ptr) -> (): wakes those sleeping on it. Raw functions in C wait so (mutex.h, handshake.h).
WAIT_WORD = "edsl_dpu_wait_word"
WAKE_WORD = "edsl_dpu_wake_word"
# (mram_addr, nbytes: i64, ctx: !llvm.ptr) -> (): before a transfer writes those MRAM bytes,
# the model saves the pages of the launch's arrays they fall in, as transferred, once each
# (`Ctx.SAVE`, `Page`); nothing on a DPU, whose MRAM holds its own copy of the arrays.
SAVE_PAGES = "edsl_dpu_save_pages"
# A kernel's program: `LAUNCH` runs every DPU's program instances on one tasklet.
MAIN = "__dpu_main"
LAUNCH = "__dpu_launch"

READ, WRITE = 0, 1                    # DMA directions (mram_read, mram_write)


# ---- entry signatures -----------------------------------------------------------------

WRAM_MEMREF = "memref<?xi8>"          # a DPU's WRAM, shared by its tasklets


class EntryArg(NamedTuple):
    """An argument that follows a kernel's own parameters (its pointers as i64
    MRAM addresses, then its scalars) in an entry of a DPU program."""
    name: str
    type: str                         # MLIR: "i32", WRAM_MEMREF or "!llvm.ptr"
    meaning: str


_GRID = (EntryArg("grid_x", "i32", "grid size"), EntryArg("grid_y", "i32", "grid size"),
         EntryArg("grid_z", "i32", "grid size"))
_WRAM = EntryArg("wram", WRAM_MEMREF, "the DPU's WRAM: the kernel's buffers at fixed offsets, "
                                      "then a DMA staging buffer per tasklet")
_CTX = EntryArg("ctx", "!llvm.ptr", "the tasklet's launch context (Ctx slots)")

# The entries, once: the converted kernel's signature and the program's
# (runtime_text), the DPU model's ctypes arguments, the exporter's check of
# the program and its C call are generated from this table.
KERNEL = "kernel"                     # the converted kernel (named as the Triton kernel)
ENTRY = {
    KERNEL: (EntryArg("pid_x", "i32", "program id"), EntryArg("pid_y", "i32", "program id"),
             EntryArg("pid_z", "i32", "program id"), *_GRID, _WRAM, _CTX),
    # Every tasklet of a DPU runs the program instances first .. end - 1 (`dpu_programs`).
    MAIN: (*_GRID, EntryArg("first", "i32", "the DPU's first program instance"),
           EntryArg("end", "i32", "one past its last"), _WRAM, _CTX),
    # One host call per tasklet runs `MAIN` of DPUs first_dpu .. end_dpu-1 in turn.
    LAUNCH: (*_GRID, EntryArg("first_dpu", "i32", "the first DPU to run"),
             EntryArg("end_dpu", "i32", "one past the last DPU to run"),
             EntryArg("dpus", "i32", "the launch's DPU count (`dpu_programs`)"), _WRAM,
             EntryArg("ctx", "!llvm.ptr", "the launch's contexts, DPU by DPU, tasklet by tasklet"),
             EntryArg("tid", "i32", "the tasklet")),
}

def dpu_programs(dpu: int, programs: int, dpus: int) -> range:
    """The program instances DPU `dpu` of a launch on `dpus` DPUs runs: a
    block of consecutive ids, one more for each of the first programs % dpus
    DPUs. Consecutive programs mostly touch consecutive rows, so each DPU's
    part of an array is compact, as a UPMEM host splits its data (PrIM);
    round-robin spread every DPU's rows over the whole array. The launch
    entry (`program.mlir`) and the exported host runner compute the same."""
    share, extra = divmod(programs, dpus)
    first = dpu * share + min(dpu, extra)
    return range(first, first + share + (dpu < extra))


def programs_per_dpu(programs: int, dpus: int) -> list[int]:
    """How many program instances each DPU of a launch runs (`dpu_programs`)."""
    share, extra = divmod(programs, dpus)
    return [share + 1] * min(extra, dpus) + [share] * (dpus - min(extra, dpus))


# What each type is once lowered to the LLVM dialect (a memref: its descriptor's fields).
LOWERED = {"i32": ("i32",), "!llvm.ptr": ("!llvm.ptr",),
           WRAM_MEMREF: ("!llvm.ptr", "!llvm.ptr", "i64", "i64", "i64")}


def entry_types(entry: str) -> list[str]:
    """The MLIR types of the arguments `entry` takes after the kernel's parameters."""
    return [a.type for a in ENTRY[entry]]


def entry_params(entry: str) -> str:
    """`%name: type, ...` of those arguments (MLIR function syntax)."""
    return ", ".join(f"%{a.name}: {a.type}" for a in ENTRY[entry])


def lowered_entry_types(entry: str) -> list[str]:
    """The types of those arguments in the LLVM dialect."""
    return [t for a in ENTRY[entry] for t in LOWERED[a.type]]


# ---- the launch context ---------------------------------------------------------------

class Ctx(IntEnum):
    """Slots (i64) of a tasklet's launch context. The host fills the inputs,
    generated code keeps the counters and the first error."""
    READS = 0            # DMA transfers and bytes, by direction (READ at 0-1, WRITE at 2-3)
    READ_BYTES = 1
    WRITES = 2
    WRITE_BYTES = 3
    ERROR = 4            # the DPU's first error's code (Err), 0 if none (or another tasklet's)
    ERR_SITE = 5         # ... its source site (a check-site code, 0 if unknown)
    ERR_MRAM = 6         # ... for DMA errors: MRAM address, WRAM address, bytes, direction
    ERR_WRAM = 7
    ERR_BYTES = 8
    ERR_DIR = 9
    MRAM_LO = 10         # inputs: the lowest and highest MRAM address of the launch
    MRAM_HI = 11
    REGIONS = 12         # pointer to [lo, hi) i64 pairs: the MRAM a transfer may touch
    NREGIONS = 13
    TID = 14             # the tasklet's id and the DPU's tasklet count
    NTASKLETS = 15
    DPU = 16             # pointer to the DPU's shared state (Dpu slots)
    COUNTERS = 17        # pointer to the tasklet's block counters (or 0)
    DPU_ID = 18          # the DPU this context belongs to
    SCRATCH = 19         # input: the MRAM address of the DPU's scratch for spilled tiles
    SPILL_READS = 20     # the DMA transfers and bytes of spilled tiles (also counted above)
    SPILL_READ_BYTES = 21
    SPILL_WRITES = 22
    SPILL_WRITE_BYTES = 23
    LOG = 24             # the tasklet's access log (`NOTE`): address of LOG_CAP entries
    LOG_LEN = 25         # ... entries used (of LOG_ENTRY i64 each), 0 = logging off
    LOG_CAP = 26
    WATCH_LO = 27        # input: reads outside [WATCH_LO, WATCH_HI) (what the launch may write) are not logged
    WATCH_HI = 28
    LOG_ENDS = 29        # model: the log's table of LOG_ENDS slots (or 0) that finds the entry ending
                         # where an access starts, which then grows it (tasklets run one by one)
    SAVE = 30            # model: the table of pages of the arrays that transfers save before they
                         # first write them (`SAVE_PAGES`; 0: none are saved)
    RACE = 31            # model: the tasklet's race log (RaceLog slots), 0: no race check (`RACE_NOTE`)
    FOOTPRINT = 32       # model: the tasklet's footprint, [lo, hi) per MRAM region (REGIONS), the
                         # hull of the bytes its transfers touched there (0: not kept)
    C_STOP = 33          # model: the jump buffer a raw function in C returns to when a fault stops
                         # its tasklet (edsl.codegen.upmem_c), 0 outside one
    C_HEAP = 34          # model: input: the WRAM bytes a raw function in C may take with mem_alloc
                         # (alloc.h: `c_heap_bytes`), 0 where no heap was given
    C_MRAM_HEAP = 35     # model: input: the MRAM address of DPU_MRAM_HEAP_POINTER (mram.h) for a raw
                         # function in C run alone, 0 where none was given (a kernel's)
    C_MRAM_BASE = 36     # model: input: where a whole DPU program's MRAM is (edsl.c_program), so that an
                         # address below MRAM_BYTES is an MRAM address of its, as on a DPU; 0 elsewhere


# (a whole number of 64-byte host cache lines: a tasklet's counters and another's do not share one)
CTX_SLOTS = 40


# The pages `SAVE_PAGES` saves: PAGE_BYTES each, page k of an array its bytes
# from lo + k * PAGE_BYTES (kernels block arrays from their first element).
# A save table holds [spans, mixed, epoch, then (lo, hi, states, copy) per
# span]: MRAM bytes [lo, hi), the address of its pages' i64 states, the host
# address of its copy. A page's state counts only in the table's `epoch`
# (its bits from PAGE_EPOCH_SHIFT): states left by earlier launches are
# CLEAN, so the host need not zero them (3 MiB for a softmax launch's
# output). `mixed` (at SAVE_MIXED) is set where the DPUs may not
# have kept apart: a DPU wrote a page that another DPU saved, or read bytes
# a DPU may write (a logged read); the host then reads their logs
# (edsl.dpu.sharing). DPUs that each write whole pages need no such check.
# A page is the host's cache line: DPUs that write rows of tiles of 64 bytes
# or more keep apart on it (a matmul's blocks of 16 f32 or more); below it,
# DPUs on different host threads would contend for the line anyway.
HOST_CACHE_LINE = 64                  # bytes (the model's hosts: x86-64, aarch64)
PAGE_BYTES = HOST_CACHE_LINE
PAGE_SHIFT = PAGE_BYTES.bit_length() - 1
SAVE_COUNT = 0                        # how many spans
SAVE_MIXED = 1
SAVE_EPOCH = 2
SAVE_SPANS = 3                        # where the spans' rows start
SAVE_ROW = 4                          # i64 per span


class Page(IntEnum):
    """The state of a page of a save table (its low PAGE_OWNER_SHIFT bits):
    its first writer claims it by CAS (CLEAN, or a state of an earlier epoch
    -> SAVING), copies it and releases it SAVED, with its DPU's id + 1 in the
    bits above (0 where the host saved it) and the epoch above those; other
    writers wait."""
    CLEAN = 0
    SAVING = 1
    SAVED = 2


PAGE_OWNER_SHIFT = 2
PAGE_STATE_MASK = (1 << PAGE_OWNER_SHIFT) - 1
PAGE_EPOCH_SHIFT = 32                 # (DPU ids below 2**30; epochs from 1, below 2**31)


class Dpu(IntEnum):
    """Slots (i64) of the state the tasklets of one DPU share."""
    COUNT = 0            # barrier arrivals (bits 0-15), tasklets blocked in a raw C function's
                         # mutex_lock or handshake (bits 16-31: COUNT_BLOCKED_SHIFT), finished
                         # tasklets (from 32)
    GENERATION = 1       # barrier generation (waiters sleep on its low 32 bits)
    TASKLETS = 2
    FAILED = 3           # set once an error stops the DPU: barriers and DMA give up
    WAIT_SITE = 4        # the site of the barrier tasklets last waited at
    SCHEDULER = 5        # model: the block of the scheduler running the DPU's tasklets
                         # on one host thread (edsl.dpu.runtime), 0: a thread each
    WAIT_KEY = 6         # the last access of the arrays a kernel made, as a key, and how
    WAIT_COUNT = 7       # many times in a row (stores do not count): `WAIT_REPEATS`


DPU_SLOTS = 8
# The fields of the COUNT slot: each of the two low ones COUNT_FIELD_MASK wide
# (MAX_TASKLETS fits), the finished tasklets from COUNT_FINISHED_SHIFT. A
# tasklet counted blocked waits for a mutex another holds, or for another
# tasklet in a handshake; the tasklet that releases it counts it out as it
# does (the mutex's holder as it hands it over), so that arrivals + blocked
# + finished == tasklets, with some blocked or finished, is a deadlock.
COUNT_FIELD_MASK = 0xFFFF
COUNT_BLOCKED_SHIFT = 16
COUNT_FINISHED_SHIFT = 32


class Err(IntEnum):
    """Error codes of a context's ERROR slot (the site slot says where)."""
    DMA_RULE = 1         # a transfer breaks the DMA rules
    MRAM_BOUNDS = 2      # a transfer leaves the launch's MRAM
    MRAM_OVERRUN = 3     # an EDSL transfer runs past its MRAM buffer
    WRAM_OVERRUN = 4     # an EDSL transfer runs past its WRAM buffer
    ASSERT = 5           # a failed `assert` of an EDSL function
    DEVICE_ASSERT = 6    # a failed `tl.device_assert`: site = its number, ERR_MRAM = program id
    INDEX = 7            # an index out of bounds (bounds_check)
    DEADLOCK = 8         # a barrier that can never complete
    ZERO_STEP = 9        # a range() step of zero
    POLL = 10            # a `tl.atomic_poll` that can never match: ERR_MRAM = the value, ERR_WRAM = expected
    WAIT = 11            # one access repeated WAIT_REPEATS times in a row: ERR_MRAM, ERR_BYTES say which
    # Raw functions in C (the SDK's headers, edsl.codegen.upmem_include):
    MUTEX_UNLOCK = 12    # mutex_unlock of a mutex the tasklet does not hold
    MUTEX_RELOCK = 13    # mutex_lock of a mutex the tasklet holds
    SYNC_DEADLOCK = 14   # every tasklet left waits, at a barrier, for a mutex or in a handshake
    HEAP_FULL = 15       # mem_alloc beyond the heap: ERR_BYTES = the size asked, ERR_MRAM = bytes left,
                         # ERR_WRAM = the heap's bytes
    SEQREAD_STEP = 16    # seqread_get of more than SEQREAD_CACHE_SIZE bytes: ERR_BYTES = the step,
                         # ERR_MRAM = SEQREAD_CACHE_SIZE
    HANDSHAKE_BUSY = 17  # handshake_wait_for of a tasklet another tasklet already waits for
    HANDSHAKE_WHOM = 18  # handshake_wait_for of itself or of no tasklet of the DPU: ERR_MRAM = the id
    PERFCOUNTER_CONFIG = 19  # perfcounter_config: code run as the host's counts no DPU cycles
    PERFCOUNTER_GET = 20     # perfcounter_get: the same
    UNALIGNED_SIZE = 21      # mram_read_unaligned / mram_write_unaligned of more than DMA_MAX_BYTES: ERR_BYTES
    UNALIGNED_MISMATCH = 22  # mram_write_unaligned whose WRAM source and MRAM destination differ modulo
                             # DMA_ALIGN: ERR_WRAM, ERR_MRAM = the two addresses


# ---- accesses across DPUs -------------------------------------------------------------
# Each DPU has its own MRAM: a launch on several DPUs logs what every DPU does
# to the arrays, so that the host can merge what merges (atomics whose old
# value is unused) and refuse any other sharing (edsl.dpu.sharing).

LOG_ENTRY = 4                         # i64 fields of a log entry: kind, mram_addr, end, site
LOG_ENDS = 32                         # i64 slots of a log's table by end address (a power of 2)


# ---- races between the tasklets of a DPU ----------------------------------------------
# A tasklet's race log: RaceLog slots (i64) that the host allocates, the
# entries (RACE_ENTRY i64 each: kind, address, end, site, the DPU's barrier
# generation) in a C-heap buffer that the model grows, to RACE_LOG_MAX_ENTRIES
# (40 MiB a tasklet; the check's sort takes about three times the logs of a
# DPU): past that, entries are counted and dropped, and the check refuses to
# answer (RACE_LOG_FULL) rather than exhaust the host's memory (PrIM's BS at
# 4 DPUs, 16 tasklets, took 9.3 GiB with 4 Mi entries a tasklet).

class RaceLog(IntEnum):
    LEN = 0              # entries used
    CAP = 1              # entries the buffer holds
    ENTRIES = 2          # the buffer's address
    DROPPED = 3          # entries past RACE_LOG_MAX_ENTRIES, not kept


RACE_LOG_SLOTS = 4
RACE_ENTRY = 5
RACE_LOG_MAX_ENTRIES = 1 << 20
RACE_LOG_FULL = ("the check of races between tasklets logs each access, and tasklet {tasklet} made more than "
                 f"{RACE_LOG_MAX_ENTRIES} of them: check a smaller input, or run without the check "
                 "(EDSL_RACE_CHECK=0)")
RACE_MRAM = 4                         # kind flag: the bytes are MRAM's (else WRAM's)
# Kinds of race log entries that order tasklets rather than access memory
# (their ACCESS_MASK bits 0), logged by the SDK headers of C functions
# (mutex.h, handshake.h, barrier.h's barriers of fewer tasklets): address: a
# synchronisation object, end - address: the number of its synchronisation.
# What a tasklet did before a RELEASE of (object, number) is ordered before
# what another does after its ACQUIRE of it, which waits for `site` releases
# of it (1: a mutex handed on; 2: a handshake's two sides; a barrier's count).
RACE_RELEASE = 16
RACE_ACQUIRE = 32
# ... and an order the check does not know (a barrier of fewer tasklets): a
# DPU that logs one is not checked.
RACE_UNORDERED = 48
# The synchronisations of one DPU the check replays at most (in Python, a few
# microseconds each): past that it refuses to answer, saying so.
RACE_MAX_SYNCS = 1 << 18
RACE_SYNCS_FULL = ("the check of races between tasklets replays each mutex and handshake, and the DPU made "
                   f"{{syncs}} of them, more than {RACE_MAX_SYNCS}: check a smaller input, or run without the "
                   "check (EDSL_RACE_CHECK=0)")


class Access(IntEnum):
    """The low bits of a log entry's kind."""
    READ = 1             # bytes a load used
    WRITE = 2            # bytes a store wrote
    ATOMIC = 3           # an atomic read-modify-write: its `AtomicOp` and flags above


class AtomicOp(IntEnum):
    """An atomic's operation, in a log entry's kind (`atomic_kind`)."""
    ADD = 1              # integer add
    FADD = 2
    MAX = 3              # signed integer
    MIN = 4
    UMAX = 5
    UMIN = 6
    FMAX = 7
    FMIN = 8
    AND = 9
    OR = 10
    XOR = 11
    XCHG = 12
    CAS = 13
    # Triton's float max / min on a float's bits (`tl.atomic_max` of f32 and
    # f64): a signed integer max (min) of the values with the sign bit clear,
    # an unsigned min (max) of those with it set, on one element. Logged as
    # one kind for both halves, so that DPUs merge them as the float max (min).
    FMAX_BITS = 14
    FMIN_BITS = 15


# Atomics that several DPUs may apply to one element: the host combines each
# DPU's result with the others' (those whose old value is unused).
MERGED_ATOMICS = frozenset(AtomicOp) - {AtomicOp.XCHG, AtomicOp.CAS}
# The fields of a log entry's kind: the access in its low bits, an atomic's
# operation, whether its old value is used, its float format, its element size.
ACCESS_MASK = 3
ATOMIC_OP_SHIFT, ATOMIC_OP_MASK = 2, 0x3F
ATOMIC_OLD_USED = 1 << 8              # kind flag: the atomic's old value is used
ATOMIC_FLOAT_SHIFT, ATOMIC_FLOAT_MASK = 12, 0xF
ATOMIC_SIZE_SHIFT = 16
ATOMIC_FLOAT = {"f16": 1, "bf16": 2, "f32": 3, "f64": 4}


class AtomicKind(NamedTuple):
    """What a log entry's kind says of an atomic."""
    op: AtomicOp
    old_used: bool
    size: int                         # bytes of an element
    float_type: str | None            # "f16", "bf16", "f32", "f64"; None: an integer

    @property
    def merged(self) -> bool:
        """Whether the host merges this atomic across DPUs."""
        return self.op in MERGED_ATOMICS and not self.old_used


def atomic_kind(op: AtomicOp, old_used: bool, size: int, float_type: str | None) -> int:
    """The log kind of an atomic on elements of `size` bytes of `float_type`."""
    return (Access.ATOMIC | int(op) << ATOMIC_OP_SHIFT | (ATOMIC_OLD_USED if old_used else 0)
            | ATOMIC_FLOAT.get(float_type, 0) << ATOMIC_FLOAT_SHIFT | size << ATOMIC_SIZE_SHIFT)


def atomic_parts(kind: int) -> AtomicKind:
    """The atomic a log entry's kind describes."""
    floats = {v: k for k, v in ATOMIC_FLOAT.items()}
    return AtomicKind(AtomicOp((kind >> ATOMIC_OP_SHIFT) & ATOMIC_OP_MASK), bool(kind & ATOMIC_OLD_USED),
                      kind >> ATOMIC_SIZE_SHIFT, floats.get((kind >> ATOMIC_FLOAT_SHIFT) & ATOMIC_FLOAT_MASK))


class Shared(IntEnum):
    """Why the merge across DPUs (edsl/dpu/merge.h) refuses what two DPUs
    did to one byte: uses that do not merge, different values stored, a read
    of what another DPU wrote."""
    USES = 0
    STORES = 1
    READ = 2


# The wording of the error for DPUs that share array elements, by why, with
# its operands (`str.format` fields: the two DPUs, the element, what each
# did, `USE_VERBS`, and each one's line, `SHARING_LINE` or ""), once: the
# model formats it (edsl.backend.model) and the exported host runner's C is
# generated from it (edsl.export.generate). Then `SHARING_ADVICE`.
SHARING_FORMATS = {
    Shared.USES: "DPU {first} {first_verb} {where}{first_line} and DPU {second} {second_verb} it{second_line}",
    Shared.STORES: "DPUs {first} and {second} store different values to {where}{second_line}",
    Shared.READ: "DPU {second} reads {where}{second_line}, which DPU {first} {first_verb} in the same "
                 "launch{first_line}",
}
SHARING_OPERANDS = {"first": int, "second": int, "where": str, "first_verb": str, "second_verb": str,
                    "first_line": str, "second_line": str}
SHARING_LINE = " (line {line})"
# An element of an array argument as errors name it (sharing, races).
ELEMENT_NAME = "element {index} of array '{array}'"
# What a DPU's use of a byte does to its element, by the use's kind: a byte
# it both stored to and updated atomically (merge.h's EDSL_MIXED), or updated
# with different atomics (EDSL_MIXED_ATOMICS); a read, a store, an atomic
# (`{op}`: its name, `{old_used}`: OLD_USED_VERB where its old value is used).
USE_VERBS = {"mixed": "stores to and atomically updates", "mixed_atomics": "applies different atomics to",
             "read": "reads", "write": "stores to", "atomic": "applies atomic_{op}{old_used} to"}
OLD_USED_VERB = " (its old value used)"

# What the error for DPUs that share array elements says after naming them:
# the model (edsl.backend.model) and the exported host runner say the same.
SHARING_ADVICE = ("On UPMEM every DPU has its own MRAM: DPUs see only their own writes, and the host "
                  "merges only atomics whose old value is unused (add, max, min, and, or, xor); run the "
                  "programs that share it on one DPU (num_dpus=1), or give each its own part of the array")

# Why a transfer outside the launch's arrays (Err.MRAM_BOUNDS) happens and what
# to do: the model and the exported host runner say the same after its operands.
# (The model's MRAM addresses are never host addresses either: edsl.dpu.support.)
_REACH = ("a DPU reaches only the MRAM the host transferred, at addresses of its own, where a host "
          "address (a data_ptr() value) reaches nothing: pass the arrays the kernel reaches as "
          "arguments of the kernel, e.g. a tuple of arrays, and offsets into them, not addresses")
OUTSIDE_ARRAYS = ("is outside the launch's arrays: an out-of-bounds pointer, or a pointer loaded "
                  f"from memory that is not an MRAM address of theirs ({_REACH})")

# ... and in a kernel calling C functions, whose MRAM is its arrays and their variables in MRAM.
OUTSIDE_KERNEL_C_MRAM = ("is outside the launch's arrays and its C functions' variables in MRAM: an out-of-bounds "
                         "pointer, or one into DPU_MRAM_HEAP_POINTER's heap, which holds a kernel's arrays (pass "
                         "the kernel's array as an MRAM pointer parameter)")

# ... and in a C function run alone, whose MRAM is its arrays and variables in MRAM (the model's alone).
OUTSIDE_C_MRAM = ("is outside the function's MRAM arrays and variables in MRAM: an out-of-bounds pointer "
                  "(each transfer must stay within one of them)")

# ... and in a whole DPU program, whose MRAM is its heap and its variables in MRAM.
OUTSIDE_PROGRAM_MRAM = ("is outside the DPU's MRAM heap (DPU_MRAM_HEAP_POINTER) and its variables in MRAM: "
                        "an out-of-bounds pointer")

# ... and when the transfer's pointer was loaded from memory at {where}.
OUTSIDE_ARRAYS_LOADED = ("is outside the launch's arrays: its pointer was loaded from memory at {where} "
                         f"and is not an MRAM address of theirs ({_REACH})")

# A kernel that makes the same access of the arrays in a `while` loop (a load, or
# an atomic that leaves its element as it was; same bytes, same line) this many
# times in a row, nothing else between
# (a `for` loop ends by itself: its accesses are not watched), waits for
# a value it can never see (Err.WAIT): another program's on its DPU, which
# runs after it, or another DPU's, which writes its own MRAM. (On a GPU such
# a loop waits for another program running at the same time.)
WAIT_REPEATS = 1 << 24

# ... what the model and the exported host runner say after its operands.
WAITS_FOREVER = ("it waits for a value that another program writes: on UPMEM a DPU runs its programs "
                 "one after another and sees only its own MRAM, so no other program's write can reach "
                 "it while it waits")

# What an error means, for the codes whose message has no operands: the model
# and the exported host runner say the same (`ERROR_FORMATS`).
NO_CYCLES = ("the DPU model and the SDK stand-ins run DPU code compiled for the host, which counts no DPU "
             "cycles (timing=True estimates them once a run is over)")
MESSAGES = {
    Err.ASSERT: "assertion failed",
    Err.INDEX: "index out of bounds",
    Err.ZERO_STEP: "range() arg 3 must not be zero",
    Err.DEADLOCK: ("deadlock at a barrier: tasklets that finished will never reach it "
                   "(every tasklet must reach every barrier)"),
    Err.MUTEX_UNLOCK: "mutex_unlock of a mutex this tasklet does not hold (undefined on a DPU)",
    Err.MUTEX_RELOCK: ("mutex_lock of a mutex this tasklet already holds: it would wait for itself "
                       "forever (a DPU's mutexes are not recursive)"),
    Err.SYNC_DEADLOCK: ("deadlock: every tasklet that has not finished waits, at a barrier, in "
                        "mutex_lock or in a handshake, and none can go on (what one waits for is held "
                        "or owed by another that waits too, or that finished)"),
    Err.HANDSHAKE_BUSY: ("handshake_wait_for of a tasklet that another tasklet already waits for (the "
                         "SDK returns an error code there, which the model does not give)"),
    **{code: f"{name}: {NO_CYCLES}" for code, name in ((Err.PERFCOUNTER_CONFIG, "perfcounter_config"),
                                                     (Err.PERFCOUNTER_GET, "perfcounter_get"))},
}

# The operands an error's message names (`ERROR_FORMATS`), and their types: the
# context's ERR_* slots (`mram` also a program id, or a polled value), and what
# the reader of the context makes of them: the transfer's name (`TRANSFER_NAMES`,
# by ERR_DIR), the DMA rule it breaks (`dma_violation`), the buffer it overruns
# (`OVERRUN_SIDES`), why it is wrong (`OUTSIDE_ARRAYS...`, or the model's
# `POLL_ON_MODEL`), the text of a `tl.device_assert`.
ERROR_OPERANDS = {"code": int, "nbytes": int, "mram": int, "wram": int,
                  "kind": str, "rule": str, "side": str, "why": str, "text": str}

# The wording of each error with its operands (`str.format` fields; `{mram:#x}`
# is an address in hex), once: the model formats it (`error_message`) and the
# exported host runner's C is generated from it (edsl.export.generate). A
# message whose text operand the reader lacks is `UNKNOWN_ERROR`.
ERROR_FORMATS = {
    Err.DMA_RULE: "{kind} breaks the DMA rules: {rule}",
    Err.MRAM_BOUNDS: "{kind} of {nbytes} bytes at MRAM address {mram:#x} {why}",
    Err.MRAM_OVERRUN: "{kind}: {nbytes} bytes overrun the {side}",
    Err.WRAM_OVERRUN: "{kind}: {nbytes} bytes overrun the {side}",
    Err.DEVICE_ASSERT: "device assertion failed (program {mram}): {text}",
    Err.WAIT: (f"the same access of {{nbytes}} bytes at MRAM address {{mram:#x}}, {WAIT_REPEATS} times "
               f"in a row: {WAITS_FOREVER}"),
    # (`why`: what the model adds, `POLL_ON_MODEL`; nothing on a DPU)
    Err.POLL: "tl.atomic_poll waits forever: the value is {mram}, not {wram}{why}",
    # (raw functions in C: alloc.h, seqread.h, handshake.h)
    Err.HEAP_FULL: "mem_alloc({nbytes}): the DPU's WRAM heap has {mram} of its {wram} bytes left (on a DPU, "
                   "mem_alloc faults)",
    Err.SEQREAD_STEP: "seqread_get steps {nbytes} bytes, more than SEQREAD_CACHE_SIZE ({mram}): undefined on a "
                      "DPU (read longer records with mram_read)",
    Err.HANDSHAKE_WHOM: "handshake_wait_for({mram}): a tasklet waits for another tasklet of its DPU, never for "
                        "itself nor for an id beyond its tasklets: it would wait forever",
    Err.UNALIGNED_SIZE: f"an unaligned MRAM copy (mram_unaligned.h) of {{nbytes}} bytes: at most {DMA_MAX_BYTES}",
    Err.UNALIGNED_MISMATCH: "mram_write_unaligned from WRAM address {wram:#x} to MRAM address {mram:#x}: the two "
                            f"must be equal modulo {DMA_ALIGN} (on a DPU, a fault)",
    **MESSAGES,
}
UNKNOWN_ERROR = "error code {code}"

POLL_ON_MODEL = (", and the DPU model runs one program at a time, so nothing can change it "
                 "(timeout_ns= gives up)")

# The name of a transfer by its direction (a context's ERR_DIR slot).
TRANSFER_NAMES = {READ: "mram_read", WRITE: "mram_write"}

# The buffer an EDSL transfer overruns, by error code and direction.
OVERRUN_SIDES = {(Err.MRAM_OVERRUN, READ): "MRAM source", (Err.MRAM_OVERRUN, WRITE): "MRAM destination",
                 (Err.WRAM_OVERRUN, READ): "WRAM buffer", (Err.WRAM_OVERRUN, WRITE): "WRAM source"}


def error_operands(fmt: str) -> list[tuple[str, str]]:
    """The (operand, format spec) fields of an error format, in order."""
    return [(name, spec) for _, name, spec, _ in _FORMATTER.parse(fmt) if name is not None]


def error_message(code: int, **operands) -> str:
    """The message of error `code` with its operands (`ERROR_OPERANDS`; a
    text operand that is None: the reader lacks it)."""
    fmt = ERROR_FORMATS.get(code)
    if fmt is None or any(operands.get(name) is None for name, _ in error_operands(fmt)):
        return UNKNOWN_ERROR.format(code=code)
    return fmt.format(code=code, **operands)


_FORMATTER = string.Formatter()
# ---- raw functions in C: the heap of alloc.h -------------------------------------------
# The SDK's mem_alloc takes WRAM from the area its program leaves free: WRAM
# less the program's variables and its tasklets' stacks (UPMEM SDK
# documentation, memory chapter, "Incremental Allocator"). The SDK sizes
# each tasklet's stack from the program's call graph when it links; the
# model cannot, and assumes C_STACK_BYTES per tasklet (an assumption: no
# primary source gives a figure for a given program).
C_STACK_BYTES = 1024
HEAP_ALIGN = 8                        # mem_alloc's pointers are 8-byte aligned (SDK documentation)


def c_heap_bytes(tasklets: int, variables: int, wram_arrays: int) -> int:
    """The bytes mem_alloc may take on a DPU running `tasklets` tasklets of a
    raw C function whose variables take `variables` bytes of WRAM and whose
    WRAM arrays take `wram_arrays` (0 where none is left)."""
    free = WRAM_BYTES - align_up(variables, HEAP_ALIGN) - align_up(wram_arrays, HEAP_ALIGN) \
        - tasklets * C_STACK_BYTES
    return max(0, free - free % HEAP_ALIGN)
