"""pytest plugin of the conformance mode `dpu-tasklets` (scripts/triton_conformance.py).

Every kernel launch on the `dpu` backend that sets no `num_tasklets` runs on
16 tasklets: its tile code shared out among them and barriers placed where
data crosses them. The cases check their results as they do on one tasklet.
"""
TASKLETS = 16


def pytest_configure(config):
    # The DPU model's driver, also where a GPU's is active (as export_each_launch.py).
    import edsl.backend
    from edsl.backend import compiler
    edsl.backend.activate()
    parse = compiler.DpuBackend.parse_options

    def parse_options(self, opts):
        return parse(self, {"num_tasklets": TASKLETS, **dict(opts)})
    compiler.DpuBackend.parse_options = parse_options
