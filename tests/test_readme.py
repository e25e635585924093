"""The README's Python examples run as written (docs that run)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, capsys):
    exec(compile(BLOCKS[index], f"README.md example {index + 1}", "exec"), {})
    printed = capsys.readouterr().out
    assert printed.strip(), "every README example prints its result"
    if "locenc" in BLOCKS[index]:
        assert "NOT differentially private" in printed
