"""DPU model and runtime: the UPMEM facts, and host execution of DPU programs."""


def __getattr__(name):
    # `edsl.dpu.array(a)`: a zero-copy view of a NumPy array that stock Triton
    # accepts as a kernel argument (it wants `data_ptr()` and `dtype`).
    if name in ("array", "DpuArray"):
        from ..backend import arrays
        return getattr(arrays, name)
    if name == "export":  # a compiled kernel as an UPMEM SDK project (edsl.export)
        from ..export import export
        return export
    raise AttributeError(f"module 'edsl.dpu' has no attribute {name!r}")
