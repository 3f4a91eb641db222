"""Python's garbage collector paused while edsl compiles: what it leaves as it
found it, and which steps of a compile run with it paused."""
import gc

import pytest

import edsl
from edsl import InOut
from edsl.base import collector
from edsl.function import EdslFunction


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_paused_then_on_again(collector_on):
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()   # (the outer block turns it back on)
    assert gc.isenabled()


def test_a_program_that_turned_it_off_keeps_it_off(collector_on):
    gc.disable()
    with collector.paused():
        pass
    assert not gc.isenabled()


def test_on_again_after_an_error(collector_on):
    with pytest.raises(ZeroDivisionError):
        with collector.paused():
            1 / 0
    assert gc.isenabled()


def test_a_function_compiles_with_the_collector_paused(collector_on, monkeypatch):
    seen = []
    stock = EdslFunction._compile

    def spy(self, target):
        seen.append(gc.isenabled())
        return stock(self, target)

    monkeypatch.setattr(EdslFunction, "_compile", spy)

    @edsl.dialect
    def halve(y: InOut["memref<?xf32>"]):
        for i in range(y.shape[0]):
            y[i] = y[i] * 0.5

    halve.compile("nvptx64")
    assert seen == [False] and gc.isenabled()
