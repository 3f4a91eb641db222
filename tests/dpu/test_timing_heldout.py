"""The workbook's eight other benchmarks (benchmarks/prim/heldout/), ported as PrIM writes
them: each checked against NumPy on a small row, and the held-out table printed with its
own MAPE line (a report, never a target: no bound on its figures)."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))

from prim import validation  # noqa: E402

PORTED = validation.heldout_ports()


def test_all_eight_are_ported():
    assert sorted(PORTED) == ["BS", "HST-L", "MLP", "SCAN-RSS", "SEL", "TRNS", "TS", "UNI"]
    held_out = {r.benchmark for r in validation.read_rows(validation.HELDOUT)}
    assert held_out == set(PORTED)


@pytest.mark.parametrize("bench", sorted(PORTED))
def test_port_matches_numpy_and_is_estimated(bench):
    size, dpus = PORTED[bench].SMALL
    share = PORTED[bench].dpu0(size, dpus)          # raises if DPU 0's result differs from NumPy
    assert share.cycles > 0 and share.launches >= 1 and share.to_dpu and share.from_dpu
    row = validation.estimate(validation.Row(bench, dpus, size, 1.0, 1.0, 1.0, 1.0), share)
    assert row.est_launch == share.launches * validation.timing.launch_seconds(dpus) * 1e3
    assert row.est_to_dpu > 0 and row.est_from_dpu > 0


def test_heldout_table_has_its_own_line(capsys):
    import dpu_timing
    rows = dpu_timing.print_validation(only="SEL", heldout=True)
    out = capsys.readouterr().out
    assert len(rows) == 14 and "workbook_heldout.csv" in out
    assert "held-out (BS, HST-L, MLP, SCAN-RSS, SEL, TRNS, TS, UNI): 14 rows, kernel MAPE" in out
