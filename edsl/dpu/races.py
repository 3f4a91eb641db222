"""Races between the tasklets of one DPU, found in their race logs.

On UPMEM a DPU's tasklets interleave instruction by instruction: two of them
touching the same WRAM or MRAM bytes with nothing ordering them, one of them
writing, give whatever the interleaving gives. The model runs tasklets
without preemption between synchronisations, so such code gives one answer
there and another on hardware. With the check on (a launch option), every
access EDSL code makes (elements, and both sides of each DMA) is logged by
its tasklet with the DPU's barrier generation (abi.RACE_NOTE, Ctx.RACE);
after the launch, two accesses of one byte by different tasklets in the same
generation (no barrier between them; a launch's start and end separate
launches), at least one a write and not both atomic, are a race -- unless
the mutexes and handshakes of C functions order them: their headers log
each release and acquire (abi.RACE_RELEASE, RACE_ACQUIRE), replayed here as
vector clocks (`_clocks`), and a byte's accesses are then checked in an
order the clocks allow (`_unordered_pair`).

The check works on units of the bytes: each logged access is spread over
units of the largest power of two (up to 8) that divides every access's
bounds (one unit an element where all elements have one size; a DMA at most
2048 bytes), and one sort of their keys groups them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..target.dpu import (ACCESS_MASK, RACE_ACQUIRE, RACE_MAX_SYNCS, RACE_MRAM, RACE_RELEASE, RACE_SYNCS_FULL,
                          RACE_UNORDERED, Access)


@dataclass(frozen=True)
class RaceAccess:
    """One side of a race: the tasklet, whether it writes, the site of its
    access and the access's bytes [lo, hi)."""
    tasklet: int
    kind: int              # an Access code
    site: int
    lo: int
    hi: int

    @property
    def verb(self) -> str:
        return {Access.READ: "reads", Access.WRITE: "writes"}.get(self.kind, "updates atomically")


@dataclass(frozen=True)
class Race:
    """Two tasklets' unordered accesses of byte `address` (MRAM's, if `mram`;
    else WRAM's), `first` a write."""
    address: int
    mram: bool
    first: RaceAccess
    second: RaceAccess


# A byte's key: the barrier generation, the space, then the address (below
# 2**48: the model's host and MRAM addresses), so that one sort of int64 keys
# orders accesses as the check takes them. Generations beyond the key's bits
# are taken in turns.
_SPACE_SHIFT, _GEN_SHIFT = 48, 49
_GENS_AT_ONCE = 1 << (63 - _GEN_SHIFT)


def first_race(logs: Sequence[np.ndarray]) -> Race | None:
    """The race of lowest generation, then lowest space and address, among
    the accesses of one DPU's tasklets (`logs[t]`: tasklet t's entries,
    abi.RACE_ENTRY i64 each: kind, address, end, site, generation); None if
    there is none."""
    logs = [np.asarray(log, np.int64).reshape(-1, 5) for log in logs]
    if sum(1 for log in logs if len(log)) < 2:
        return None                       # (one tasklet alone cannot race)
    e = np.concatenate(logs)
    tid = np.repeat(np.arange(len(logs)), [len(log) for log in logs])
    sync = (e[:, 0] & ACCESS_MASK) == 0
    rows, clocks = None, ()
    if sync.any():
        if (e[sync, 0] == RACE_UNORDERED).any():
            return None                   # (an order the check does not know: not checked)
        if int(sync.sum()) > RACE_MAX_SYNCS:
            from ..base.errors import DpuError
            raise DpuError(RACE_SYNCS_FULL.format(syncs=int(sync.sum())))
        rows, *clocks = _clocks(logs)
        e, tid, rows = e[~sync], tid[~sync], rows[~sync]
        if not len(e):
            return None
    gen = e[:, 4]
    for base in range(int(gen.min()), int(gen.max()) + 1, _GENS_AT_ONCE):
        turn = np.flatnonzero((gen >= base) & (gen < base + _GENS_AT_ONCE))
        race = _first_race_in(e[turn], tid[turn], base, None if rows is None else (rows[turn], *clocks))
        if race is not None:
            return race
    return None


def _clocks(logs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The vector clocks of the entries of `logs` (tasklet by tasklet, as
    concatenated): what each tasklet's own count of releases was known to be
    where the entry was logged, through the RELEASE and ACQUIRE entries of
    mutexes and handshakes; as (each entry's row, the rows: one a tasklet's
    stretch between two synchronisations, the step of the replay at which
    each row began). Entry a (tasklet i) is ordered before entry b where
    clock_b[i] > clock_a[i]; rows in the order of their steps are in an order
    the clocks allow. The synchronisations are replayed in an order they
    allow: an acquire once the releases it joins are (all those logged, where
    the log holds fewer)."""
    n = len(logs)
    logged: dict[tuple, int] = {}
    for log in logs:
        for obj, end in log[log[:, 0] == RACE_RELEASE][:, 1:3].tolist():
            logged[obj, end - obj] = logged.get((obj, end - obj), 0) + 1
    vc = np.zeros((n, n), np.int64)
    released: dict[tuple, list] = {}
    syncs = [log[(log[:, 0] & ACCESS_MASK) == 0, :4].tolist() for log in logs]
    at = [0] * n
    seg = [[vc[t].copy()] for t in range(n)]          # each tasklet's clock after each of its syncs
    began = [[0] for _ in range(n)]
    step = 0
    while any(at[t] < len(syncs[t]) for t in range(n)):
        moved = False
        for t in range(n):
            while at[t] < len(syncs[t]):
                kind, obj, end, need = syncs[t][at[t]]
                key = (obj, end - obj)
                if kind == RACE_RELEASE:
                    vc[t, t] += 1
                    joined = released.setdefault(key, [np.zeros(n, np.int64), 0])
                    np.maximum(joined[0], vc[t], out=joined[0])
                    joined[1] += 1
                elif kind == RACE_ACQUIRE:
                    joined = released.get(key, [None, 0])
                    if joined[1] < min(need, logged.get(key, 0)):
                        break
                    if joined[0] is not None:
                        np.maximum(vc[t], joined[0], out=vc[t])
                step += 1
                seg[t].append(vc[t].copy())
                began[t].append(step)
                at[t] += 1
                moved = True
        if not moved:                       # (a run stopped mid-way: the first waiting acquire goes on)
            t = next(t for t in range(n) if at[t] < len(syncs[t]))
            step += 1
            seg[t].append(vc[t].copy())
            began[t].append(step)
            at[t] += 1
    rows, first = [], 0
    for t, log in enumerate(logs):
        sync = (log[:, 0] & ACCESS_MASK) == 0
        rows.append(first + np.cumsum(sync) - sync)
        first += len(seg[t])
    return (np.concatenate(rows), np.concatenate([np.asarray(s) for s in seg]),
            np.concatenate([np.asarray(b) for b in began]))


def _first_race_in(e: np.ndarray, tid: np.ndarray, base: int, clocks: tuple | None) -> Race | None:
    kind, lo, hi, site, gen = e.T
    if not len(e):
        return None
    assert int(hi.max()) <= 1 << _SPACE_SHIFT, "race log addresses beyond 2**48"
    access = kind & ACCESS_MASK
    space = (kind & RACE_MRAM) != 0
    # Every unit of every access: units of the largest power of two (at most
    # 8) that every access's bounds are multiples of, so that one element is
    # one unit in the common case; a unit is then a byte where bounds are odd.
    bounds = np.bitwise_or.reduce(np.concatenate([lo, hi])) | 8
    unit = int(bounds & -bounds)
    n = (hi - lo) // unit
    index = np.repeat(np.arange(len(e)), n)
    key = ((gen - base) << _GEN_SHIFT) | (space.astype(np.int64) << _SPACE_SHIFT) | lo
    key = key[index] + (np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)) * unit
    order = np.argsort(key, kind="stable")
    index, key = index[order], key[order]
    start = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    t, a = tid[index], access[index]
    big = np.iinfo(np.int64).max

    def lowest(mask):
        return np.minimum.reduceat(np.where(mask, t, big), start)

    def highest(mask):
        return np.maximum.reduceat(np.where(mask, t, -1), start)
    atomic = a == Access.ATOMIC
    every = np.ones(len(t), bool)
    # A plain write and another tasklet's access; or an atomic and another
    # tasklet's plain access.
    racy = (lowest(a == Access.WRITE) != big) & (lowest(every) != highest(every))
    at_lo, at_hi, pl_lo, pl_hi = lowest(atomic), highest(atomic), lowest(~atomic), highest(~atomic)
    racy |= (at_lo != big) & (pl_lo != big) & ~((at_lo == at_hi) & (pl_lo == pl_hi) & (at_lo == pl_lo))

    def side(i) -> RaceAccess:
        return RaceAccess(int(tid[i]), int(access[i]), int(site[i]), int(lo[i]), int(hi[i]))
    for k in np.flatnonzero(racy).tolist():
        group = index[start[k]:start[k + 1] if k + 1 < len(start) else len(index)]
        if clocks is None:
            group = group[np.lexsort((group, tid[group]))]              # by tasklet, then log order
            pair = _pair(group, tid, access)
        else:
            pair = _unordered_pair(group, tid, access, *clocks)
        if pair is not None:
            address = int(key[start[k]]) & ((1 << _SPACE_SHIFT) - 1)
            return Race(address, bool(space[group[0]]), side(pair[0]), side(pair[1]))
        assert clocks is not None, "a racy byte without a racing pair"
    return None


def _unordered_pair(group, tid, access, rows, table, began) -> tuple[int, int] | None:
    """Two accesses of one byte (`group`) that race though the tasklets
    synchronise (a plain write and any access, or an atomic and a plain
    access, neither ordered before the other by the clocks); None. The
    accesses are taken in an order the clocks allow, each checked against
    the last write and the reads and atomics since (FastTrack, Flanagan and
    Freund, PLDI 2009): where none raced before, those are the ones it could
    race with."""
    order = group[np.lexsort((group, began[rows[group]]))]

    def before(i, j) -> bool:
        return table[rows[j], tid[i]] > table[rows[i], tid[i]]
    write, reads, atomics = None, {}, {}
    for x in order.tolist():
        t, a = int(tid[x]), int(access[x])
        if write is not None and tid[write] != t and not before(write, x):
            return write, x
        against = (list(reads.values()) if a != Access.READ else []) + \
            (list(atomics.values()) if a != Access.ATOMIC else [])
        for y in against:
            if tid[y] != t and not before(y, x):
                return (x, y) if a != Access.READ else (y, x)
        if a == Access.WRITE:
            write, reads, atomics = x, {}, {}
        elif a == Access.READ:
            reads[t] = x
        else:
            atomics[t] = x
    return None


def _pair(group, tid, access) -> tuple[int, int]:
    """Two accesses of `group` (entry numbers, in tasklet order) that race,
    with nothing but barriers ordering the tasklets."""
    writes = [i for i in group if access[i] == Access.WRITE]
    if writes:
        w = writes[0]
        return w, next(i for i in group if tid[i] != tid[w])
    for a in (i for i in group if access[i] == Access.ATOMIC):
        plain = [i for i in group if access[i] != Access.ATOMIC and tid[i] != tid[a]]
        if plain:
            return a, plain[0]
    raise AssertionError("a racy byte without a racing pair")


# The launch option's environment variable: "1" checks every launch that
# does not say (the project's own tests run with it).
ENVIRONMENT = "EDSL_RACE_CHECK"


def requested(option: bool | None) -> bool:
    """Whether a launch checks races: its option, else the environment variable."""
    if option is not None:
        return bool(option)
    import os
    return os.environ.get(ENVIRONMENT, "").strip().lower() in ("1", "true", "yes", "on")


def raise_first(logs: Sequence[np.ndarray], what: str, sites, arrays: Sequence) -> None:
    """The first race among one DPU's tasklet race `logs`, raised as a
    DpuError (none: nothing), the byte named by the array of `arrays`,
    (name, NumPy array), that holds it (a byte of an array of raw bytes,
    NumPy's void type: a C program's variable)."""
    from ..base.errors import DpuError
    race = first_race(logs)
    if race is None:
        return

    def name(address: int, mram: bool) -> str | None:
        for pname, a in arrays:
            if a.ctypes.data <= address < a.ctypes.data + a.nbytes:
                unit = "byte" if a.dtype.kind == "V" else "element"
                return f"{unit} {(address - a.ctypes.data) // a.itemsize} of {pname!r}"
        return None
    text, loc = message(race, what, sites, name)
    raise DpuError(text, loc)


def message(race: Race, what: str, sites, name=None) -> tuple[str, object]:
    """The words of `race` and the source position to show (its first access's).
    `name(address, mram)`: how the launch names that byte ("element 3 of
    'total'"), or None."""
    a, b = race.first, race.second
    first = sites.get(a.site)
    in_c = first is not None and not first.filename.endswith(".py")
    where = (name(race.address, race.mram) if name else None) or \
        ("a byte of MRAM" if race.mram else "a byte of WRAM" if in_c else "a byte of WRAM (a tile or wram_alloc buffer)")

    def at(side: RaceAccess) -> str:
        """Its line and column (the first side's file, where the error points, unless another's)."""
        loc, first = sites.get(side.site), sites.get(a.site)
        if loc is None:
            return ""
        other = f" of {loc.filename}" if first is not None and loc.filename != first.filename else ""
        return f" at line {loc.lineno}{other} (column {(loc.col or 0) + 1})"
    barrier = "barrier_wait" if in_c else "edsl.barrier()"
    between = "nothing ordering them (a barrier, a mutex handed on, a handshake)" if in_c else \
        "no barrier between them"
    text = (f"{what}: tasklets {a.tasklet} and {b.tasklet} race on {where}: tasklet {a.tasklet} {a.verb} it"
            f"{at(a)} and tasklet {b.tasklet} {b.verb} it{at(b)}, with {between}; on UPMEM the "
            f"tasklets interleave and the result depends on their order (separate the accesses with "
            f"{barrier}, or give each tasklet its own elements)")
    return text, sites.get(a.site)
