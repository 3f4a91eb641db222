"""IR-text tests of the conversion's steps, on TTIR that Triton printed (the
golden corpus): control-flow structuring, WRAM layout, barrier placement."""
import re

import pytest
from mlir import ir

from edsl.backend.convert import control, convert_ttir, new_context
from edsl.backend.ttir_reader import read_ttir
from test_ttir_corpus import MINE, load


def corpus_kernel(pattern: str):
    """(text, view) of the first corpus kernel of the installed Triton whose
    TTIR matches `pattern`."""
    for path in MINE:
        text, view = load(path)
        if re.search(pattern, text) and "@__edsl_" not in text:
            return text, view
    pytest.fail(f"no corpus kernel matches {pattern!r}")


def _kernel_text(module) -> str:
    text = str(module)
    return text[:text.index("func.func @__dpu_main")]


def test_branches_between_blocks_become_structured_control_flow():
    text, view = corpus_kernel(r"cf\.cond_br")
    module = read_ttir(text, new_context())
    kernel = module.body.operations[0]
    assert len(kernel.regions[0].blocks) > 1
    control.structure_control_flow(kernel)
    assert len(kernel.regions[0].blocks) == 1
    ops = []
    kernel.walk(lambda op: ops.append(op.name) or ir.WalkResult.ADVANCE, ir.WalkOrder.PRE_ORDER)
    assert "cf.cond_br" not in ops and "cf.br" not in ops
    assert {"scf.if", "scf.index_switch"} & set(ops)
    converted, _ = convert_ttir(text)
    assert "cf.cond_br" not in _kernel_text(converted)


def test_wram_buffers_are_laid_out_in_order_with_staging_last():
    text, view = corpus_kernel(r'"tt\.reduce"')
    module, info = convert_ttir(text, tasklets=4)
    offsets = [int(m) for m in re.findall(r"%c(\d+) = arith.constant \d+ : index\n\s+%view\w* = memref.view",
                                          _kernel_text(module))]
    sizes = [b.nbytes for b in info.wram]
    assert offsets == [sum(sizes[:k]) for k in range(len(offsets))]
    assert all(n % 8 == 0 for n in sizes)
    assert "DMA staging buffers (4 tasklets x" in info.wram[-1].what
    # Each tasklet's own buffers (after the shared ones) sit at an offset
    # plus the tasklet's id times their size: not a constant offset.
    private = [b for b in info.wram[:-1] if "tasklets x" in b.what]
    assert len(offsets) == len(sizes) - 1 - len(private)


def test_barriers_only_with_tasklets():
    text, view = corpus_kernel(r'"tt\.reduce"')
    one, info1 = convert_ttir(text)
    many, info4 = convert_ttir(text, tasklets=4)
    assert info1.barriers == 0 and "call @edsl_dpu_barrier" not in str(one)
    kernel = _kernel_text(many)
    assert info4.barriers >= 1 and kernel.count("call @edsl_dpu_barrier") == info4.barriers


def test_a_barrier_needed_inside_divergent_code_is_a_compile_error_at_the_line():
    """A gap of barrier placement is a clear error at the op's line, not an
    AssertionError (as a 2-D scan with tasklets once raised)."""
    from edsl.backend.convert.barriers import AccessRecord, place_barriers
    from edsl.backend.convert.core import KernelInfo
    from edsl.base.errors import CompileError
    with new_context(), ir.Location.file("k.py", 7, 3):
        module = ir.Module.create()
        record = AccessRecord(2)
        block = module.body
        with ir.InsertionPoint(block):
            with record.divergent("one"):
                record.sync()
            ir.Operation.create("test.end")
        with pytest.raises(CompileError, match="cannot share this operation among tasklets") as err:
            place_barriers(block, 2, module.body, KernelInfo())
    assert (err.value.loc.filename, err.value.loc.lineno) == ("k.py", 7)


# ---- barrier placement, on kernels built from the markers the conversion writes ----

def _place(build, tasklets=2):
    """Build a kernel body with `build(record, buf, block)` (buf: a WRAM tile
    buffer of 16 x 4), place its barriers; (kernel text, barrier count)."""
    from mlir.dialects import func

    from edsl.backend.convert.barriers import AccessRecord, place_barriers
    from edsl.backend.convert.core import KernelInfo
    with new_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("k", ir.FunctionType.get([ir.MemRefType.get([16, 4], ir.F32Type.get())], []))
            entry = fn.add_entry_block()
        record, info = AccessRecord(tasklets), KernelInfo()
        with ir.InsertionPoint(entry):
            build(record, entry.arguments[0])
            func.ReturnOp([])
        place_barriers(entry, tasklets, module.body, info)
        assert module.operation.verify()
        text = str(module)
    assert "edsl." not in text, "a marker was left in the kernel"
    return text, info.barriers


def _rows(record, buf, write, mine=True):
    """A partitioned loop over the rows of `buf` (as `Converter.par_nest`)."""
    from mlir.dialects import arith, scf
    from edsl.backend.convert.barriers import owner
    idx = ir.IndexType.get()
    with record.op(region=False), record.divergent(owner((16, 4), record.tasklets)):
        loop = scf.ForOp(arith.constant(idx, 0), arith.constant(idx, 8), arith.constant(idx, 1))
        with ir.InsertionPoint(loop.body):
            if mine:
                record.mine(loop.induction_variable)
            record.note_buffer(buf, [loop.induction_variable], write)
            scf.yield_([])


def test_no_barrier_between_ops_on_each_tasklets_own_rows():
    _, n = _place(lambda r, buf: (_rows(r, buf, True), _rows(r, buf, False)))
    assert n == 0                # (nor between program instances: each tasklet keeps its rows)


def test_a_barrier_between_a_write_and_a_read_of_other_tasklets_rows():
    text, n = _place(lambda r, buf: (_rows(r, buf, True), _rows(r, buf, False, mine=False)))
    assert n == 2                # (and one ending the program instance)
    loops = [m.start() for m in re.finditer(r"scf\.for", text)]
    first_barrier = text.index("call @edsl_dpu_barrier")
    assert loops[0] < first_barrier < loops[1], "the barrier goes between the two ops"


def test_branches_run_one_region_and_are_merged():
    from mlir.dialects import arith, scf

    def build(record, buf, mark):
        _rows(record, buf, True)
        with record.op(region=False):
            cond = arith.constant(ir.IntegerType.get_signless(1), 1)
            branch = scf.IfOp(cond, [], has_else=True)
            if mark:
                record.branches(branch)
            with ir.InsertionPoint(branch.then_block):
                _rows(record, buf, True, mine=False)
                scf.yield_([])
            with ir.InsertionPoint(branch.else_block):
                _rows(record, buf, False, mine=False)
                scf.yield_([])
    marked, linear = (_place(lambda r, buf: build(r, buf, m))[1] for m in (True, False))
    # marked: one barrier before the `if` (a branch conflicts with the first
    # op), one ending the program instance; read as straight code, the else
    # branch would need another after the then branch's writes.
    assert (marked, linear) == (2, 3)


def test_a_loop_body_ends_with_a_barrier_when_its_next_run_needs_one():
    from mlir.dialects import arith, scf

    def build(record, buf, rows_read_mine):
        idx = ir.IndexType.get()
        with record.op(region=False):
            loop = scf.ForOp(arith.constant(idx, 0), arith.constant(idx, 3), arith.constant(idx, 1))
            record.cycle(loop)
            with ir.InsertionPoint(loop.body):
                _rows(record, buf, False, mine=rows_read_mine)
                _rows(record, buf, True)
                scf.yield_([])
    text, n = _place(lambda r, buf: build(r, buf, False))
    body = text[text.index("scf.for"):]
    # writing rows other tasklets read, then (next iteration) reading rows
    # they write: a barrier between the two ops and one ending the body
    assert n == 2 and body.count("call @edsl_dpu_barrier") == 2
    _, n_mine = _place(lambda r, buf: build(r, buf, True))
    assert n_mine == 0


def test_entries_take_the_arguments_the_abi_lists():
    """The converted kernel, `__dpu_main` and `__dpu_launch` take the kernel's
    parameters and then what `abi.ENTRY` lists for each, in its order."""
    from edsl.target import dpu as abi
    from test_converter import HEAD, SIG, TAIL, VECTOR
    module, _ = convert_ttir(HEAD + SIG + VECTOR + TAIL, tasklets=2)
    funcs = {ir.StringAttr(op.attributes["sym_name"]).value: op for op in module.body.operations
             if op.operation.name == "func.func" and op.regions[0].blocks}
    params = ["i64", "i64", "i32"]          # x, y: MRAM addresses; n
    for name, entry in [("k", abi.KERNEL), (abi.MAIN, abi.MAIN), (abi.LAUNCH, abi.LAUNCH)]:
        types = [str(a.type) for a in funcs[name].regions[0].blocks[0].arguments]
        assert types == params + abi.entry_types(entry), name
    assert len(abi.lowered_entry_types(abi.MAIN)) == len(abi.ENTRY[abi.MAIN]) + 4   # (a memref's 5 fields)


def test_every_shared_tile_access_is_stated_to_barrier_placement(monkeypatch):
    """Every corpus kernel converts with 4 tasklets (test_ttir_corpus) with each
    WRAM load and store of a shared tile under an access marker of its op
    (`barriers.unmarked_accesses`); a lowering that forgets one is refused."""
    from edsl.backend.convert import barriers
    from edsl.base.errors import CompileError
    text, _ = corpus_kernel(r"tt\.reduce")
    convert_ttir(text, tasklets=4)
    monkeypatch.setattr(barriers.AccessRecord, "note_buffer", lambda self, buf, ivs, write, who=None: None)
    with pytest.raises(CompileError, match="unstated to its barrier placement") as err:
        convert_ttir(text, tasklets=4)
    assert err.value.loc is not None and err.value.loc.filename.endswith(".py")
    convert_ttir(text, tasklets=1)        # (one tasklet: nothing is shared)


def test_only_the_buffer_service_states_tile_accesses():
    """A lowering reaches a tile buffer's elements and raw addresses through
    `services.Buffers` (and the tiles kept in MRAM, `spill.SpillBuffer`),
    which state each access to barrier placement: no lowering family calls the
    access record's `note_buffer` itself, where a forgotten call would be a
    race that every 1-tasklet test passes."""
    import ast
    import pathlib
    from edsl.backend import convert
    folder = pathlib.Path(convert.__file__).parent
    stating = {"services.py", "core.py", "spill.py", "barriers.py"}
    callers = {}
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "note_buffer":
                callers.setdefault(path.name, []).append(node.lineno)
    assert callers and set(callers) <= stating, callers
    # The families and the buffer service's MRAM tiles see the conversion
    # only through its services, never the whole converter.
    spill = ast.parse((folder / "spill.py").read_text())
    assert not [n.lineno for n in ast.walk(spill) if isinstance(n, ast.Attribute) and n.attr == "conv"]
