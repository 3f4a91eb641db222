"""IR-text tests of the conversion's steps, on TTIR that Triton printed (the
golden corpus): control-flow structuring, WRAM layout, barrier placement."""
import re

import pytest
from mlir import ir

from edsl.backend.convert import control, convert_ttir, new_context
from edsl.backend.ttir_text import read_ttir
from test_ttir_corpus import FILES, load


def corpus_kernel(pattern: str):
    """(text, view) of the first corpus kernel of the installed Triton's
    printed forms (else any version's) whose TTIR matches `pattern`."""
    import triton
    ordered = sorted(FILES, key=lambda f: f.parent.name != triton.__version__)
    for path in ordered:
        text, view = load(path)
        if re.search(pattern, text) and "@__edsl_" not in text:
            return text, view
    pytest.fail(f"no corpus kernel matches {pattern!r}")


def _kernel_text(module) -> str:
    text = str(module)
    return text[:text.index("func.func @__dpu_main")]


def test_branches_between_blocks_become_structured_control_flow():
    text, view = corpus_kernel(r"cf\.cond_br")
    module = read_ttir(text, new_context(), view)
    kernel = module.body.operations[0]
    assert len(kernel.regions[0].blocks) > 1
    control.structure_control_flow(kernel)
    assert len(kernel.regions[0].blocks) == 1
    ops = []
    kernel.walk(lambda op: ops.append(op.name) or ir.WalkResult.ADVANCE, ir.WalkOrder.PRE_ORDER)
    assert "cf.cond_br" not in ops and "cf.br" not in ops
    assert {"scf.if", "scf.index_switch"} & set(ops)
    converted, _ = convert_ttir(text, triton_ops=view)
    assert "cf.cond_br" not in _kernel_text(converted)


def test_wram_buffers_are_laid_out_in_order_with_staging_last():
    text, view = corpus_kernel(r'"tt\.reduce"')
    module, info = convert_ttir(text, triton_ops=view, tasklets=4)
    offsets = [int(m) for m in re.findall(r"%c(\d+) = arith.constant \d+ : index\n\s+%view\w* = memref.view",
                                          _kernel_text(module))]
    sizes = [b.nbytes for b in info.wram]
    assert offsets == [sum(sizes[:k]) for k in range(len(offsets))]
    assert all(n % 8 == 0 for n in sizes)
    assert "DMA staging buffers (4 tasklets x" in info.wram[-1].what
    assert len(offsets) == len(sizes) - 1


def test_barriers_only_with_tasklets():
    text, view = corpus_kernel(r'"tt\.reduce"')
    one, info1 = convert_ttir(text, triton_ops=view)
    many, info4 = convert_ttir(text, triton_ops=view, tasklets=4)
    assert info1.barriers == 0 and "call @edsl_dpu_barrier" not in str(one)
    kernel = _kernel_text(many)
    assert info4.barriers >= 1 and kernel.count("call @edsl_dpu_barrier") == info4.barriers


def test_a_barrier_needed_inside_divergent_code_is_a_compile_error_at_the_line():
    """A gap of barrier placement is a clear error at the op's line, not an
    AssertionError (as a 2-D scan with tasklets once raised)."""
    from edsl.backend.convert.barriers import Barriers
    from edsl.backend.convert.core import KernelInfo
    from edsl.errors import CompileError
    with new_context(), ir.Location.file("k.py", 7, 3):
        module = ir.Module.create()
        barriers = Barriers(2, module.body, KernelInfo())
        with ir.InsertionPoint(module.body), barriers.divergent("one"):
            with pytest.raises(CompileError, match="cannot share this operation among tasklets") as err:
                barriers.sync()
    assert (err.value.loc.filename, err.value.loc.lineno) == ("k.py", 7)
