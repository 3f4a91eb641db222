"""The TTIR reader on the real TTIR that Triton prints: the golden corpus of
every example and test kernel, one folder per Triton version (made by
`ttir/regenerate.py`), each file the TTIR followed by Triton's own view of it
(`// view:` lines, from Triton's `module.walk`).

Every file is read, checked op for op against Triton's view, and converted
(or refused with a `CompileError` at the kernel's line)."""
import pathlib

import pytest

from edsl.backend.convert import convert_ttir, new_context
from edsl.backend.ttir_text import OpView, read_ttir, split_top
from edsl.errors import CompileError, DpuError

CORPUS = pathlib.Path(__file__).resolve().parent / "ttir"
FILES = sorted(CORPUS.glob("*/*.mlir"))
VERSIONS = sorted({f.parent.name for f in FILES})


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


@pytest.mark.parametrize("path", FILES, ids=[f"{f.parent.name}/{f.stem}" for f in FILES])
def test_reader_matches_tritons_view(path):
    text, view = load(path)
    assert view and view[-1].name == "builtin.module"
    try:
        read_ttir(text, new_context(), view)
    except CompileError as err:             # an op the table has no form for, at its line
        assert "is not supported by the DPU backend" in str(err) and err.loc.filename.endswith(".py")


@pytest.mark.parametrize("path", FILES, ids=[f"{f.parent.name}/{f.stem}" for f in FILES])
def test_converter_takes_or_refuses_at_the_kernel_line(path):
    text, view = load(path)
    try:
        convert_ttir(text, triton_ops=view, tasklets=4)
    except (CompileError, DpuError) as err:
        assert err.loc is not None and err.loc.filename.endswith(".py"), str(err)
        # (an fl.call kernel's EDSL function is known to the process that traced
        # the kernel only: the fl tests convert those)
        assert ("not supported" in str(err) or "WRAM" in str(err)
                or ("unknown in this process" in str(err) and "@__edsl_" in text)), str(err)


def _any_file_with(op: str):
    for path in FILES:
        text, view = load(path)
        if any(v.name == op for v in view):
            return text, view
    pytest.fail(f"no kernel of the corpus has {op}")


def test_a_misread_op_is_a_compile_error_naming_it_and_its_line(monkeypatch):
    """A form table that reads one op as another (both parse: unregistered ops
    with the same types) never becomes a program."""
    from edsl.backend import ttir_text
    text, view = _any_file_with("tt.splat")
    generic = ttir_text._generic
    monkeypatch.setattr(ttir_text, "_generic",
                        lambda res, name, r: generic(res, "tt.broadcast" if name == "tt.splat" else name, r))
    with pytest.raises(CompileError, match=r"read operation 'tt.broadcast' as .* where Triton has "
                                           r"tt.splat") as err:
        read_ttir(text, new_context(), view)
    assert err.value.loc is not None and err.value.loc.filename.endswith(".py")


def test_types_other_than_tritons_are_a_compile_error():
    text, view = _any_file_with("tt.load")
    k = next(i for i, v in enumerate(view) if v.name == "tt.load")
    wrong = OpView("tt.load", view[k].operands, tuple(t.replace("f32", "f16") for t in view[k].results))
    with pytest.raises(CompileError, match=r"read operation 'tt.load' as .* where Triton has tt.load"):
        read_ttir(text, new_context(), view[:k] + [wrong] + view[k + 1:])


def test_an_op_missing_from_the_view_is_a_compile_error():
    text, view = _any_file_with("tt.load")
    k = next(i for i, v in enumerate(view) if v.name == "tt.load")
    with pytest.raises(CompileError, match="read operation 'tt.load'"):
        read_ttir(text, new_context(), view[:k] + view[k + 1:])
