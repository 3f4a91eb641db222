"""What edsl tells while it works: the `edsl` loggers (`logging.getLogger(
"edsl.<layer>")`) report each compile stage with its time at DEBUG, and a
stage slower than a second at INFO; `EDSL_DUMP_IR=1` prints the IR of edsl's
own steps to stderr (each stage's result, and the IR after every pass of a
lowering pipeline), as `MLIR_ENABLE_DUMP=1` prints Triton's.

    import logging; logging.basicConfig(); logging.getLogger("edsl").setLevel(logging.DEBUG)
"""
from __future__ import annotations

import logging
import os
import sys
import time
from contextlib import contextmanager

SLOW_SECONDS = 1.0
DUMP_ENVIRONMENT = "EDSL_DUMP_IR"


def logger(layer: str) -> logging.Logger:
    return logging.getLogger(f"edsl.{layer}")


@contextmanager
def stage(log: logging.Logger, what):
    """Time `what` (a string, or a function giving it once the stage is done,
    for a name the stage itself finds): DEBUG, or INFO when it took over
    SLOW_SECONDS."""
    start = time.perf_counter()
    yield
    seconds = time.perf_counter() - start
    log.log(logging.INFO if seconds > SLOW_SECONDS else logging.DEBUG, "%s: %.3f s",
            what() if callable(what) else what, seconds)


def dumping() -> bool:
    """Whether EDSL_DUMP_IR asks for the IR of edsl's steps."""
    return os.environ.get(DUMP_ENVIRONMENT, "").strip() not in ("", "0")


def dump(what: str, text: str) -> None:
    """`text` (IR) to stderr, headed as MLIR's IR printing heads a pass's."""
    if dumping():
        print(f"// -----// IR Dump After {what} //----- //\n{text}", file=sys.stderr, flush=True)
