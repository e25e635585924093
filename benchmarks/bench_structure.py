"""The package's structure in numbers: import cycles, long modules, method predicates, duplicates.

Run from the repository root: ``python benchmarks/bench_structure.py [--json OUT]``. It reads
the source only (nothing runs), so it can be run on any commit, before and after a change.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import grimp
import networkx as nx

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "vertimrf"

# How a method is asked for outside its own object, in the spellings issue 35 names.
PREDICATES = {
    "PADS_ROWS": re.compile(r"\bPADS_ROWS\b"),
    ".method ==": re.compile(r"\.method\s*[!=]=|\bmethod\s*[!=]=\s*\""),
    "pipeline ==": re.compile(r"\bpipeline\s*[!=]="),
    "isinstance(options)": re.compile(r"isinstance\([^)]*Options\b"),
    ".secure_product": re.compile(r"\.secure_product\b"),
}

# Where the record-set variation is chosen outside a strategy (issue 61): the plan's regions
# tested for None, the config's record_sets compared, and a party's table classes tested by
# isinstance.
TABLE_CLASSES = (
    "HeldTable", "AlignedTable", "FileAligned", "DaskAligned", "SlotAligned", "FileSlotAligned",
    "SlotTable", "MemoryRecords", "TokenFiles", "KeptAligned", "KeptRecords", "Aligned",
)  # fmt: skip
BRANCHES = {
    "regions is None": re.compile(r"\bregions\s+is\s+(?:not\s+)?None"),
    "record_sets ==": re.compile(r"\brecord_sets\s*[!=]=|[!=]=\s*self\.config\.record_sets"),
    "isinstance(table class)": re.compile(
        r"isinstance\([^)]*\b(?:" + "|".join(TABLE_CLASSES) + r")\b"
    ),
}

# Every message kind before and after issue 35 (old and new names).
KINDS = (
    "commit", "deal", "blob", "features", "select", "release", "request", "group-deal",
    "select-deal", "group-blob", "groups", "measure", "count", "local-count", "local", "cross",
)  # fmt: skip


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def import_cycles() -> list[list[str]]:
    """The strongly connected components (more than one module) of the package's import graph."""
    sys.path.insert(0, str(ROOT))
    graph = grimp.build_graph("vertimrf", cache_dir=None)
    g = nx.DiGraph()
    for module in graph.modules:
        g.add_node(module)
        for imported in graph.find_modules_directly_imported_by(module):
            g.add_edge(module, imported)
    # A package's __init__ re-exports its modules; an edge into it from its own module is not a
    # design cycle, so the graph keeps only edges between modules that are not each other's parent.
    for a, b in list(g.edges):
        if b.startswith(a + ".") or a.startswith(b + "."):
            g.remove_edge(a, b)
    return sorted(sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1)


def long_modules(limit: int = 500) -> dict[str, int]:
    out = {}
    for path in _sources():
        n = len(path.read_text().splitlines())
        if n > limit:
            out[str(path.relative_to(ROOT))] = n
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def predicate_sites() -> dict[str, int]:
    counts = dict.fromkeys(PREDICATES, 0)
    for path in _sources():
        for line in path.read_text().splitlines():
            for name, pattern in PREDICATES.items():
                counts[name] += len(pattern.findall(line))
    return counts


def branch_sites() -> dict[str, dict[str, int]]:
    """Each record-set branch spelling (:data:`BRANCHES`): its sites by module, and in all."""
    out: dict[str, dict[str, int]] = {}
    for name, pattern in BRANCHES.items():
        where = {}
        for path in _sources():
            hits = sum(len(pattern.findall(line)) for line in path.read_text().splitlines())
            if hits:
                where[str(path.relative_to(ROOT))] = hits
        out[name] = {"total": sum(where.values()), **where}
    return out


def kind_sites() -> dict[str, int]:
    """For each message kind, how many modules spell it as a bare string on a line that
    speaks of a message or a kind (``Message(``, ``kind``): a message kind named by hand."""
    out = {}
    for kind in KINDS:
        literal = re.compile(rf"[\"']{kind}[\"']")
        out[kind] = sum(
            1
            for p in _sources()
            if any(
                literal.search(line) and ("Message(" in line or "kind" in line.lower())
                for line in p.read_text().splitlines()
            )
        )
    return out


def duplicate_pairs() -> int:
    done = subprocess.run(
        ["duplicates", "--repo", str(PACKAGE), "--most", "1", "--seconds", "120"],
        capture_output=True,
        text=True,
        check=False,
    )
    first = done.stdout.splitlines()[0] if done.stdout else ""
    match = re.search(r"^(\d+) pairs?", first)
    return int(match.group(1)) if match else 0


def lines() -> int:
    return sum(len(p.read_text().splitlines()) for p in _sources())


DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def code_lines() -> int:
    """Lines that are neither blank, nor a comment, nor inside a docstring."""
    total = 0
    for path in _sources():
        text = path.read_text()
        docs: set[int] = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, DOCUMENTED) and ast.get_docstring(node, clean=False) is not None:
                first = node.body[0]
                docs.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
        for number, line in enumerate(text.splitlines(), 1):
            if number not in docs and line.strip() and not line.strip().startswith("#"):
                total += 1
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = parser.parse_args()
    cycles = import_cycles()
    numbers = {
        "lines": lines(),
        "code_lines": code_lines(),
        "modules": len(_sources()),
        "import_cycles": [c for c in cycles],
        "modules_over_500_lines": long_modules(),
        "modules_over_700_lines": long_modules(700),
        "record_set_branch_sites": branch_sites(),
        "method_predicate_sites": predicate_sites(),
        "message_kind_modules": kind_sites(),
        "duplicate_pairs": duplicate_pairs(),
    }
    text = json.dumps(numbers, indent=2)
    print(text)
    if args.json:
        if args.json.exists():
            raise SystemExit(f"{args.json} exists; name a new file")
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
