"""The documentation site, as a browser renders it: every page of a built
site (`mkdocs build --site-dir DIR`) is loaded in headless Chromium (Debian's
`chromium-headless-shell` or `chromium`), and must come back with a title
heading, and, where it is longer than a screen or two, sections under it; the
search index must exist and list every page.

    python scripts/check_site.py DIR

Exits non-zero naming each page that fails.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser")
LONG_PAGE_CHARS = 4000          # a page with more text than this needs sections (h2)


class _Outline(HTMLParser):
    """The headings and the text of a page's article."""

    def __init__(self):
        super().__init__()
        self.headings: dict[str, int] = {"h1": 0, "h2": 0}
        self.depth = 0                  # inside <article>
        self.text = 0

    def handle_starttag(self, tag, attrs):
        if tag == "article":
            self.depth += 1
        if self.depth and tag in self.headings:
            self.headings[tag] += 1

    def handle_endtag(self, tag):
        if tag == "article" and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.text += len(data.strip())


def render(browser: str, page: Path) -> str:
    """The page's DOM once Chromium has loaded it (scripts run)."""
    run = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=2000",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        raise RuntimeError(f"{browser} failed on {page}: {run.stderr.strip()[-500:]}")
    return run.stdout


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    site = Path(argv[0]).resolve()
    browser = next((b for b in BROWSERS if shutil.which(b)), None)
    if browser is None:
        print(f"no headless Chromium ({', '.join(BROWSERS)}): apt-get install chromium-headless-shell",
              file=sys.stderr)
        return 2
    pages = sorted(p for p in site.rglob("index.html") if "assets" not in p.parts)
    failures = []
    for page in pages:
        outline = _Outline()
        outline.feed(render(browser, page))
        name = str(page.parent.relative_to(site)) or "home"
        if outline.headings["h1"] != 1:
            failures.append(f"{name}: {outline.headings['h1']} title headings (h1), not 1")
        elif outline.text > LONG_PAGE_CHARS and not outline.headings["h2"]:
            failures.append(f"{name}: {outline.text} characters of text and no section (h2)")
    index = site / "search" / "search_index.json"
    try:
        entries = json.loads(index.read_text())["docs"]
    except (OSError, ValueError, KeyError) as err:
        failures.append(f"the search index {index} is missing or unreadable: {err}")
        entries = []
    indexed = {e["location"].split("#")[0] for e in entries}
    for page in pages:
        location = "" if page.parent == site else f"{page.parent.relative_to(site)}/"
        if entries and location not in indexed:
            failures.append(f"the search index lists no entry of {location or 'home'}")
    for failure in failures:
        print(f"site: {failure}", file=sys.stderr)
    print(f"site: {len(pages)} pages loaded in {browser}, {len(failures)} failing; "
          f"search index of {len(entries)} entries")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
