"""Every user mistake is an edsl error naming the file, the line (and column)
and what is wrong; each test finds the expected line by a marker comment."""
import inspect

import numpy as np
import pytest
from mlir.dialects import arith

import edsl
from edsl import InOut, Input

HERE = __file__


def line_of(marker: str) -> int:
    lines = inspect.getsource(inspect.getmodule(line_of)).splitlines()
    hits = [i for i, text in enumerate(lines, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


def check(err, cls, message: str, marker: str):
    e = err.value
    assert type(e) is cls, f"{type(e).__name__}: {e}"
    assert message in e.message, e.message
    assert e.loc is not None and e.loc.filename == HERE and e.loc.lineno == line_of(marker), e
    text = str(e)
    assert text.startswith(f"{HERE}:{e.loc.lineno}:") and "^" in text  # quotes the line with a caret


def test_unknown_name():
    @edsl.dialect
    def f(y: InOut["memref<?xf32>"]):
        y[0] = undefined_thing  # noqa: F821  # unknown-name
    with pytest.raises(edsl.CompileError) as err:
        f.mlir
    check(err, edsl.CompileError, "name 'undefined_thing' is not defined", "unknown-name")


def test_unsupported_statement():
    @edsl.dialect
    def f(y: InOut["memref<?xf32>"]):
        try:  # unsupported
            y[0] = 1.0
        except ValueError:
            pass
    with pytest.raises(edsl.CompileError) as err:
        f.mlir
    check(err, edsl.CompileError, "unsupported Python syntax in an edsl function: try", "unsupported")


def test_an_f_string_is_named_as_python_users_name_it():
    @edsl.dialect
    def f(y: InOut["memref<?xf32>"]):
        s = f"{y}"  # f-string
    with pytest.raises(edsl.CompileError) as err:
        f.mlir
    check(err, edsl.CompileError, "unsupported Python syntax in an edsl function: an f-string", "f-string")


def test_print_is_refused_rather_than_run_at_compile_time(capsys):
    @edsl.dialect
    def f(y: InOut["memref<?xf32>"]):
        print(y[0])  # print
    with pytest.raises(edsl.CompileError) as err:
        f.mlir
    check(err, edsl.CompileError, "print() in an edsl function would run once, when it compiles", "print")
    assert capsys.readouterr().out == ""


def test_early_return_in_a_loop():
    @edsl.dialect
    def f(y: InOut["memref<?xi32>"]):
        for i in range(y.shape[0]):
            if y[i] < 0:
                return  # early-return
    with pytest.raises(edsl.CompileError) as err:
        f.mlir
    check(err, edsl.CompileError, "`return` is only supported as the last statement", "early-return")


def test_type_mismatch_in_a_store():
    @edsl.dialect
    def f(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
        y[0] = x  # store-memref
    with pytest.raises(edsl.TypeMismatchError) as err:
        f.mlir
    check(err, edsl.TypeMismatchError, "cannot store a value of type memref<?xf32>", "store-memref")


def test_type_mismatch_in_an_operator():
    @edsl.dialect
    def f(y: InOut["memref<?xf32>"]):
        y[0] = 1.5 << y[0]  # shift-float
    with pytest.raises(edsl.TypeMismatchError) as err:
        f.mlir
    check(err, edsl.TypeMismatchError, "operator << needs integer operands", "shift-float")


def test_wrong_number_of_indices():
    @edsl.dialect
    def f(y: InOut["memref<?x?xf32>"]):
        y[0] = 1.0  # rank
    with pytest.raises(edsl.TypeMismatchError) as err:
        f.mlir
    check(err, edsl.TypeMismatchError, "has rank 2 but is indexed with 1 indices", "rank")


def test_store_into_an_input_tile():
    @edsl.dialect
    def f(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
        x[0] = 1.0  # input-store
    with pytest.raises(edsl.CompileError) as err:
        f.mlir
    check(err, edsl.CompileError, "x is Input; this assignment writes it", "input-store")


@edsl.dialect
def clear(buf: InOut["memref<?xf32>"]):
    for i in range(buf.shape[0]):
        buf[i] = 0.0


@edsl.dialect
def forwards(x: Input["memref<?xf32>"]):
    clear(x)  # input-to-helper-inner


def test_an_input_is_not_written_through_a_helper():
    """`Input` is never written, however it is reached: an Input passed on to
    a helper's InOut parameter is refused at the call, in the caller's body
    and in a helper's body alike, on every target."""
    @edsl.dialect
    def f(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
        clear(x)  # input-to-helper
    for target in ("upmem-dpu", "nvptx64"):
        with pytest.raises(edsl.CompileError) as err:
            f.compile(target=target) if hasattr(f, "compile") else f.for_target(target).mlir
        check(err, edsl.CompileError, "x is Input; clear(buf: InOut) writes it", "input-to-helper")

    @edsl.dialect
    def g(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
        forwards(x)
    with pytest.raises(edsl.CompileError) as err:
        g.mlir
    check(err, edsl.CompileError, "x is Input; clear(buf: InOut) writes it", "input-to-helper-inner")


def test_an_input_is_not_written_through_an_alias_or_a_view():
    @edsl.dialect
    def f(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
        alias = x
        alias[0] = 1.0  # input-alias
    with pytest.raises(edsl.CompileError) as err:
        f.mlir
    check(err, edsl.CompileError, "x is Input; this assignment writes it", "input-alias")


def test_an_input_is_not_written_by_builder_style_ops():
    from mlir.dialects import memref
    from mlir import ir

    @edsl.dialect
    def f(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
        zero = arith.constant(ir.IndexType.get(), 0)
        one = arith.constant(ir.F32Type.get(), 1.0)
        memref.atomic_rmw(arith.AtomicRMWKind.addf, one, x, [zero])  # input-atomic
    with pytest.raises(edsl.CompileError) as err:
        f.mlir
    check(err, edsl.CompileError, "x is Input; memref.atomic_rmw writes it", "input-atomic")

    @edsl.dialect
    def g(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
        memref.copy(y, x)  # input-copy
    with pytest.raises(edsl.CompileError) as err:
        g.mlir
    check(err, edsl.CompileError, "x is Input; memref.copy writes it", "input-copy")


def test_a_dma_into_an_input_tile_is_refused():
    @edsl.dialect
    def f(y: InOut["memref<8xf32>"], x: Input["memref<8xf32>"], src: Input["memref<?xf32, MRAM>"]):
        edsl.mram_read(src, x, 32)  # input-dma
    with pytest.raises(edsl.CompileError) as err:
        f.mlir
    check(err, edsl.CompileError, "x is Input; mram_read writes it", "input-dma")


def test_what_writes_no_input_still_compiles():
    """An InOut passed to a helper's InOut, an Input to a helper's Input, and
    an Input pointer into MRAM (written through, as a C pointer is)."""
    @edsl.dialect
    def reads(x: Input["memref<?xf32>"], y: InOut["memref<?xf32>"]):
        y[0] = x[0]

    @edsl.dialect
    def f(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], p: Input["memref<?xf32, MRAM>"]):
        clear(y)
        reads(x, y)
        p[0] = 2.0
    y, x, p = np.ones(3, np.float32), np.arange(3, dtype=np.float32) + 5, np.zeros(2, np.float32)
    x.flags.writeable = False          # a read-only array for an Input: never written
    f(y, x, p)
    assert y.tolist() == [5.0, 0.0, 0.0] and p.tolist() == [2.0, 0.0]


def test_variable_changing_from_scalar_to_memref_in_a_loop():
    @edsl.dialect
    def f(y: InOut["memref<?xf32>"]):
        v = 0.0
        for i in range(y.shape[0]):  # kind-change
            v = y
        y[0] = 1.0
    with pytest.raises(edsl.TypeMismatchError) as err:
        f.mlir
    check(err, edsl.TypeMismatchError, "only scalars may change there", "kind-change")


def test_bad_annotation():
    with pytest.raises(edsl.AnnotationError) as err:
        @edsl.dialect
        def f(y: InOut["memref<?xfloat32>"]):  # bad-type
            pass
    check(err, edsl.AnnotationError, "is not a valid MLIR type", "bad-type")


def test_missing_annotation():
    with pytest.raises(edsl.AnnotationError) as err:
        @edsl.dialect
        def f(y: InOut["memref<?xf32>"], n):  # missing
            pass
    check(err, edsl.AnnotationError, "parameter 'n' needs an annotation", "missing")


def test_inout_scalar():
    with pytest.raises(edsl.AnnotationError) as err:
        @edsl.dialect
        def f(n: InOut["i32"]):  # inout-scalar
            pass
    check(err, edsl.AnnotationError, "InOut applies to memrefs", "inout-scalar")


def test_boolean_memref_points_to_i8():
    with pytest.raises(edsl.AnnotationError) as err:
        @edsl.dialect
        def f(m: InOut["memref<?xi1>"]):  # i1-memref
            pass
    check(err, edsl.AnnotationError, "use i8 for boolean arrays", "i1-memref")


def test_verifier_failure_points_at_the_builder_call():
    @edsl.dialect
    def f(y: InOut["memref<?xf32>"]):
        v = arith.addi(y[0], y[0])  # verifier
        y[0] = v
    with pytest.raises(edsl.VerifierError) as err:
        f.mlir
    check(err, edsl.VerifierError, "'arith.addi' op operand #0 must be signless-integer-like", "verifier")


def test_builder_call_with_wrong_arguments():
    @edsl.dialect
    def f(y: InOut["memref<?xf32>"]):
        arith.addf(y[0])  # builder-args
    with pytest.raises(edsl.CompileError) as err:
        f.mlir
    check(err, edsl.CompileError, "TypeError", "builder-args")


@edsl.dialect
def saxpy(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], a: Input["f32"]):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]


@pytest.mark.parametrize("args, message", [
    ((np.zeros(4, np.float32), np.zeros(4, np.float32)), "takes 3 arguments, 2 given"),
    ((np.zeros(4, np.float64), np.zeros(4, np.float32), 1.0), "expected dtype float32, got float64"),
    ((np.zeros((2, 2), np.float32), np.zeros(4, np.float32), 1.0), "expected 1 dimensions, got 2"),
    ((np.zeros(8, np.float32)[::2], np.zeros(4, np.float32), 1.0), "expected a C-contiguous array"),
    ((np.zeros(4, np.float32), [0.0] * 4, 1.0), "expected a NumPy array, got list"),
    ((np.zeros(4, np.float32), np.zeros(4, np.float32), "2"), "expected a number, got str"),
])
def test_argument_errors_point_at_the_call(args, message):
    with pytest.raises(edsl.ArgumentError) as err:
        saxpy(*args)  # call
    check(err, edsl.ArgumentError, message, "call")


def test_readonly_inout_array():
    y = np.zeros(4, np.float32)
    y.flags.writeable = False
    with pytest.raises(edsl.ArgumentError) as err:
        saxpy(y, np.zeros(4, np.float32), 1.0)  # readonly
    check(err, edsl.ArgumentError, "an InOut array must be writeable", "readonly")


def test_readonly_array_for_an_input_pointer_into_mram():
    @edsl.dialect
    def f(p: Input["memref<?xf32, MRAM>"]):
        p[0] = 1.0
    p = np.frombuffer(bytes(16), np.float32)       # immutable memory
    with pytest.raises(edsl.ArgumentError) as err:
        f(p)  # readonly-mram
    check(err, edsl.ArgumentError, "written through even as Input", "readonly-mram")
    assert bytes(p.tobytes()) == bytes(16)


def test_scalar_out_of_range():
    @edsl.dialect
    def f(y: InOut["memref<?xi8>"], c: Input["i8"]):
        y[0] = c
    with pytest.raises(edsl.ArgumentError) as err:
        f(np.zeros(1, np.int8), 300)  # range
    check(err, edsl.ArgumentError, "300 does not fit in i8", "range")


def test_failed_assert_at_run_time_names_its_line():
    @edsl.dialect
    def f(y: InOut["memref<?xf32>"]):
        for i in range(y.shape[0]):
            assert y[i] >= 0.0  # assert
    f(np.ones(3, np.float32))
    with pytest.raises(edsl.DpuError) as err:
        f(np.array([1, -1, 2], np.float32))
    check(err, edsl.DpuError, "assertion failed", "assert")


def test_unknown_pass_is_a_lowering_error():
    @edsl.dialect(pipeline=["convert-scf-to-cf", "no-such-pass"])
    def f(y: InOut["memref<?xf32>"]):
        y[0] = 1.0
    with pytest.raises(edsl.LoweringError, match="bad pass pipeline"):
        f.llvm


@edsl.dialect(bounds_check=True)
def gather(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], idx: Input["memref<?xi32>"]):
    for i in range(y.shape[0]):
        y[i] = x[idx[i]]  # gather


@edsl.dialect(bounds_check=True)
def scatter(y: InOut["memref<?xf32>"], idx: Input["memref<?xi32>"]):
    for i in range(idx.shape[0]):
        y[idx[i]] = 1.0  # scatter


def test_bounds_checks_turn_bad_indices_into_errors_at_their_line():
    x = np.arange(4, dtype=np.float32)
    y = np.zeros(3, np.float32)
    gather(y, x, np.array([3, 0, 1], np.int32))
    assert y.tolist() == [3.0, 0.0, 1.0]
    gather(y, x, np.array([-1, -4, 0], np.int32))  # negative indices count from the end
    assert y.tolist() == [3.0, 0.0, 0.0]
    for bad in ([0, 4, 1], [-5, 0, 0], [2**30, 0, 0], [-2**31, 0, 0]):
        with pytest.raises(edsl.DpuError) as err:
            gather(y, x, np.array(bad, np.int32))
        check(err, edsl.DpuError, "index out of bounds", "gather")
    with pytest.raises(edsl.DpuError) as err:
        scatter(np.zeros(2, np.float32), np.array([0, 5], np.int32))
    check(err, edsl.DpuError, "index out of bounds", "scatter")
    with pytest.raises(edsl.DpuError) as err:
        scatter(np.zeros(2, np.float32), np.array([0, -3], np.int32))
    check(err, edsl.DpuError, "index out of bounds", "scatter")


# --- a zero range() step, variables not assigned on every path, recursion ------------------

@edsl.dialect
def count_steps(y: InOut["memref<1xi32>"], step: Input["i32"]):
    for i in range(0, 10, step):  # zero-step
        y[0] += 1


def test_zero_range_step_at_run_time_is_an_error_at_its_line():
    y = np.zeros(1, np.int32)
    count_steps(y, 3)
    assert y[0] == 4
    with pytest.raises(edsl.DpuError) as err:
        count_steps(y, 0)  # Python: ValueError: range() arg 3 must not be zero
    check(err, edsl.DpuError, "range() arg 3 must not be zero", "zero-step")
    assert err.value.loc.col == line_text("zero-step").index("step)")  # the caret is under the step
    assert y[0] == 4  # the loop did not run
    count_steps(y, -1)  # the process goes on
    assert y[0] == 4


def line_text(marker: str) -> str:
    return inspect.getsource(inspect.getmodule(line_of)).splitlines()[line_of(marker) - 1]


def test_variable_assigned_in_one_branch_only():
    @edsl.dialect
    def f(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"], c: Input["i32"]):
        if c > 0:
            v = x[1]
        y[0] = v  # one-branch
    with pytest.raises(edsl.CompileError) as err:
        f.mlir
    check(err, edsl.CompileError, "variable 'v' is not assigned on every path to this use", "one-branch")


def test_variable_assigned_only_in_a_loop():
    @edsl.dialect
    def f(y: InOut["memref<?xf32>"], x: Input["memref<?xf32>"]):
        for i in range(x.shape[0]):
            last = x[i]
        y[0] = last  # loop-only
    with pytest.raises(edsl.CompileError) as err:
        f.mlir
    check(err, edsl.CompileError, "variable 'last' is not assigned on every path to this use", "loop-only")


def test_variable_assigned_before_a_break_only():
    @edsl.dialect
    def f(y: InOut["memref<?xi32>"], x: Input["memref<?xi32>"]):
        i = 0
        while True:
            if x[i] > 0:
                break
            found = i
            i += 1
        y[0] = found  # before-break
    with pytest.raises(edsl.CompileError) as err:
        f.mlir
    check(err, edsl.CompileError, "variable 'found' is not assigned on every path to this use", "before-break")


def test_variable_assigned_in_one_branch_read_in_a_later_branch():
    @edsl.dialect
    def f(y: InOut["memref<?xi32>"], c: Input["i32"]):
        if c > 0:
            v = 1
        if c > 1:
            y[0] = v  # later-branch
    with pytest.raises(edsl.CompileError) as err:
        f.mlir
    check(err, edsl.CompileError, "variable 'v' is not assigned on every path to this use", "later-branch")


def test_recursion_is_reported_as_unsupported():
    with pytest.raises(edsl.CompileError) as err:
        fact.mlir
    check(err, edsl.CompileError, "recursion is not supported: fact() calls itself", "recursive-call")

    @edsl.dialect
    def local_fact(y: InOut["memref<?xi64>"], n: Input["i64"]):
        if n > 1:
            local_fact(y, n - 1)  # local-recursive-call
            y[0] = y[0] * n
    with pytest.raises(edsl.CompileError) as err:
        local_fact.mlir
    check(err, edsl.CompileError, "recursion is not supported: local_fact() calls itself", "local-recursive-call")


def test_mutual_recursion_is_reported_as_unsupported():
    with pytest.raises(edsl.CompileError) as err:
        ping.mlir
    check(err, edsl.CompileError, "recursion is not supported: ping() calls itself through pong()",
          "mutual-call")


@edsl.dialect
def fact(y: InOut["memref<?xi64>"], n: Input["i64"]):
    if n > 1:
        fact(y, n - 1)  # recursive-call
        y[0] = y[0] * n


@edsl.dialect
def ping(y: InOut["memref<?xi64>"], n: Input["i64"]):
    if n > 0:
        pong(y, n - 1)


@edsl.dialect
def pong(y: InOut["memref<?xi64>"], n: Input["i64"]):
    if n > 0:
        ping(y, n - 1)  # mutual-call


def _target_only_intrinsics():
    from edsl.codegen.intrinsics import REGISTRY
    return [(key, handler) for key, handler in REGISTRY.items() if getattr(handler, "only", None)]


def test_every_intrinsic_of_one_target_says_what_to_use_on_the_other():
    from edsl.target.machines import TARGETS
    cases = _target_only_intrinsics()
    assert {k.name for k, _ in cases} >= {"block_id", "num_blocks", "shuffle_xor", "tasklet_id",
                                          "num_tasklets", "mram_read", "mram_write", "wram_alloc"}
    for key, handler in cases:
        intrinsic = key

        @edsl.dialect
        def f(y: InOut["memref<?xi32>"]):
            intrinsic()  # wrong-target

        for target in TARGETS.values():
            if target is handler.only:
                continue
            with pytest.raises(edsl.CompileError) as err:
                f.compile(target.name)
            check(err, edsl.CompileError, f"edsl.{key.name}() is an intrinsic of {handler.only.name}",
                  "wrong-target")
            assert handler.instead and err.value.message.endswith(
                f"compiled for {target.name}; {handler.instead}"), err.value.message
