"""The facts of the machines edsl compiles for, importable by every layer:
the DPU's ABI and limits (`dpu`: memories, the DMA rules, the kernel entry,
the launch context), the NVPTX facts (`nvptx`), the targets as records
(`machines`: memory spaces, where tile parameters live) and the element types
with their layouts (`dtypes`)."""
