"""PrIM's other eight benchmarks of the uPIMulator workbook, ported to the EDSL as PrIM writes
them: a held-out check of the DPU time estimate, never tuned on (`python
benchmarks/dpu_timing.py --heldout`). One module a benchmark, each with BENCHMARK (its name in
workbook_heldout.csv), SMALL (a quick row for the tests: size, DPUs) and `dpu0(size, dpus)`:
DPU 0's share of a workbook row run on the model, its result checked against NumPy."""
