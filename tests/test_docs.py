"""The documentation site (mkdocs.yml, docs/): its tutorials are scripts that
run and check themselves, and its navigation lists every page. The strict
build itself (`mkdocs build --strict`) is run by CI, with the `docs` extra."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
TUTORIALS = sorted((DOCS / "tutorials").glob("*.py"))


def nav_pages() -> list[str]:
    """The pages the `nav` of mkdocs.yml lists (read as text: PyYAML is a
    dependency of the docs extra, not of the tests)."""
    text = (ROOT / "mkdocs.yml").read_text()
    nav = re.search(r"^nav:\n((?:[ \t]+.*\n|\n)+)", text, re.M)
    assert nav, "mkdocs.yml has no nav"
    return re.findall(r"^\s*-\s*(?:[^\n]*?:\s*)?([\w./-]+\.md)\s*$", nav.group(1), re.M)


def test_tutorials_exist():
    assert len(TUTORIALS) >= 2, TUTORIALS


def _pages_showing(script: Path) -> list[Path]:
    return [page for page in DOCS.rglob("*.md") if f'"tutorials/{script.name}' in page.read_text()]


@pytest.mark.parametrize("script", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_runs_and_prints_what_its_pages_show(script, tmp_path):
    """The script checks itself (`OK: ...`), and every output block (```text)
    of a page that shows it is what it printed."""
    env = dict(os.environ, TRITON_DEFAULT_BACKEND="dpu", EDSL_CACHE_DIR=str(tmp_path / "edsl-cache"))
    env.pop("TRITON_INTERPRET", None)
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"^OK: ", run.stdout, re.M), run.stdout + run.stderr
    printed = run.stdout.splitlines()
    for page in _pages_showing(script):
        for block in re.findall(r"^```text\n(.*?)^```", page.read_text(), re.M | re.S):
            for line in block.splitlines():
                assert line in printed, f"{page.name} shows {line!r}; the script printed:\n{run.stdout}"


@pytest.mark.parametrize("script", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_is_shown_by_a_page(script):
    """A page includes the file itself (pymdownx.snippets), not a copy."""
    include = f'--8<-- "tutorials/{script.name}"'
    assert any(include in page.read_text() for page in DOCS.rglob("*.md")), include


def test_nav_lists_every_page():
    listed = nav_pages()
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(set(listed)) == sorted(listed), "a page is listed twice"
    assert not set(listed) - set(pages), f"listed but missing: {sorted(set(listed) - set(pages))}"
    assert not set(pages) - set(listed), f"pages not in the nav (orphans): {sorted(set(pages) - set(listed))}"


def test_the_libdevice_page_is_generated_from_the_table():
    script = Path(__file__).resolve().parent.parent / "scripts" / "libdevice_doc.py"
    r = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
