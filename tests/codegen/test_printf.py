"""`vprintf(fmt, *args)` and `vassert(cond, fmt, *args)` in EDSL functions
on the DPU model: what C's printf prints (Python's `%` formats these
conversions alike), once per tasklet that runs it; a failed vassert prints
and raises at its line; the format checked against the arguments when
compiled, at the call's line; in a Triton kernel, a printing function runs
its DPUs once each, in DPU order."""
import inspect
import re

import numpy as np
import pytest
import triton
import triton.language as tl
from hypothesis import HealthCheck, given, settings, strategies as st

import edsl
from edsl import InOut, Input, fl
from edsl.base.errors import CompileError
from edsl.tle.raw.mlir import vassert, vprintf

# (capfd is read before each example: what an example printed is its own)
FEW = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@edsl.dialect
def show(n: Input["i32"], k: Input["i64"], x: Input["f32"], h: Input["i16"]):
    vprintf("n=%d k=%lld x=%f e=%.3e g=%g h=%d u=%x %s|%5d|%-4d|\n", n, k, x, x, x, h, h & 255, "ok", n, n)


@FEW
@given(n=st.integers(-2**31, 2**31 - 1), k=st.integers(-2**63, 2**63 - 1),
       x=st.floats(-1e6, 1e6, width=32), h=st.integers(-2**15, 2**15 - 1))
def test_vprintf_prints_as_c_printf(capfd, n, k, x, h):
    capfd.readouterr()
    show.run(n, k, x, h)
    want = "n=%d k=%d x=%f e=%.3e g=%g h=%d u=%x %s|%5d|%-4d|\n" % (n, k, x, x, x, h, h & 255, "ok", n, n)
    assert capfd.readouterr().out == want


@edsl.dialect
def each_tasklet(y: InOut["memref<4xi32>"]):
    t = edsl.tasklet_id()
    vprintf("tasklet %d of %d\n", t, edsl.num_tasklets())


def test_every_tasklet_that_runs_it_prints(capfd):
    capfd.readouterr()
    each_tasklet.run(np.zeros(4, np.int32), tasklets=3)
    assert sorted(capfd.readouterr().out.splitlines()) == [f"tasklet {t} of 3" for t in range(3)]


@edsl.dialect
def checked(y: InOut["memref<?xi32>"], limit: Input["i32"]):
    for i in range(y.shape[0]):
        vassert(y[i] < limit, "y[%d] = %d is not below %d\n", i, y[i], limit)
        y[i] = y[i] + 1


def _line(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn.fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_a_vassert_that_holds_prints_nothing(capfd):
    y = np.arange(5, dtype=np.int32)
    capfd.readouterr()
    checked.run(y, 10)
    assert capfd.readouterr().out == "" and list(y) == [1, 2, 3, 4, 5]


def test_a_failed_vassert_prints_its_message_and_raises_at_its_line(capfd):
    y = np.array([1, 2, 30, 4], np.int32)
    capfd.readouterr()
    with pytest.raises(edsl.DpuError, match="assertion failed") as err:
        checked.run(y, 10)
    assert capfd.readouterr().out.startswith("y[2] = 30 is not below 10\n")
    assert err.value.loc.lineno == _line(checked, "vassert(")


@pytest.mark.parametrize("body, message", [
    ('vprintf("%d %d\\n", n)', r"the format has 2 conversions \(%d, %d\); 1 arguments given"),
    ('vprintf("%d\\n", k)', r"'%d' prints a 32-bit integer; argument 0 is a i64: write '%lld'"),
    ('vprintf("%f\\n", n)', r"'%f' prints a float; argument 0 is a i32"),
    ('vprintf("%d\\n", x)', r"'%d' prints an integer; argument 0 is a f32"),
    ('vprintf("%s\\n", n)', r"'%s' prints a string constant; argument 0 is not one"),
    ('vprintf("%*d\\n", n, n)', r"'%\*d' takes its width or precision from an argument"),
    ('vprintf("%n\\n", n)', r"'%n' in the format is not a conversion it prints"),
    ('vassert(n > 0, "%f\\n", n)', r"'%f' prints a float; argument 0 is a i32"),
])
def test_format_errors_name_the_line(tmp_path, body, message):
    path = tmp_path / "printing.py"
    path.write_text("from edsl import Input, dialect\nfrom edsl.tle.raw.mlir import vassert, vprintf\n\n\n"
                    "@dialect\n"
                    "def f(n: Input['i32'], k: Input['i64'], x: Input['f32']):\n"
                    f"    {body}\n")
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    with pytest.raises(CompileError, match=message) as err:
        namespace["f"].compile()
    assert err.value.loc.lineno == 7


# --- in a Triton kernel on the dpu backend ------------------------------------------------

@edsl.dialect
def first_of_tile(y: InOut["memref<?xi32>"], c: Input["i32"]):
    if edsl.tasklet_id() == 0:
        vprintf("first %d c %d\n", y[0], c)


@triton.jit
def printing_kernel(y_ptr, c, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    y = tl.load(y_ptr + offs)
    y = fl.call(first_of_tile, [y], [c])
    tl.store(y_ptr + offs, y)


@pytest.mark.parametrize("dpus, tasklets", [(1, 1), (3, 4)])
def test_a_kernel_calling_a_printing_function_prints_in_dpu_order(capfd, dpus, tasklets):
    y = np.arange(96, dtype=np.int32)
    capfd.readouterr()
    printing_kernel[(6,)](y, 7, BLOCK=16, num_dpus=dpus, num_tasklets=tasklets)
    assert capfd.readouterr().out.splitlines() == [f"first {16 * p} c 7" for p in range(6)]


def test_vprintf_and_vassert_are_edsl_intrinsics():
    assert edsl.vprintf is vprintf and edsl.vassert is vassert
    assert re.search("CUDA's `vprintf`", vprintf.__doc__)
