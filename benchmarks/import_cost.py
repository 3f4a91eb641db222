"""What installing edsl costs every process: `import triton` with the `dpu`
plug-in discovered against without it (the same process, its entry point
hidden from Triton's discovery, which still scans the others), `import
edsl`, and `edsl --help`; fresh processes, taken in turn, best of 5. (An
editable install, `pip install -e`, adds its own import hook's time to
both `import triton` and `import edsl`: about 10 ms.)

    python benchmarks/import_cost.py

Goals: `import triton` within 1.1x of without the plug-in (Triton imports
`edsl.backend` at every `import triton`: it must load no MLIR), `edsl --help`
under 0.3 s.
"""
import os
import subprocess
import sys
import pathlib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from measure import best_in_turn  # noqa: E402

PYTHON = sys.executable
EDSL = str(pathlib.Path(PYTHON).with_name("edsl"))


def _run(argv, **env):
    return lambda: subprocess.run(argv, env=dict(os.environ, **env), check=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# `import triton` after reading Triton's plug-ins' entry points, all of them
# or all but edsl's (Triton's discovery reads only that group).
_IMPORT = ("import importlib.metadata as m\n"
           "found = m.entry_points(group='triton.backends')\n"
           "m.entry_points = lambda: m.EntryPoints(tuple(e for e in found if {keep}))\n"
           "import triton\n")
WITH = _IMPORT.format(keep="True")
WITHOUT = _IMPORT.format(keep="e.name != 'dpu'")


def main():
    times = best_in_turn({
        "with": _run([PYTHON, "-c", WITH]),
        "without": _run([PYTHON, "-c", WITHOUT]),
        "edsl": _run([PYTHON, "-c", "import edsl"]),
        "help": _run([EDSL, "--help"]),
    }, reps=5, warm=1)
    ratio = times["with"] / times["without"]
    print(f"import triton: {times['without'] * 1e3:.0f} ms without the dpu plug-in, "
          f"{times['with'] * 1e3:.0f} ms with it = {ratio:.2f}x (goal: within 1.1x)")
    print(f"import edsl: {times['edsl'] * 1e3:.0f} ms")
    print(f"edsl --help: {times['help'] * 1e3:.0f} ms (goal: under 300 ms)")


if __name__ == "__main__":
    main()
