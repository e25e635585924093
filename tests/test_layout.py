"""The package table of docs/layout.md matches the tree: it names every subpackage
and every module at the top of ``vertimrf/``, and every path it names exists. Modules inside
a subpackage are the subpackage's own business: moving one changes nothing here."""

from __future__ import annotations

import re

from tests.helpers import ROOT

PACKAGE = ROOT / "vertimrf"


def _table_paths() -> set[str]:
    """The ``vertimrf/...`` paths in the package column of docs/layout.md's first table."""
    text = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    section = text.split("\n## ", 1)[0]  # the table comes before the first section
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]  # no header
    assert rows, "no package table at the top of docs/layout.md"
    cells = [row.split(" | ")[1] for row in rows]
    return {p for cell in cells for p in re.findall(r"`(vertimrf/[^`]*)`", cell)}


def _top_level() -> set[str]:
    """Every subpackage (``name/``) and module (``name.py``) at the top of the package."""
    packages = {f"{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    modules = {p.name for p in PACKAGE.glob("*.py") if p.name not in {"__init__.py", "__main__.py"}}
    return packages | modules


def test_the_package_table_names_every_subpackage_and_module_at_the_top():
    named = {path.removeprefix("vertimrf/").split("/", 1)[0] for path in _table_paths()}
    named = {n if n.endswith(".py") else f"{n}/" for n in named}
    assert sorted(_top_level() - named) == [], "in the tree, not in the layout table"
    assert sorted(named - _top_level()) == [], "in the layout table, not in the tree"


def test_every_path_the_package_table_names_exists():
    for path in sorted(_table_paths()):
        target = ROOT / path
        if path.endswith("/"):
            assert (target / "__init__.py").is_file(), f"{path} is not a package"
        else:
            assert target.is_file(), f"{path} is not a module"
