"""Export the vector-add Triton kernel as an UPMEM SDK project, then build and
run that project on the simulated DPUs (host C compiler, no SDK needed).

    python examples/export_vector_add.py [OUT_DIR]
    make -C OUT_DIR run        # on a machine with the UPMEM SDK
"""
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import triton

from edsl.export import export
from triton_vector_add import add_kernel

if __name__ == "__main__":
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "add_dpu"
    n = 100_003
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    export(add_kernel, out_dir, sample_args=(x, y, np.zeros_like(x), n), constants={"BLOCK": 1024},
           grid=(triton.cdiv(n, 1024),), num_dpus=4, outputs=["out_ptr"], overwrite=True)
    print(f"exported to {out_dir}")
    r = subprocess.run(["make", "-s", "run-sim"], cwd=out_dir)
    raise SystemExit(r.returncode)
