"""The UPMEM DPU: its ABI (`abi`), the runtime library every program links
(`support`), host code for programs (`jit`) and the DPU model that runs them
(`runtime`)."""
