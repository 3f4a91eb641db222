"""The IR-text check each lowering family's tests make on the golden TTIR
corpus (`test_ttir_corpus.py`): every corpus kernel holding one of the
family's ops, converted for 1 tasklet, for 4, and for 4 under a WRAM limit
one byte below what it needs.

At every setting the kernel's `tt.*` ops are gone and what the family's
lowerings leave is in the text (`markers`); one tasklet needs no barrier;
under the limit, tiles are kept in MRAM within it (a spill record naming
the tile's line) or the kernel is refused naming its line and its need."""
from __future__ import annotations

import re

import pytest

from edsl.backend.convert import convert_ttir
from edsl.backend.convert.wram import WramFull
from test_ttir_corpus import MINE, load

BARRIER_CALL = re.compile(r"llvm\.call @edsl_dpu_barrier\(")


def kernels_with(ops: set[str], limit: int = 4) -> list:
    """(name, TTIR text, op names) of up to `limit` corpus kernels with one of
    `ops` whose EDSL functions, if any, this process knows (none: fl.call
    kernels are traced elsewhere)."""
    found = []
    for path in MINE:
        text, view = load(path)
        names = {v.name for v in view}
        if names & ops and "@__edsl_" not in text:
            found.append((path.stem, text, names))
    if not found:
        pytest.fail(f"no corpus kernel has any of {sorted(ops)}")
    return found[:limit]


def kernel_text(module) -> str:
    """The converted kernel, without the program's entry."""
    text = str(module)
    return text[:text.index("func.func @__dpu_main")]


def converted(text: str, tasklets: int, wram_limit: int | None = None):
    module, info = convert_ttir(text, tasklets=tasklets, wram_limit=wram_limit)
    return kernel_text(module), info


def check_family(ops: set[str], markers=lambda names: [], barriers_at_4: bool = False) -> list:
    """`check_kernel` on every corpus kernel with one of `ops`;
    `markers(names)`: what the family's lowerings leave in a kernel of TTIR op
    names `names`. Returns the kernels' names."""
    seen = []
    for name, text, names in kernels_with(ops):
        check_kernel(name, text, markers(names), barriers_at_4)
        seen.append(name)
    return seen


def check_kernel(name: str, text: str, markers: list[str], barriers_at_4: bool = False) -> None:
    """Kernel `name` (TTIR `text`) converted at the three settings: no `tt.*`
    op left, each of `markers` in the text, no barrier for one tasklet (and
    some for 4 where `barriers_at_4`: the family's data crosses tasklets),
    and under the WRAM limit tiles kept in MRAM or a refusal at its line."""
    for tasklets in (1, 4):
        ir, info = converted(text, tasklets)
        assert info.tasklets == tasklets, name
        assert not re.search(r'"?tt\.\w+', ir), (name, tasklets, "a tt op was left")
        for marker in markers:
            assert marker in ir, (name, tasklets, marker)
        calls = len(BARRIER_CALL.findall(ir))
        if tasklets == 1:
            assert calls == 0, (name, "one tasklet meets no one at a barrier")
        elif barriers_at_4:
            assert calls > 0, (name, "4 tasklets share the family's data")
    need = info.wram_bytes
    try:
        ir, info = converted(text, 4, need - 1)
    except WramFull as err:
        assert err.loc is not None and err.loc.filename.endswith(".py") and err.loc.lineno > 0, name
        assert f"needs {need} bytes of WRAM" in str(err), (name, str(err))
    else:
        assert info.wram_bytes <= need - 1 and info.scratch_bytes > 0 and info.spills, name
        assert all(r.describe().split(": ")[0].rsplit(" at line ", 1)[-1].isdigit() for r in info.spills), name
