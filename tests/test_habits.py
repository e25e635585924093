"""Library habits: no prints, a logger, progress bars only when asked for or on a terminal, a
thread setting that takes effect, the version in one place, and the typing marker installed."""

from __future__ import annotations

import ast
import inspect
import logging
import re
from pathlib import Path

import numba
import pytest

import vertimrf
from tests.helpers import small_adult
from vertimrf import PrivMRF
from vertimrf.cli import main
from vertimrf.errors import ConfigError
from vertimrf.logs import progress_bar, show_progress
from vertimrf.party import Party
from vertimrf.server import Server
from vertimrf.threads import max_threads

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "vertimrf"


def test_library_code_calls_no_print():
    """Only the command lines (the vertimrf.cli package and the __main__ entry points)
    print; the library logs."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "__main__.py" or path.parent.name == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found


def test_a_fit_prints_nothing_and_logs_to_the_library_logger(capsys, caplog):
    df, spec = small_adult(300, 6)
    with caplog.at_level(logging.INFO, logger="vertimrf"):
        PrivMRF(1.0, 1e-6, seed=0).fit(df, spec)
    assert capsys.readouterr() == ("", "")
    names = {r.name for r in caplog.records}
    assert "vertimrf.synth.privmrf.synthesizer" in names, names
    assert all(n.startswith("vertimrf.") for n in names), names
    assert any(r.getMessage().startswith("done in") for r in caplog.records)


def test_progress_bars_only_when_asked_for_or_on_a_terminal(capsys, monkeypatch):
    for role in (Party, Server):
        assert inspect.signature(role).parameters["progress"].default is None
    list(progress_bar(range(3), desc="quiet"))  # pytest's stderr is not a terminal
    assert capsys.readouterr().err == ""
    list(progress_bar(range(3), desc="asked", progress=True))
    assert "asked" in capsys.readouterr().err
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    assert show_progress(None) and not show_progress(False)


def test_set_num_threads_takes_effect_and_rejects_bad_values():
    before = numba.get_num_threads()
    try:
        vertimrf.set_num_threads(1)
        assert numba.get_num_threads() == 1 == vertimrf.get_num_threads()
        for bad in (0, -1, max_threads() + 1, 1.5, True, "2", None):
            with pytest.raises(ConfigError, match="number of threads"):
                vertimrf.set_num_threads(bad)
        assert numba.get_num_threads() == 1  # a refused value changes nothing
    finally:
        numba.set_num_threads(before)


def test_the_cli_threads_option(tmp_path, capsys):
    before = numba.get_num_threads()
    try:
        assert main(["--threads", "1", "secret", "--out", str(tmp_path / "s.hex")]) == 0
        assert numba.get_num_threads() == 1
        assert main(["--threads", "0", "secret", "--out", str(tmp_path / "t.hex")]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("vertimrf: error: the number of threads") and "\n" not in err
        assert not (tmp_path / "t.hex").exists()
    finally:
        numba.set_num_threads(before)


def test_the_version_is_in_one_place():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "vertimrf.__version__"
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", changelog, re.M)
    assert released and released[0] == vertimrf.__version__


def test_the_typing_marker_is_installed_with_the_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert (PACKAGE / "py.typed").is_file()
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["vertimrf"]


def _imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_tests_and_benchmarks_do_not_import_each_other():
    crossing = [
        str(path.relative_to(ROOT))
        for folder, other in (("tests", "benchmarks"), ("benchmarks", "tests"))
        for path in (ROOT / folder).rglob("*.py")
        if other in _imported(path)
    ]
    assert not crossing, crossing


def test_every_lazy_public_name_is_typed_for_type_checkers():
    """The TYPE_CHECKING imports of vertimrf/__init__.py name exactly the lazy exports, from
    the same modules, so `vertimrf.fit_vertical` has its real type and not Any."""
    tree = ast.parse((ROOT / "vertimrf" / "__init__.py").read_text(encoding="utf-8"))
    (block,) = [
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    ]
    typed = {a.name: node.module for node in block.body for a in node.names}
    assert all(a.asname == a.name for node in block.body for a in node.names)
    assert typed == vertimrf._EXPORTS
