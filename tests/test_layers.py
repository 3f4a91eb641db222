"""The layers import one way: no module imports a later layer (lazy imports
inside functions included). The order is the "Layers" table of docs/layers.md."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "edsl"

# (layer, module prefixes), earliest first; a module belongs to the layer of its
# longest matching prefix.
LAYERS = [
    ("facts", ["edsl.errors", "edsl.dtypes", "edsl.cache", "edsl.templates", "edsl.annotations",
               "edsl.language", "edsl.dpu.abi", "edsl.gpu.nvptx"]),
    ("codegen", ["edsl.codegen"]),
    ("lowering", ["edsl.lowering"]),
    ("inject", ["edsl.inject", "edsl.gpu.library"]),
    ("dpu model", ["edsl.dpu"]),
    ("backends", ["edsl.backend", "edsl.gpu"]),
    ("export", ["edsl.export"]),
    ("api", ["edsl"]),
]


def layer_of(module: str) -> int:
    best, rank = -1, None
    for k, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), k
    assert rank is not None, module
    return rank


def modules():
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def imports(name: str, path: pathlib.Path):
    """(imported module, line) of every edsl import in the file, absolute."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("edsl"):
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("edsl"):
                continue
            for alias in node.names:        # `from . import x` may import a submodule
                sub = f"{target}.{alias.name}"
                yield (sub if (ROOT.parent / sub.replace(".", "/")).with_suffix(".py").exists()
                       or (ROOT.parent / sub.replace(".", "/")).is_dir() else target), node.lineno


def test_no_module_imports_a_later_layer():
    bad = []
    for name, path in modules():
        mine = layer_of(name)
        for target, line in imports(name, path):
            if layer_of(target) > mine:
                bad.append(f"{path.relative_to(ROOT.parent)}:{line}: {name} ({LAYERS[mine][0]}) imports "
                           f"{target} ({LAYERS[layer_of(target)][0]})")
    assert not bad, "\n".join(bad)


def test_every_module_has_a_layer():
    names = [name for name, _ in modules()]
    assert len(names) > 30
    for name in names:
        layer_of(name)
