"""The README fits on a page: at most 12,000 characters, a quick start of exactly two commands
(one installs and runs the main job, the other installs and runs the tests, as CI does), one
Python example that runs and gives what it promises, and links that lead somewhere. The rest
of the documentation is in docs/ (tests/test_docs.py)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import vertimrf
from vertimrf.encoding import TableEncoder

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
LIMIT = 12_000
INSTALL_AND_RUN = "python -m pip install . && python -m vertimrf demo"
INSTALL_AND_TEST = 'python -m pip install ".[test]" && python -m pytest -q -n 3'


def _text() -> str:
    return README.read_text(encoding="utf-8")


def _section(title: str) -> str:
    return _text().split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _commands() -> list[str]:
    """Every command of the quick start: the lines of its code blocks, joined where a line
    ends in a backslash."""
    blocks = re.findall(r"```(\w*)\n(.*?)```", _section("Quick start"), re.S)
    assert all(lang == "bash" for lang, _ in blocks), blocks
    text = "".join(body for _, body in blocks).replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip()]


def test_the_readme_is_at_most_12000_characters():
    assert len(_text()) <= LIMIT, f"README.md has {len(_text())} characters; at most {LIMIT}"


def test_the_quick_start_is_exactly_two_commands():
    assert _commands() == [INSTALL_AND_RUN, INSTALL_AND_TEST]


def test_the_second_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    test_command = INSTALL_AND_TEST.split(" && ")[1]
    assert test_command in ci  # a line of its own: the whole suite, as the README says
    install = shlex.split(INSTALL_AND_TEST.split(" && ")[0])
    assert install[:4] == ["python", "-m", "pip", "install"] and install[4].startswith(".[test")


def test_the_readme_has_one_python_example_of_about_20_lines():
    blocks = re.findall(r"```python\n(.*?)```", _text(), re.S)
    assert len(blocks) == 1
    assert 10 <= len(blocks[0].strip().splitlines()) <= 25


def test_the_readme_links_and_picture_point_to_files_that_exist():
    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", _text())
    assert any(t.endswith(".png") for t in targets), "no picture"
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert not missing, missing
    # the docs it points to are the site's kinds of page, each in mkdocs.yml's nav
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for kind in ("Tutorials", "How-to", "Reference", "Explanation"):
        assert f"**{kind}:**" in _text() and f"  - {kind}:" in nav, kind


@pytest.mark.slow
def test_the_readme_example_runs(tmp_path, monkeypatch, capsys):
    """Unseeded, as a user runs it: the secure method's 3-way TVD on Adult is about 0.05 at
    epsilon 1 (0.048 at 0.8 and 0.038 at 1.6 in docs/benchmarks.md), Centralized's about
    0.04; rows drawn uniformly from the domain are far above 0.1."""
    (block,) = re.findall(r"```python\n(.*?)```", _text(), re.S)
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    exec(compile(block, "README.md example", "exec"), ns)
    printed = capsys.readouterr().out
    spec, synth, fake, model = ns["spec"], ns["synth"], ns["fake"], ns["model"]
    for table in (synth, fake):
        assert list(table.columns) == list(spec.names)
        TableEncoder(spec).table(table)  # every value inside the public domain
    assert len(synth) == 10_000
    report = model.report
    assert report.method == "secure" and report.dp_guarantee and not report.seeded
    assert report.total_epsilon <= 1 + 1e-9 and report.delta == 1e-6
    assert "colludes with no party" in printed
    tvds = dict(re.findall(r"^(secure|centralized) 3-way TVD: ([0-9.e-]+)$", printed, re.M))
    assert sorted(tvds) == ["centralized", "secure"], printed[-500:]
    assert all(0 < float(v) < 0.1 for v in tvds.values()), tvds
    loaded = vertimrf.VerticalModel.load(tmp_path / "adult.vmrf")
    assert loaded.report.total_epsilon == report.total_epsilon


@pytest.mark.slow
def test_the_first_command_runs_the_main_job(tmp_path):
    """The part after the installation (the installation itself is tested in a fresh venv
    by tests/test_examples.py): the demo runs to its end on the bundled data, and writes
    the secure method's synthetic table with Adult's named columns to the file it names."""
    job = shlex.split(INSTALL_AND_RUN.split(" && ")[1])
    assert job[:3] == ["python", "-m", "vertimrf"]
    done = subprocess.run(
        [sys.executable, *job[1:], "--quiet"], cwd=tmp_path, capture_output=True, text=True,
        timeout=1800,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "TVD" in done.stdout and "differentially private" in done.stdout
    spec = vertimrf.load_dataset("adult_labeled")[1]
    assert "to adult_synthetic.csv;" in done.stdout
    synth = pd.read_csv(tmp_path / "adult_synthetic.csv")
    assert list(synth.columns) == list(spec.names) and spec.names[1] == "workclass"
    TableEncoder(spec).table(synth)  # every value one of the spec's categories
