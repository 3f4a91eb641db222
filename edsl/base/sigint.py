"""Ctrl-C held while Python cannot take it safely.

Python runs a SIGINT handler (its own raises KeyboardInterrupt) inside
whatever Python code the main thread runs when the signal arrives. Inside a
ctypes callback, such as LLVM's symbol filter or diagnostic handler called
from C, the exception is printed and dropped: the Ctrl-C is lost, and a launch
it was meant to stop runs on forever. Code that calls such C holds Ctrl-C
(`held`) and takes it once the call returns."""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator


class Held:
    """The Ctrl-Cs that arrived while held, for the handler that was in place."""

    def __init__(self, handler=None):
        self.handler, self.signals = handler, []

    def deliver(self) -> None:
        """Run the handler for the Ctrl-Cs held so far (Python's raises
        KeyboardInterrupt)."""
        while self.signals:
            self.handler(self.signals.pop(), None)


@contextlib.contextmanager
def held() -> Iterator[Held]:
    """Hold Ctrl-C during the block: the handler runs for it as the block ends
    (or earlier, where the block calls `deliver`: a loop that waits). Only the
    main thread runs Python's signal handlers, and only a handler written in
    Python can be held (the default action ends the process anyway)."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        yield Held()
        return
    got = Held(previous)
    signal.signal(signal.SIGINT, lambda signum, frame: got.signals.append(signum))
    try:
        yield got
    finally:
        signal.signal(signal.SIGINT, previous)
        got.deliver()
