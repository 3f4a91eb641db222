"""Every lowering the converter registers (`core.LOWERINGS`, filled by the
`@lowers` decorators of the modules under edsl/backend/convert/) is reached
by the tests: its op is in the golden TTIR corpus that test_ttir_corpus.py
converts (every Triton version's folder), or its op name is written in a
test file under tests/.

A new lowering with neither fails here: add a test kernel that uses the op
(and regenerate the corpus, tests/backend/ttir/regenerate.py) or a test
that names it."""
from __future__ import annotations

import functools
import pathlib
import re

import edsl.backend.convert  # noqa: F401  (imports the family modules: registers every lowering)
from edsl.backend.convert.core import LOWERINGS
from test_ttir_corpus import FILES, load

TESTS = pathlib.Path(__file__).resolve().parents[2]
ELEMENTWISE = "<elementwise>"      # the pattern of the arith.* / math.* ops with none of their own

# Registered lowerings that neither the corpus nor a test file reaches today.
# The list may only shrink: a new lowering is not added here, and a name
# that becomes reached must be removed (the second test fails until it is).
UNREACHED_TODAY = frozenset({
    "scf.execute_region",    # control.lower_execute_region: no corpus kernel has one, no test names it
    "tt.atomic_cas",         # tl.atomic_cas: compiled by test_dpus_own_mram.py, not in the corpus
    "tt.atomic_poll",        # tl.atomic_poll (Triton 3.7 on): compiled by test_control_atomic_poll.py only
    "tt.gather",             # tl.gather: compiled by test_shape_gather_and_histogram.py, not in the corpus
    "tt.get_num_programs",   # tl.num_programs: no test kernel of the dpu backend uses it
    "tt.int_to_ptr",         # int.to(tl.pointer_type(..)): compiled by test_memory.py, not in the corpus
    "tt.map_elementwise",    # tl.map_elementwise: compiled by test_calls.py, not in the corpus
    "tt.mulhiui",            # tl.umulhi: no test kernel uses it
    "tt.precise_divf",       # tl.div_rn: no test kernel uses it
    "tt.precise_sqrt",       # tl.sqrt_rn: no test kernel uses it
    "tt.ptr_to_int",         # ptr.to(tl.int64): compiled by test_memory.py, not in the corpus
    "ub.poison",             # made by structuring (lift-cf-to-scf) from a corpus kernel's cf ops
})


def _pattern_of(name: str) -> str | None:
    """The registry key whose lowering an op named `name` reaches, as
    `converter.Converter.lower_op` picks it (None: refused)."""
    if name in LOWERINGS:
        return name
    if name.startswith(("arith.", "math.")):
        return ELEMENTWISE
    return None


@functools.lru_cache(maxsize=None)
def _reached_by_corpus() -> frozenset:
    """Registry keys the ops of the corpus reach (its `// view:` lines name
    every op of a kernel, under the names the reader reads them as)."""
    names = {op.name for path in FILES for op in load(path)[1]}
    return frozenset(k for k in map(_pattern_of, names) if k is not None)


@functools.lru_cache(maxsize=None)
def _test_texts() -> tuple:
    """The text of every test file under tests/ but this one."""
    me = pathlib.Path(__file__).resolve()
    return tuple(p.read_text() for p in sorted(TESTS.rglob("*.py")) if p.resolve() != me)


def _named_by_a_test(name: str) -> bool:
    word = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")
    return any(word.search(text) for text in _test_texts())


def _unreached() -> set:
    corpus = _reached_by_corpus()
    return {k for k in LOWERINGS if k not in corpus and not _named_by_a_test(k)}


def test_the_corpus_is_read():
    assert len(FILES) >= 80 and "tt.load" in _reached_by_corpus(), len(FILES)


def test_every_registered_lowering_is_reached():
    new = sorted(_unreached() - UNREACHED_TODAY)
    assert not new, (f"lowerings no test reaches (not in the TTIR corpus, op name in no file under tests/): "
                     f"{new}; add a test kernel using each, or a test naming it")


def test_the_unreached_list_only_shrinks():
    unreached = _unreached()
    reached = sorted(UNREACHED_TODAY & set(LOWERINGS) - unreached)
    gone = sorted(UNREACHED_TODAY - set(LOWERINGS))
    assert not reached, f"now reached: remove {reached} from UNREACHED_TODAY"
    assert not gone, f"no longer registered: remove {gone} from UNREACHED_TODAY"


def test_each_lowering_family_has_its_test_file_with_the_corpus_check():
    """Each module of edsl/backend/convert that registers lowerings (a family)
    is tested by tests/backend/convert/test_<family>.py, which checks the
    family's IR at 1 and 4 tasklets and under a WRAM limit (family_ir)."""
    families = {pattern._rewrite.__module__.rsplit(".", 1)[-1] for pattern in LOWERINGS.values()}
    here = pathlib.Path(__file__).parent
    assert {"elementwise", "shape", "memory", "reduce", "dot", "control", "calls", "debug"} <= families
    for family in sorted(families):
        test = here / f"test_{family}.py"
        assert test.exists(), f"no {test.name} for the lowerings of convert/{family}.py"
        assert re.search(r"family_ir\.check_(family|kernel)\(", test.read_text()), test.name
