"""The documentation in the repository: docstring examples run as doctests, the examples in
docs/ run, links point to files that exist, nothing points outside the repository, and the
site builds with warnings as errors (when the docs extra is installed)."""

from __future__ import annotations

import doctest
import importlib
import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numba
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
DOCTEST_MODULES = [
    "vertimrf.logs",
    "vertimrf.threads",
    "vertimrf.privacy.zcdp",
    "vertimrf.privacy.ledger",
]


@pytest.mark.parametrize("name", DOCTEST_MODULES)
def test_docstring_examples_run(name):
    before = numba.get_num_threads()
    try:
        result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    finally:
        numba.set_num_threads(before)
    assert result.attempted > 0 and result.failed == 0, result


def test_the_docs_cover_the_protocol_threat_model_accounting_and_formats():
    names = {p.name for p in PAGES}
    assert {"protocol.md", "threat-model.md", "accounting.md", "messages.md", "api.md"} <= names
    threat = (DOCS / "threat-model.md").read_text(encoding="utf-8")
    assert "colludes with no party" in threat and "recover" in threat


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_python_examples_in_the_docs_run(page, capsys):
    threads, handlers, level = numba.get_num_threads(), logging.root.handlers[:], logging.root.level
    try:
        text = page.read_text(encoding="utf-8")
        for mark, block in re.findall(r"(<!-- checked: \S+ -->\n)?```python\n(.*?)```", text, re.S):
            if not mark:  # a marked block runs, with its checks, in the test the mark names
                exec(compile(block, str(page), "exec"), {})
    finally:  # the examples configure logging and threads; later tests expect the defaults
        numba.set_num_threads(threads)
        logging.root.handlers[:] = handlers
        logging.root.setLevel(level)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_in_the_docs_point_to_pages_that_exist(page):
    for target in re.findall(r"\]\(([^)#]+\.md)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
        assert (DOCS / target).is_file(), f"{page.name} links to a missing {target}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_marked_example_names_a_test_that_exists(page):
    for name in re.findall(r"<!-- checked: (\S+) -->", page.read_text(encoding="utf-8")):
        assert (ROOT / name).is_file(), f"{page.name} marks an example for a missing {name}"


def _nav_pages() -> set[str]:
    """The pages the site's nav lists, as paths below docs/."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:\n", 1)[1]
    return set(re.findall(r": (\S+\.md)$", nav.split("\ntheme:", 1)[0], re.M))


def test_every_page_is_in_the_sites_nav():
    listed = _nav_pages()
    assert sorted(p.name for p in PAGES if p.name not in listed) == []
    assert sorted(name for name in listed if not (DOCS / name).is_file()) == []


DESIGN = sorted((DOCS / "design").glob("*.md"))


def test_every_design_page_is_in_the_sites_nav():
    listed = _nav_pages()
    assert DESIGN and sorted(p.name for p in DESIGN if f"design/{p.name}" not in listed) == []


def test_a_modules_pointer_to_its_design_notes_finds_its_section():
    """A module whose docstring sends the reader to docs/design/X.md has a section there."""
    pointers = 0
    for path in (ROOT / "vertimrf").rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        head = source.split('"""', 2)[1] if source.startswith('"""') else ""
        for page in re.findall(r"docs/design/(\w+\.md)", head):
            pointers += 1
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            module = module.removesuffix(".__init__")
            text = (DOCS / "design" / page).read_text(encoding="utf-8")
            assert f"## `{module}`" in text, f"{module} points to {page}, which has no section"
    assert pointers > 100


def test_nothing_points_to_design_notes_outside_the_repository():
    files = [ROOT / "README.md", *PAGES, *(ROOT / "vertimrf").rglob("*.py")]
    files += [*(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").glob("*.py")]
    outside = "shared" + "/design"  # spelled apart so that this file does not match itself
    found = [str(f.relative_to(ROOT)) for f in files if outside in f.read_text(encoding="utf-8")]
    assert not found, found


@pytest.mark.skipif(shutil.which("mkdocs") is None, reason="the docs extra is not installed")
def test_the_site_builds_with_warnings_as_errors(tmp_path):
    run = subprocess.run(
        [shutil.which("mkdocs"), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": str(Path(sys.executable).parent)},
    )
    assert run.returncode == 0, run.stderr
