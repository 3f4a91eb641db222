"""Export a compiled Triton kernel as a self-contained UPMEM SDK project.

    edsl.export(add_kernel, "add_dpu", sample_args=(x, y, out, n),
                constants={"BLOCK": 1024}, grid=(98,), num_dpus=4)
    $ cd add_dpu && make run        # UPMEM hardware (SDK installed)
    $ cd add_dpu && make run-sim    # anywhere: the same DPU source, host C compiler

Route: the kernel's final LLVM-dialect MLIR (the `llmlir` stage of the `dpu`
backend), with the DPU runtime library linked in as the model links it, is
printed as C by `printer` -- one C function per `llvm.func`, blocks as
labels, one statement per op; `generate` fills the files' templates
(`templates/`) around it, and `project` writes them. The UPMEM toolchain
is LLVM 12 and cannot read today's opaque-pointer LLVM IR, and C is what
it reads best; C written only against the SDK's headers (`defs.h`,
`mram.h`, `barrier.h`) also builds with the host C compiler against this
project's stand-ins for those headers (`sdk/`), so the source that is
tested here is the source that goes to hardware. The JIT of the DPU model
stays the runtime of `kernel[grid](...)`; the tests run both and compare.

Layer: after the backend (it compiles through it) and the DPU runtime facts;
nothing imports this package but the public API and the `edsl` command.
"""
from __future__ import annotations

import sys
import types

__all__ = ["export", "ExportResult"]


def __getattr__(name):
    if name in ("export", "ExportResult"):
        from . import project
        return getattr(project, name)
    raise AttributeError(f"module 'edsl.export' has no attribute {name!r}")


class _CallablePackage(types.ModuleType):
    """Importing this package binds it to `edsl.export`, the name of the
    function `edsl.export(...)`: calling the package calls that function."""

    def __call__(self, *args, **kwargs):
        from .project import export
        return export(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
