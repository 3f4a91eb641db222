"""What every layer uses and that is no compiler step: the errors with their
source locations (`errors`), the on-disk cache of compiled code (`cache`),
the checked template filler of the exported and runtime files (`templates`),
and the Python modules the `mlir` bindings find for the dialects edsl's
contexts hold unregistered (`dialects`, imported by each module that makes
an MLIR context, so that `import edsl` and `import triton` load no MLIR)."""
