"""Where a line of a kernel's source is, for tests that check the line an
error names."""
import inspect


def line_of(fn, text: str) -> int:
    """The file line of the first line of `fn` (a function, a Triton or EDSL
    kernel) that contains `text`."""
    lines, start = inspect.getsourcelines(getattr(fn, "fn", fn))
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(f"{text!r} is not in the source of {fn}")
