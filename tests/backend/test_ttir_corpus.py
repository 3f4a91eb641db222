"""The TTIR reader on the real TTIR that Triton prints: the golden corpus of
every example and test kernel, one folder per Triton version (made by
`ttir/regenerate.py`), each file the TTIR followed by Triton's own view of it
(`// view:` lines, from Triton's `module.walk`).

Every file of the installed Triton's version is read back by Triton's parser
(whose view must be the recorded one), read by the reader (checked op for op
against Triton's view), and converted (or refused with a `CompileError` at
the kernel's line). CI reads the lowest version's folder in its stage with
that Triton."""
import pathlib

import pytest
import triton

from edsl.backend.convert import convert_ttir, new_context
from edsl.backend import triton_internals, ttir_reader
from edsl.backend.ttir_reader import OpView, check_view, read_ttir, split_top, triton_view
from edsl.base.errors import CompileError, DpuError

CORPUS = pathlib.Path(__file__).resolve().parent / "ttir"
FILES = sorted(CORPUS.glob("*/*.mlir"))
VERSIONS = sorted({f.parent.name for f in FILES})
# Each folder is read by the Triton that printed it (a newer Triton's parser
# may read an older text differently, e.g. its `gpu.barrier`).
MINE = [f for f in FILES if f.parent.name == triton.__version__]
IDS = [f.stem for f in MINE]


def _view_of(line: str) -> OpView:
    """An `OpView` from its printed form `name : (A, B) -> (R)`."""
    name, types = line.split(" : ", 1)
    ins, outs = split_top(types, "->")
    return OpView(name, tuple(t for t in split_top(ins.strip()[1:-1]) if t),
                  tuple(t for t in split_top(outs.strip()[1:-1]) if t))


def load(path: pathlib.Path):
    """(TTIR text, Triton's view) of a corpus file."""
    text = path.read_text()
    lines = text.splitlines()
    view = [_view_of(line[len("// view: "):]) for line in lines if line.startswith("// view: ")]
    return text, view


def test_the_corpus_covers_the_lowest_and_highest_supported_triton():
    assert {"3.6.0", "3.9.0"} <= set(VERSIONS)
    for version in VERSIONS:
        assert len([f for f in FILES if f.parent.name == version]) >= 40
    assert MINE, f"no corpus folder for the installed Triton {triton.__version__}: run ttir/regenerate.py"


@pytest.mark.parametrize("path", MINE, ids=IDS)
def test_reader_matches_tritons_view(path):
    text, view = load(path)
    assert view and view[-1].name == "builtin.module"
    assert triton_view(triton_internals.parse_ttir(text)) == view          # the text is the module it was printed from
    read_ttir(text, new_context())


@pytest.mark.parametrize("path", MINE, ids=IDS)
def test_converter_takes_or_refuses_at_the_kernel_line(path):
    text, view = load(path)
    try:
        convert_ttir(text, tasklets=4)
    except (CompileError, DpuError) as err:
        assert err.loc is not None and err.loc.filename.endswith(".py"), str(err)
        # (an fl.call kernel's EDSL function is known to the process that traced
        # the kernel only: the fl tests convert those)
        assert ("not supported" in str(err) or "WRAM" in str(err)
                or ("unknown in this process" in str(err) and "@__edsl_" in text)), str(err)


def _any_file_with(op: str):
    for path in MINE:
        text, view = load(path)
        if any(v.name == op for v in view):
            return text, view
    pytest.fail(f"no kernel of the corpus has {op}")


def test_a_misread_op_is_a_compile_error_naming_it_and_its_line(monkeypatch):
    """A reader that reads one op as another (both parse: unregistered ops with
    the same types) never makes a program."""
    text, view = _any_file_with("tt.splat")
    parse = ttir_reader._parse_generic
    monkeypatch.setattr(ttir_reader, "_parse_generic",
                        lambda generic, ctx: parse(generic.replace('"tt.splat"(', '"tt.broadcast"('), ctx))
    with pytest.raises(CompileError, match=r"read operation 'tt.broadcast' as .* where Triton has "
                                           r"tt.splat") as err:
        read_ttir(text, new_context())
    assert err.value.loc is not None and err.value.loc.filename.endswith(".py")


def test_types_other_than_tritons_are_a_compile_error():
    text, view = _any_file_with("tt.load")
    k = next(i for i, v in enumerate(view) if v.name == "tt.load")
    wrong = OpView("tt.load", view[k].operands, tuple(t.replace("f32", "f16") for t in view[k].results))
    module = read_ttir(text, new_context())
    with pytest.raises(CompileError, match=r"read operation 'tt.load' as .* where Triton has tt.load"):
        check_view(module, view[:k] + [wrong] + view[k + 1:])


def test_an_op_missing_from_the_view_is_a_compile_error():
    text, view = _any_file_with("tt.load")
    k = next(i for i, v in enumerate(view) if v.name == "tt.load")
    module = read_ttir(text, new_context())
    with pytest.raises(CompileError, match="read operation 'tt.load'"):
        check_view(module, view[:k] + view[k + 1:])
