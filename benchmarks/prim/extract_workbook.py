"""Write workbook.csv and workbook_heldout.csv from uPIMulator's input.xlsx.

    python benchmarks/prim/extract_workbook.py input.xlsx

The workbook is VIA-Research/uPIMulator (commit COMMIT below),
tools/upmem_reg_model/data/input.xlsx. Reading it needs openpyxl, which the
project does not depend on: the CSVs are what the benchmark reads. The five
benchmarks that have EDSL ports go to workbook.csv; the other eight are kept
apart (held out: nothing is fitted or tuned on them).
"""
from __future__ import annotations

import pathlib
import sys

COMMIT = "870d916334e9ff0b190f555f951a9ec3c4257781"
PORTED = ("VA", "RED", "SCAN-SSA", "GEMV", "HST-S")
COLUMNS = ("benchmark", "num_dpus", "data_prep_param", "hw_kernel", "hw_cpu_to_dpu", "hw_dpu_to_cpu",
           "hw_dpu_to_dpu", "sim_kernel")
HEADER = f"""\
# Real UPMEM hardware times of PrIM benchmarks, and uPIMulator's simulated kernel times.
# Source: github.com/VIA-Research/uPIMulator, commit {COMMIT},
#   tools/upmem_reg_model/data/input.xlsx (sheet1), rows copied as stored, in file order.
# Columns: hw_* are hardware measurements, sim_kernel uPIMulator's simulation of the kernel.
# Units: milliseconds (the workbook states none; its regression code, src/regression/model.py,
#   fits them as bytes * 1e3 / (GB/s * 2**30)). data_prep_param is the total problem size
#   (src/benchmark/*.py divide it by num_dpus): VA int32 elements per input vector, RED and
#   SCAN-SSA int64 elements, GEMV matrix rows of 64 uint32 columns, HST-S 4-byte pixels
#   into 256 bins. Tasklets are not recorded (uPIMulator's examples use 16).
"""


def main(xlsx: str) -> None:
    import openpyxl
    ws = openpyxl.load_workbook(xlsx, data_only=True).active
    rows = list(ws.iter_rows(values_only=True))
    assert tuple(rows[0]) == COLUMNS, rows[0]
    data = [r for r in rows[1:] if r[0] is not None]
    here = pathlib.Path(__file__).resolve().parent
    for name, keep, note in (("workbook.csv", lambda b: b in PORTED, ""),
                             ("workbook_heldout.csv", lambda b: b not in PORTED,
                              "# Held-out rows: the benchmarks without EDSL ports; not used to fit or tune.\n")):
        lines = [HEADER + note + ",".join(COLUMNS)]
        lines += [",".join(str(v) for v in r) for r in data if keep(r[0])]
        (here / name).write_text("\n".join(lines) + "\n")
        print(f"{name}: {len(lines) - 1} rows")


if __name__ == "__main__":
    main(sys.argv[1])
