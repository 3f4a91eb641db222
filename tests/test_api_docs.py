"""The API reference (docs/api.md): every name `import edsl` exports is on
it, and every function it documents has a Google-style docstring (the style
the site's build is told) that documents each of its parameters."""
import inspect
import re
from pathlib import Path

import griffe
import pytest

import edsl
import edsl.backend.arrays
import edsl.backend.driver
import edsl.backend.model
import edsl.export.project
import edsl.fl
from edsl.function import EdslFunction

API = (Path(__file__).resolve().parent.parent / "docs" / "api.md").read_text()

DOCUMENTED = {
    "edsl.dialect": edsl.dialect.__wrapped__ if hasattr(edsl.dialect, "__wrapped__") else edsl.dialect,
    "EdslFunction.compile": EdslFunction.compile,
    "EdslFunction.run": EdslFunction.run,
    "edsl.fl.call": edsl.fl.call,
    "activate": edsl.backend.driver.activate,
    "activated": edsl.backend.driver.activated,
    "last_report": edsl.backend.model.last_report,
    "array": edsl.backend.arrays.array,
    "export": inspect.unwrap(edsl.export.project.export),
}


def test_every_exported_name_is_on_the_page():
    missing = [name for name in edsl.__all__
               if not re.search(rf"`{re.escape(name)}`|edsl\.{re.escape(name)}\b|^\s*- {re.escape(name)}$", API, re.M)]
    assert not missing, f"docs/api.md does not mention {missing}"


@pytest.mark.parametrize("name", DOCUMENTED)
def test_every_parameter_is_documented_google_style(name):
    fn = DOCUMENTED[name]
    docstring = griffe.Docstring(inspect.getdoc(fn) or "")
    sections = docstring.parse("google", warnings=False)
    documented = {p.name.lstrip("*") for s in sections if s.kind.value == "parameters" for p in s.value}
    wanted = {p.name for p in inspect.signature(fn).parameters.values()
              if p.name not in ("self", "cls") and not p.name.startswith("_")}
    assert wanted <= documented, f"{name}: parameters {sorted(wanted - documented)} not in its Args section"
    assert any(s.kind.value in ("returns", "yields") for s in sections) or name == "activated", \
        f"{name}: no Returns section"
