"""Helpers shared by the benchmark scripts: machine description and result writing."""

from __future__ import annotations

import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


def machine() -> str:
    """One line naming the machine: cores and CPU model."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model}"


def best_cpu(run: Callable[[], object], repeat: int = 3) -> float:
    """The least CPU seconds (``time.process_time``) of ``repeat`` calls of ``run``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def load_average() -> str:
    """The machine's 1-, 5- and 15-minute load averages, as /proc/loadavg shows them."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def mean_se(values: list[float]) -> tuple[float, float]:
    """The mean of ``values`` and its standard error (sample sd / sqrt(n); 0 for one value)."""
    n = len(values)
    mean = sum(values) / n
    se = math.sqrt(sum((x - mean) ** 2 for x in values) / (n - 1) / n) if n > 1 else 0.0
    return mean, se


def mean_se_text(values: list[float]) -> str:
    """``values``' mean and standard error (:func:`mean_se`) as "mean +- se", 4 decimals."""
    return "{:.4f} +- {:.4f}".format(*mean_se(values))


def table_head(rows: int, max_rows: int) -> dict:
    """The head of a results file: the table's size and the machine it ran on."""
    return {
        "rows": rows,
        "max_rows": max_rows,
        "machine": machine(),
        "nproc": os.cpu_count(),
        "memory_gb": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9,
    }


def write_json(path: str | None, data: dict | list) -> None:
    """Write ``data`` as JSON to ``path`` (creating folders) if a path is given."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def command_line(script: str, argv: list[str]) -> str:
    """The command that ran ``script`` with ``argv``, no path of this machine in it: a path
    inside the repository is given relative to it, any other by its last part alone."""
    repo = Path(__file__).resolve().parent.parent
    shown = []
    for arg in argv:
        if os.path.isabs(arg):
            path = Path(arg).resolve()
            arg = str(path.relative_to(repo)) if path.is_relative_to(repo) else path.name
        shown.append(arg)
    return " ".join(["python", script, *shown])


def git_commit(tree: str | os.PathLike) -> str:
    """The short hash of the commit checked out in ``tree`` ("unknown" outside git)."""
    proc = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return proc.stdout.strip() or "unknown"


def run_head(script: str, argv: list[str] | None) -> dict:
    """The command line (``argv``, default this process's), commit, machine and cores of a
    run of the benchmark ``script`` (its ``__file__``)."""
    shown = sys.argv[1:] if argv is None else argv
    return {
        "command": command_line(f"benchmarks/{Path(script).name}", shown),
        "commit": git_commit(Path(script).resolve().parents[1]),
        "machine": machine(),
        "cores": os.cpu_count(),
    }


def write_results(
    json_path: str | None,
    md_path: str | None,
    head: dict,
    rows: list[dict],
    markdown: Callable[[dict, list[dict]], str],
) -> None:
    """Write ``rows`` under ``head`` as JSON and as ``markdown``'s text (each if its path is
    given, atomically), and print the text."""
    from vertimrf.io import atomic_write_text

    write_json(json_path, {**head, "rows": rows})
    text = markdown(head, rows)
    if md_path:
        atomic_write_text(md_path, text)
    print(text)


def harness_tables(folder: str | os.PathLike) -> tuple:
    """A corpus harness folder's (its ``--dir``) spec, party tables by name and shared
    records over the spec's columns, each file read once."""
    from vertimrf.cli.common import read_table
    from vertimrf.domain import DomainSpec

    spec = DomainSpec.from_json(Path(folder) / "spec.json")
    data = Path(folder) / "data"
    names = sorted(p.stem for p in data.glob("*.csv") if p.stem not in ("all", "shared"))
    frames = {n: read_table(str(data / f"{n}.csv")) for n in names}
    return spec, frames, read_table(str(data / "shared.csv"))[list(spec.names)]


def interleaved(
    first: Callable[[int], float], second: Callable[[int], float], repeats: int
) -> dict:
    """Seconds of ``first(seed)`` and ``second(seed)``: one warm-up of each (seed 0), then
    ``repeats`` rounds of (first, second), seed = the round; both lists, their medians and
    the ratio second / first of the medians."""
    import statistics

    first(0)
    second(0)
    a, b = [], []
    for seed in range(repeats):
        a.append(first(seed))
        b.append(second(seed))
    med_a, med_b = statistics.median(a), statistics.median(b)
    return {
        "first": a,
        "second": b,
        "first_median": med_a,
        "second_median": med_b,
        "ratio": med_b / med_a,
    }


def peak_rss_kb(pid: int | str = "self") -> int:
    """A live process's peak resident memory (``VmHWM`` in /proc, kB; its own since its
    exec, not the forking parent's as ``wait4``'s ``ru_maxrss``), or 0 once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return int(found.group(1)) if found else 0
