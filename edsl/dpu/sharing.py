"""Each DPU its own MRAM: what the DPUs of one launch did to the arrays,
gathered as the host of a UPMEM system gathers it.

On hardware every DPU receives the launch's arrays in its own MRAM and writes
there; the host reads the results back from each DPU. The DPU model runs the
DPUs of a launch in turn over one copy of the arrays: after each DPU,
`Gather.take` keeps what the DPU wrote (the bytes its access log, abi.NOTE,
names) and restores the arrays as they were transferred, so that the next
DPU sees them so. When all have run, `Gather.merge` combines the results
with the merge the exported host runner runs too, written once in C
(`merge.h`, edsl.dpu.merge):

- bytes that one DPU wrote are taken from it; bytes that several DPUs wrote
  must have the same value from each;
- an element that several DPUs updated with the same atomic whose old value
  is unused (add, max, min, and, or, xor: `AtomicKind.merged`) is combined
  DPU by DPU: the first DPU's value, then each other DPU's applied to it
  (add adds the DPU's change, final - transferred; max, min, and, or take
  its final value in; xor adds its change);
- anything else that two DPUs share is a `SharingError`: a read of bytes
  another DPU wrote, different values stored, atomics that do not merge
  (xchg, cas, one whose old value is used), an atomic and another access.

Within one DPU (its programs and tasklets) everything is legal.
"""
from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..target.dpu import (ACCESS_MASK, LOG_ENTRY, OLD_USED_VERB, PAGE_BYTES, PAGE_EPOCH_SHIFT, PAGE_OWNER_SHIFT,
                          PAGE_SHIFT, PAGE_STATE_MASK, SAVE_COUNT, SAVE_EPOCH, SAVE_MIXED, SAVE_ROW, SAVE_SPANS,
                          USE_VERBS, Access, Page, Shared, atomic_parts)
from .merge import MIXED, MIXED_ATOMICS, Merge, Sharing


@dataclass(frozen=True)
class Use:
    """One DPU's use of a byte: its kind (an abi log kind, or MIXED) and site."""
    dpu: int
    kind: int
    site: int

    def verb(self) -> str:
        """What the use does to an element, as a verb phrase (abi.USE_VERBS)."""
        if self.kind == MIXED:
            return USE_VERBS["mixed"]
        if self.kind == MIXED_ATOMICS:
            return USE_VERBS["mixed_atomics"]
        access = self.kind & ACCESS_MASK
        if access == Access.READ:
            return USE_VERBS["read"]
        if access == Access.WRITE:
            return USE_VERBS["write"]
        atomic = atomic_parts(self.kind)
        return USE_VERBS["atomic"].format(op=atomic.op.name.lower(), old_used=OLD_USED_VERB if atomic.old_used else "")


class SharingError(Exception):
    """Two DPUs of a launch share bytes of an array in a way that their own
    MRAMs cannot give: `address` (MRAM), the two uses, and why (abi.Shared)."""

    def __init__(self, address: int, first: Use, second: Use, why: Shared):
        super().__init__(why.name.lower())
        self.address, self.first, self.second, self.why = address, first, second, why


class _Spare:
    """The page states and saved copies of earlier launches' arrays, kept for
    the next launch of the same sizes (`Gather.release`) rather than
    allocated and faulted in afresh: on one machine a softmax launch of 24
    MiB on 16 threads right after a launch on one thread took 15 ms with
    fresh ones and 5 ms with kept ones (others showed no difference:
    docs/benchmarks.md). The oldest are dropped past `KEPT_BYTES`."""
    KEPT_BYTES = 256 << 20

    def __init__(self):
        self._lock = threading.Lock()
        self._kept: list[np.ndarray] = []

    def take(self, n: int, dtype, new: Callable) -> np.ndarray:
        """A kept array of `n` of `dtype`, as its last user left it; else `new(n, dtype)`."""
        dtype = np.dtype(dtype)
        with self._lock:
            for i, a in enumerate(self._kept):
                if a.size == n and a.dtype == dtype:
                    del self._kept[i]
                    return a
        return new(n, dtype)

    def give_back(self, arrays: list[np.ndarray]) -> None:
        with self._lock:
            self._kept.extend(a for a in arrays if a.nbytes <= self.KEPT_BYTES)
            total = sum(a.nbytes for a in self._kept)
            while total > self.KEPT_BYTES:
                total -= self._kept.pop(0).nbytes


_SPARE = _Spare()


class Gather:
    """The arrays of one launch (MRAM spans [lo, hi)) over DPUs run in turn;
    `read(address, n) -> bytes` and `write(address, data)` reach the MRAM the
    DPUs run on.

    The arrays as transferred (`pristine`) are kept page by page (abi.Page,
    PAGE_BYTES): all of them at once where they are made, or, with
    `saved_by_writes`, each page by the first transfer that writes it
    (`table`: the save table the runtime library's SAVE_PAGES fills, for
    DPUs whose every write is a transfer, on the host's memory; None where
    all are saved at once). Pages no DPU wrote are as transferred in the
    arrays; `save` copies them. A page saved by a DPU keeps which one, so
    that DPUs whose writes kept to pages of their own need no check of
    their logs (`written_apart`)."""

    def __init__(self, spans, read: Callable[[int, int], bytes], write: Callable[[int, bytes], None],
                 saved_by_writes: bool = False):
        self.spans: list[tuple[int, int]] = []
        for lo, hi in sorted((int(lo), int(hi)) for lo, hi in spans if hi > lo):
            if self.spans and lo <= self.spans[-1][1]:               # (overlapping views of one array)
                self.spans[-1] = (self.spans[-1][0], max(hi, self.spans[-1][1]))
            else:
                self.spans.append((lo, hi))
        self._starts = [lo for lo, _ in self.spans]
        self._ends = np.array([hi for _, hi in self.spans], dtype=np.int64)
        self.read, self.write = read, write
        # Each span's page states, then the epoch they were last used in: this
        # launch's is the next one (abi.SAVE_EPOCH), so that none is zeroed.
        self._states = [_SPARE.take((hi - lo - 1 >> PAGE_SHIFT) + 2, np.int64, np.zeros) for lo, hi in self.spans]
        self.epoch = max((int(s[-1]) for s in self._states), default=0) + 1
        if self.epoch >= 1 << 31:
            for states in self._states:
                states.fill(0)
            self.epoch = 1
        for states in self._states:
            states[-1] = self.epoch
        self.pages = [states[:-1] for states in self._states]
        self.pristine = [_SPARE.take(hi - lo, np.uint8, np.empty) for lo, hi in self.spans]
        self.table = None
        if saved_by_writes:
            self.table = np.zeros(SAVE_SPANS + SAVE_ROW * len(self.spans), dtype=np.int64)
            self.table[SAVE_COUNT] = len(self.spans)
            self.table[SAVE_EPOCH] = self.epoch
            self.table[SAVE_SPANS:] = [v for (lo, hi), pages, copy in zip(self.spans, self.pages, self.pristine)
                                       for v in (lo, hi, pages.ctypes.data, copy.ctypes.data)]
        else:
            self.save()
        self.claims: list[tuple[int, np.ndarray, list[bytes]]] = []     # (dpu, log rows, final bytes)
        self.reads: list[tuple[int, np.ndarray]] = []

    def _this_launch(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Span k's page states as kept, and which of them are of this launch's
        epoch (the others count as CLEAN)."""
        pages = self.pages[k]
        return pages, (pages >> PAGE_EPOCH_SHIFT) == self.epoch

    def page_states(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The states (`Page`) of span k's pages in this launch, and their
        owners (the id + 1 of the DPU that saved one, 0: none or the host)."""
        pages, now = self._this_launch(k)
        owner_bits = PAGE_EPOCH_SHIFT - PAGE_OWNER_SHIFT
        return (np.where(now, pages & PAGE_STATE_MASK, Page.CLEAN),
                np.where(now, (pages >> PAGE_OWNER_SHIFT) & ((1 << owner_bits) - 1), 0))

    def _page_runs(self, k: int, saved: bool):
        """The byte ranges [a, b) of span k (offsets from its start) that its
        pages in state SAVED (`saved`) or not cover, one per run of pages."""
        lo, hi = self.spans[k]
        pages, now = self._this_launch(k)
        chosen = (((pages & PAGE_STATE_MASK) == Page.SAVED) & now) == saved
        edges = np.flatnonzero(np.diff(np.r_[0, chosen.astype(np.int8), 0]))
        for start, stop in zip(edges[0::2].tolist(), edges[1::2].tolist()):
            yield start * PAGE_BYTES, min(hi - lo, stop * PAGE_BYTES)

    def written_apart(self) -> bool:
        """Whether the save table saw the DPUs keep apart: each page of the
        arrays written by one DPU, no read of them logged (abi.SAVE_MIXED;
        False without a table: their logs tell)."""
        return self.table is not None and not self.table[SAVE_MIXED]

    def save(self) -> None:
        """Keep the pages not saved yet as the arrays hold them (as transferred:
        no DPU wrote them)."""
        for k, (lo, _) in enumerate(self.spans):
            for a, b in self._page_runs(k, saved=False):
                self.pristine[k][a:b] = np.frombuffer(self.read(lo + a, b - a), dtype=np.uint8)
            self.pages[k][:] = self.epoch << PAGE_EPOCH_SHIFT | Page.SAVED

    def _pristine(self, lo: int, hi: int) -> bytes | None:
        k = bisect.bisect_right(self._starts, lo) - 1
        if k < 0 or hi > self.spans[k][1]:
            return None                  # (not the arrays': the DMA refused it)
        base = self.spans[k][0]
        return self.pristine[k][lo - base:hi - base].tobytes()

    def take(self, dpu: int, log: np.ndarray) -> None:
        """After DPU `dpu` ran (its access log `log`): keep the bytes it wrote,
        and restore them as transferred. Rows outside the arrays (a C
        function's variables in MRAM: each DPU's own) share nothing."""
        claims, reads = uses(self._of_arrays(log.reshape(-1, LOG_ENTRY)))
        finals = [self.read(lo, hi - lo) for _, lo, hi, _ in claims.tolist()]
        for _, lo, hi, _ in claims.tolist():
            before = self._pristine(lo, hi)
            if before is not None:
                self.write(lo, before)
        self.add(dpu, claims, finals, reads)

    def _of_arrays(self, rows: np.ndarray) -> np.ndarray:
        """The log rows that start in one of the spans (a transfer lies in one MRAM region)."""
        if not self.spans:
            return rows[:0]
        k = np.searchsorted(self._starts, rows[:, 1], side="right") - 1
        inside = (k >= 0) & (rows[:, 1] < self._ends[np.maximum(k, 0)])
        return rows if inside.all() else rows[inside]

    def add(self, dpu: int, claims: np.ndarray, finals: list[bytes], reads: np.ndarray) -> None:
        """DPU `dpu`'s result as `take` keeps it: its writes (coalesced log
        rows) with their final bytes, and its reads (log rows); `take` on
        another copy of the arrays gives them for a DPU run elsewhere
        (edsl.backend.ranks)."""
        self.claims.append((dpu, claims, finals))
        self.reads.append((dpu, reads))

    def release(self) -> None:
        """Give the page states and saved copies to the next launch (nothing
        may still write them, nor this Gather be used again)."""
        _SPARE.give_back(self._states + self.pristine)
        self._states = self.pages = self.pristine = []

    def restore(self) -> None:
        """Put every array back as transferred (the pages saved: no DPU wrote the others)."""
        for k, ((lo, _), p) in enumerate(zip(self.spans, self.pristine)):
            for a, b in self._page_runs(k, saved=True):
                self.write(lo + a, p[a:b].tobytes())

    def restored(self) -> bool:
        """Whether the arrays are as transferred (every write was logged)."""
        return all(self.read(lo, hi - lo) == p.data for (lo, hi), p in zip(self.spans, self.pristine))

    def merge(self) -> None:
        """Write the launch's results into the arrays (raises SharingError):
        merge.h's merge over the bytes some DPU wrote (the union of their
        claims: the merge's state is the size of what they wrote)."""
        taken = [(dpu, claims, finals) for dpu, claims, finals in self.claims if len(claims)]
        if not taken:
            return                       # (reads of bytes no DPU wrote share nothing)
        rows = np.concatenate([claims for _, claims, _ in taken])
        starts, ends = _union(rows[:, 1], rows[:, 2])
        offsets = np.r_[0, np.cumsum(ends - starts)]
        pristine = np.zeros(int(offsets[-1]), np.uint8)
        for lo, hi, at in zip(starts.tolist(), ends.tolist(), offsets.tolist()):
            before = self._pristine(lo, hi)
            if before is not None:
                pristine[at:at + hi - lo] = np.frombuffer(before, np.uint8)
        result, refused = np.empty_like(pristine), Sharing()
        with Merge(starts, ends, pristine, result, refused) as merge:
            for dpu, claims, finals in taken:
                merge.take(dpu, claims, *_part(claims, finals, starts, offsets))
            for dpu, reads in self.reads:
                merge.reads(dpu, reads)
        if refused.found:
            first, second = (Use(u.dpu, u.kind, u.site) for u in (refused.first, refused.second))
            raise SharingError(refused.address, first, second, Shared(refused.why))
        for lo, hi, at in zip(starts.tolist(), ends.tolist(), offsets.tolist()):
            self.write(lo, result[at:at + hi - lo].tobytes())


def _union(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The byte ranges [lo, hi) as the fewest ranges (in order, apart)."""
    order = np.argsort(lo, kind="stable")
    lo, reach = lo[order], np.maximum.accumulate(hi[order])
    firsts = np.flatnonzero(np.r_[True, lo[1:] > reach[:-1]])
    return lo[firsts], np.r_[reach[firsts[1:] - 1], reach[-1]]


def _part(claims: np.ndarray, finals: list[bytes], starts: np.ndarray, offsets: np.ndarray):
    """(part, its first position, its end): a DPU's final bytes in its claims,
    at their positions in the merge (`starts`, `offsets`: its spans), in a
    buffer over their hull."""
    k = np.searchsorted(starts, claims[:, 1], side="right") - 1
    pos = offsets[k] + claims[:, 1] - starts[k]
    lengths = claims[:, 2] - claims[:, 1]
    first, end = int(pos.min()), int((pos + lengths).max())
    part = np.empty(end - first, np.uint8)             # (merge.h reads only the claimed bytes)
    part[np.repeat(pos - first, lengths) + _ranges(lengths)] = np.frombuffer(b"".join(finals), np.uint8)
    return part, first, end


def uses(log: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A DPU's access log as `Gather` keeps it: the rows that write
    (coalesced) and those that read."""
    log = log.reshape(-1, LOG_ENTRY)
    return _coalesced(_claims(log)), log[(log[:, 0] & ACCESS_MASK) == Access.READ]


def apart(logs: list[np.ndarray], word: int = 1) -> bool:
    """Whether the DPUs whose access logs these are (DPU d's at index d) kept
    apart: no byte that one DPU wrote is read or written by another. DPUs
    that kept apart give the same results on one shared copy of the arrays
    as each on its own (`Gather`), so they need not run one by one.

    DPUs that ran at the same time must also have written no `word` (8: a
    DMA transfer's unit, a power of 2) in common: a store of part of a word
    reads and writes back all of it, which loses another DPU's store into
    the rest. (All DPUs' rows at once: a launch's host time goes here.)"""
    rows = [log.reshape(-1, LOG_ENTRY) for log in logs]
    counts = [len(r) for r in rows]
    if not sum(counts):
        return True
    table = np.concatenate(rows)
    dpu = np.repeat(np.arange(len(rows)), counts)
    read = (table[:, 0] & ACCESS_MASK) == Access.READ
    claim = ~read & (table[:, 2] > table[:, 1])
    if claim.all():                       # (every row writes: no selection to make)
        lo, hi, owner = table[:, 1], table[:, 2], dpu
    else:
        lo, hi, owner = table[claim, 1], table[claim, 2], dpu[claim]
    if not len(lo):
        return True
    if word > 1:
        lo, hi = lo & -word, (hi + word - 1) & -word
    order = np.argsort(lo, kind="stable")
    lo, hi, owner = lo[order], hi[order], owner[order]
    ends = np.maximum.accumulate(hi)
    # Claims of two DPUs overlap iff some claim starts before the furthest
    # end so far of a claim of another DPU (the furthest end's owner is
    # enough: the first overlap in address order is always seen so). Where
    # no claim starts before the furthest end so far, none overlap.
    if (lo[1:] < ends[:-1]).any():
        before = _running_argmax(hi)[:-1]
        if ((lo[1:] < hi[before]) & (owner[before] != owner[1:])).any():
            return False
    if not read.any():
        return True
    # Reads: each claimed byte a read touches must be its own DPU's (claims of
    # different DPUs are now disjoint). Claims a read may touch: from the first
    # whose running end passes its start to the last starting before its end
    # (a few more than it touches: a read near another DPU's claim may make
    # the DPUs run again one by one, never a wrong answer).
    changes = np.flatnonzero(owner[1:] != owner[:-1]) + 1
    first = np.searchsorted(ends, table[read, 1], side="right")
    last = np.searchsorted(lo, table[read, 2], side="left")
    some = first < last
    first, last, reader = first[some], last[some], dpu[read][some]
    mixed = np.searchsorted(changes, last, side="left") > np.searchsorted(changes, first, side="right")
    return not (mixed.any() or (owner[first] != reader).any())


def _claims(log: np.ndarray) -> np.ndarray:
    """The rows of an access log that write (stores and atomics), non-empty."""
    return log[((log[:, 0] & ACCESS_MASK) != Access.READ) & (log[:, 2] > log[:, 1])]


def _running_argmax(v: np.ndarray) -> np.ndarray:
    """For each i, the index of the largest of v[:i + 1] (the first such)."""
    best = np.maximum.accumulate(v)
    new = np.r_[True, best[1:] > best[:-1]]
    return np.maximum.accumulate(np.where(new, np.arange(len(v)), 0))


def _coalesced(claims: np.ndarray) -> np.ndarray:
    """The claims of one DPU (its tasklets' logs), each run of overlapping or
    adjacent claims of one kind as one (with the run's first site)."""
    if len(claims) < 2:
        return claims
    claims = claims[np.lexsort((claims[:, 1], claims[:, 0]))]         # by kind, then address
    # The furthest end so far within each kind (the kind's rank lifts its ends
    # above every earlier kind's: addresses are below 2**50).
    rank = np.cumsum(np.r_[0, claims[1:, 0] != claims[:-1, 0]]) << 50
    reach = np.maximum.accumulate(claims[:, 2] + rank) - rank
    new = np.ones(len(claims), dtype=bool)
    new[1:] = (claims[1:, 0] != claims[:-1, 0]) | (claims[1:, 1] > reach[:-1])
    starts = np.flatnonzero(new)
    out = claims[starts].copy()
    out[:, 2] = np.maximum.reduceat(claims[:, 2], starts)
    return out


def _ranges(lengths: np.ndarray) -> np.ndarray:
    """0..n-1 for each n of `lengths`, concatenated."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(total, dtype=np.int64) - starts
