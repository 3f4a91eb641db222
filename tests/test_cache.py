"""Compile once: the in-memory and on-disk caches, a second process reusing an
entry, two processes compiling at once, and corrupt entries recompiled."""
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import edsl
from edsl.base import cache

SCRIPT = textwrap.dedent('''
    import numpy as np, edsl
    from edsl import InOut, Input

    @edsl.dialect
    def scale(y: InOut["memref<?xf32>"], a: Input["f32"]):
        for i in range(y.shape[0]):
            y[i] = y[i] * a

    scale.llvm
    y = np.arange(4, dtype=np.float32)
    scale(y, 3.0)
    assert y.tolist() == [0.0, 3.0, 6.0, 9.0], y
    print(scale.cache_key)
''')


def _run(tmp_path, env_dir):
    script = tmp_path / "scale_kernel.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, EDSL_CACHE_DIR=str(env_dir))
    return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def test_second_process_reuses_the_disk_entry(tmp_path):
    directory = tmp_path / "cache"
    first = _run(tmp_path, directory)
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    key = out.strip()
    entry = directory / f"{key}.json"
    assert entry.exists()
    stamp = entry.stat().st_ino          # (a rewrite renames a new file into place; a read touches it)
    second = _run(tmp_path, directory)
    out2, err2 = second.communicate(timeout=300)
    assert second.returncode == 0, err2
    assert out2.strip() == key and entry.stat().st_ino == stamp  # read, not rewritten


def test_two_processes_compiling_at_once(tmp_path):
    directory = tmp_path / "cache"
    procs = [_run(tmp_path, directory) for _ in range(2)]
    keys = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        keys.append(out.strip())
    assert keys[0] == keys[1]
    files = sorted(directory.iterdir(), key=lambda f: f.suffix)
    # the function's entry, the lowered runtime library and the program's object code;
    # no temporary file left behind
    assert [f.suffix for f in files] == [".json", ".mlir", ".o"] and files[0].name == f"{keys[0]}.json"
    json.loads(files[0].read_text())


def test_corrupt_entry_is_recompiled(tmp_path):
    directory = tmp_path / "cache"
    first = _run(tmp_path, directory)
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    entry = directory / f"{out.strip()}.json"
    for garbage in ("{not json", json.dumps({"format": 1, "key": out.strip(), "llvm": "module {", "mlir": "",
                                             "sites": [], "wram_bytes": 0})):
        entry.write_text(garbage)
        again = _run(tmp_path, directory)
        _, err = again.communicate(timeout=300)
        assert again.returncode == 0, err
        json.loads(entry.read_text())  # rewritten whole


def test_memory_cache_shares_compilations(edsl_cache_dir):
    def body(y: edsl.InOut["memref<?xf32>"]):
        for i in range(y.shape[0]):
            y[i] = y[i] + 1.0
    first, second = edsl.dialect(body), edsl.dialect(body)
    assert first.cache_key == second.cache_key
    assert first.compile() is second.compile()
    y = np.zeros(3, np.float32)
    second(y)
    assert y.tolist() == [1.0, 1.0, 1.0]


def test_unusable_cache_directory_is_not_fatal(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("EDSL_CACHE_DIR", str(blocker / "sub"))
    assert cache.store("k" * 64, {"x": 1}) is False
    assert cache.load("k" * 64, {"x": int}) is None


def test_the_fingerprint_covers_every_layer_and_every_kind_of_source():
    """Editing any part of the compiler recompiles what the caches hold, the
    MLIR templates and the exported C included."""
    root = pathlib.Path(edsl.__file__).resolve().parent
    files = {str(p.relative_to(root)) for p in cache.source_files()}
    for wanted in ("backend/convert/core.py", "backend/convert/program.mlir", "dpu/runtime_library.mlir",
                   "export/templates/host_runner.c", "target/dpu.py", "codegen/generator.py",
                   "backend/convert/bessel_cephes.json", "function.py"):
        assert wanted in files, wanted


def test_the_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    """EDSL_CACHE_DIR; else inside Triton's cache (clearing it clears both);
    else XDG_CACHE_HOME; else ~/.cache."""
    for name in ("EDSL_CACHE_DIR", "TRITON_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    assert cache.cache_dir() == pathlib.Path.home() / ".cache" / "edsl"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "edsl"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    assert cache.cache_dir() == tmp_path / "triton" / "edsl"
    monkeypatch.setenv("EDSL_CACHE_DIR", str(tmp_path / "own"))
    assert cache.cache_dir() == tmp_path / "own"


def test_the_least_recently_used_entries_go_first_past_the_bound(monkeypatch, tmp_path):
    monkeypatch.setenv("EDSL_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("EDSL_CACHE_MAX_BYTES", "3000")
    for k, key in enumerate("abc"):
        assert cache.store_bytes(key * 8, "o", bytes(900))
        os.utime(tmp_path / f"{key * 8}.o", (1000 + k, 1000 + k))       # a, then b, then c
    assert cache.load_bytes("a" * 8, "o") == bytes(900)                    # a read: a is the newest
    assert cache.store_bytes("d" * 8, "o", bytes(900))                     # 4 x ~920 bytes > 3000
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["aaaaaaaa.o", "cccccccc.o", "dddddddd.o"], left


def test_the_runtime_library_is_lowered_once_per_machine(monkeypatch, tmp_path):
    from edsl.dpu import support
    monkeypatch.setenv("EDSL_CACHE_DIR", str(tmp_path))
    support.library_text.cache_clear()
    try:
        first = support.library_text()
        assert [p.suffix for p in tmp_path.iterdir()] == [".mlir"]
        support.library_text.cache_clear()
        monkeypatch.setattr(support, "_lowered", lambda source: pytest.fail("lowered again"))
        assert support.library_text() == first
    finally:
        support.library_text.cache_clear()
