"""A status line on stderr for work that takes a while (a model launch over
many DPUs, an export): shown only where stderr is a terminal, only once the
work has run for `SHOW_AFTER` seconds, redrawn at most every `REDRAW`
seconds, and ended with its total time. `EDSL_PROGRESS=0` turns it off,
`EDSL_PROGRESS=1` shows it where stderr is not a terminal too.

    with Progress("kernel 'add_kernel'", total=2560, unit="DPUs") as shown:
        ...
        shown.update(done)        # cheap: call it as often as convenient
"""
from __future__ import annotations

import os
import sys
import time

SHOW_AFTER = 2.0
REDRAW = 0.25
ENVIRONMENT = "EDSL_PROGRESS"
_SCREEN = [0]       # the width of the status line on the terminal now (0: none), whichever drew it


def _wanted() -> bool:
    setting = os.environ.get(ENVIRONMENT, "").strip()
    if setting in ("0", "1"):
        return setting == "1"
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


class Progress:
    """What `what` has done of `total` `unit` (total None: its stage only)."""

    def __init__(self, what: str, total: int | None = None, unit: str = ""):
        self.what, self.total, self.unit = what, total, unit
        self.done, self.stage_text = 0, ""
        self._start = time.monotonic()
        self._next = self._start + SHOW_AFTER
        self._wanted = _wanted()
        self._drawn = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind, *_) -> None:
        self.close(failed=kind is not None)

    def due(self) -> bool:
        """Whether `update` would draw now (a count costly to take can wait)."""
        return self._wanted and time.monotonic() >= self._next

    def update(self, done: int | None = None) -> None:
        if done is not None:
            self.done = done
        if self.due():
            self._draw(end="")

    def stage(self, text: str) -> None:
        """The step under way (shown after the counts)."""
        self.stage_text = text
        self.update()

    def close(self, failed: bool = False) -> None:
        if self._drawn:
            if self.total is not None and not failed:
                self.done = self.total
            self.stage_text = "stopped" if failed else "done"
            self._draw(end="\n")
            self._drawn = False

    def _draw(self, end: str) -> None:
        now = time.monotonic()
        self._next = now + REDRAW
        parts = [f"edsl: {self.what}"]
        if self.total is not None:
            parts.append(f"{self.done}/{self.total} {self.unit}".rstrip())
        if self.stage_text:
            parts.append(self.stage_text)
        line = ": ".join(parts) + f" ({now - self._start:.0f} s)"
        pad = " " * max(0, _SCREEN[0] - len(line))
        _SCREEN[0] = 0 if end else len(line)
        self._drawn = True
        sys.stderr.write(f"\r{line}{pad}{end}")
        sys.stderr.flush()
