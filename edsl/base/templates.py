"""Package files with `${name}` placeholders (the DPU runtime library's MLIR,
the exported project's C and Makefile), filled by one checked helper: every
placeholder gets a value and every value a placeholder, so a renamed field
is an error here, not a hole in generated text."""
from __future__ import annotations

import functools
import string
from pathlib import Path


class Template(string.Template):
    """`${name}` placeholders only: any other `$` (Makefile variables, `$@`) is text."""
    pattern = r"\$\{(?P<braced>[_a-z][_a-z0-9]*)\}(?P<named>(?!))?(?P<escaped>(?!))?(?P<invalid>(?!))?"


@functools.lru_cache(None)
def _template(path: Path) -> Template:
    return Template(path.read_text())


def placeholders(path: Path) -> set[str]:
    """The placeholder names of the file at `path`."""
    template = _template(path)
    return {m.group("braced") for m in template.pattern.finditer(template.template)}


def fill(path: Path, **fields) -> str:
    """The file at `path` with every placeholder filled by `fields`."""
    wanted = placeholders(path)
    if wanted != set(fields):
        raise RuntimeError(f"template {path.name}: placeholders {sorted(wanted)}, "
                           f"fields {sorted(fields)}")
    return _template(path).substitute({k: str(v) for k, v in fields.items()})


def c_defines(pairs) -> str:
    """`#define EDSL_<name> <value>` lines of (name, value) pairs: how facts
    reach the C files filled here."""
    return "\n".join(f"#define EDSL_{name} {value}" for name, value in pairs)
