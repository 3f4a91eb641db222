"""The one template helper (edsl.base.templates): every placeholder filled, every
field used, any other `$` kept as text."""
import pytest

from edsl.base import templates


def test_fill_checks_placeholders_against_fields(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("a ${x} b ${y_2} $@ $(CC) ${x}\n")
    assert templates.placeholders(path) == {"x", "y_2"}
    assert templates.fill(path, x=1, y_2="z") == "a 1 b z $@ $(CC) 1\n"
    with pytest.raises(RuntimeError, match=r"placeholders \['x', 'y_2'\], fields \['x'\]"):
        templates.fill(path, x=1)
    with pytest.raises(RuntimeError, match="fields"):
        templates.fill(path, x=1, y_2=2, z=3)
