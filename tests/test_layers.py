"""The layers import one way: each layer is a folder of `edsl/` (the API the
files at its top), and no module imports a module of a later layer, lazy
imports inside functions included; folders of one layer do not import each
other both ways. The order is the "Layers" table of docs/layers.md."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "edsl"

# (layer, its folders), earliest first; the files at the top of edsl/ are the API.
LAYERS = [
    ("base", ["base"]),
    ("target facts", ["target"]),
    ("codegen", ["codegen"]),
    ("lowering", ["lowering"]),
    ("inject", ["inject"]),
    ("dpu model", ["dpu"]),
    ("backends", ["backend", "gpu"]),
    ("export", ["export"]),
    ("api", ["", "tle"]),
]


def folder_of(module: str) -> str:
    """The folder of `edsl/` a module is in ("" for the files at its top)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (ROOT / parts[1]).is_dir()) else ""


def layer_of(module: str) -> int:
    folder = folder_of(module)
    for k, (_, folders) in enumerate(LAYERS):
        if folder in folders:
            return k
    raise AssertionError(f"{module}: its folder {folder!r} is in no layer")


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


def test_no_two_folders_import_each_other():
    edges = set()
    for name, path in modules():
        for target, _ in imports(name, path):
            if folder_of(name) != folder_of(target):
                edges.add((folder_of(name) or "edsl", folder_of(target) or "edsl"))
    circles = sorted(f"{a} <-> {b}" for a, b in edges if (b, a) in edges and a < b)
    assert not circles, circles


def test_every_folder_is_a_layer():
    folders = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == {f for _, fs in LAYERS for f in fs if f}
