"""DPU model and runtime: the UPMEM facts, and host execution of DPU programs."""
