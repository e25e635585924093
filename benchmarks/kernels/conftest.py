"""Kernel throughput against plain references, as pytest-benchmark entries.

Every benchmark goes through the ``pair`` fixture: pytest-benchmark times the kernel
(``benchmark.pedantic``), the reference is timed right after it in the same test (best of a few
``time.perf_counter`` runs, so both sides see about the same machine load), and the two outputs
are compared, so each benchmark is a test too. A large reference is timed on a slice of the work
and scaled (``reference_fraction`` < 1). Each entry's ``extra_info`` holds its throughput, the
reference's, their ratio, the Numba thread count and the cores; at the end a table of the
ratios is printed (and written as Markdown with ``--kernel-table PATH``).

Under ``--benchmark-disable`` (CI) every kernel and reference runs once and is checked, and
nothing is timed.
"""

from __future__ import annotations

import os
import platform
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import pytest

_ROWS: list[dict[str, Any]] = []
ROUNDS = (30, 10)  # timed runs of the kernel and of the reference (best of them)
LARGE_ROUNDS = (5, 3)  # the same for the tests marked large


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--kernel-table",
        metavar="PATH",
        default=None,
        help="write the table of kernel / reference ratios to PATH (Markdown)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "large: a million-row size (skip with -m 'not large')")


def machine() -> dict[str, Any]:
    """Cores, Numba threads and load: what a throughput was measured on."""
    return {
        "cores": os.cpu_count(),
        "numba_threads": numba.get_num_threads(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default (active)"),
    }


def _best(fn: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(rounds):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


@pytest.fixture
def pair(benchmark: Any, request: pytest.FixtureRequest) -> Callable[..., None]:
    """Time ``kernel()`` and ``reference()``, then ``check(kernel_out, reference_out)``.

    One kernel call does ``items`` of ``unit`` (e.g. 1e6 records and "records/s"; a rate in
    GB/s counts its bytes in GB); the reference does ``reference_fraction`` of that work.
    """

    def run(
        kernel: Callable[[], Any],
        reference: Callable[[], Any],
        check: Callable[[Any, Any], None],
        *,
        items: float,
        unit: str,
        reference_name: str,
        reference_fraction: float = 1.0,
    ) -> None:
        rounds, reference_rounds = (
            LARGE_ROUNDS if request.node.get_closest_marker("large") else ROUNDS
        )
        got = benchmark.pedantic(kernel, rounds=rounds, warmup_rounds=1, iterations=1)
        if benchmark.disabled:
            check(got, reference())
            return
        ref_seconds, want = _best(reference, reference_rounds)
        check(got, want)
        seconds = benchmark.stats.stats.min
        rate = items / seconds
        ref_rate = items * reference_fraction / ref_seconds
        info = {
            "unit": unit,
            "throughput": rate,
            "reference": reference_name,
            "reference_throughput": ref_rate,
            "ratio": rate / ref_rate,
            "reference_fraction": reference_fraction,
            **machine(),
        }
        benchmark.extra_info.update(info)
        _ROWS.append({"group": benchmark.group, "name": request.node.name, **info})

    return run


def _table() -> list[str]:
    lines = [
        "| group | benchmark | kernel | reference | kernel / reference | reference timed on |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in _ROWS:
        share = r["reference_fraction"]
        part = "all" if share == 1 else f"{share:.3g} of the work, scaled"
        lines.append(
            f"| {r['group']} | `{r['name']}` | {r['throughput']:.4g} {r['unit']} | "
            f"{r['reference_throughput']:.4g} {r['unit']} ({r['reference']}) | "
            f"**{r['ratio']:.3g}x** | {part} |"
        )
    return lines


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if not _ROWS:
        return
    m = machine()
    head = (
        f"{m['cores']} cores, {m['numba_threads']} Numba threads, load average "
        f"{m['load_average'][0]:.2f} at the end, OMP_WAIT_POLICY {m['omp_wait_policy']}; "
        f"Python {platform.python_version()}, numba {numba.__version__}"
    )
    terminalreporter.section("kernel / reference (min times)")
    terminalreporter.write_line(head)
    for line in _table():
        terminalreporter.write_line(line)
    path = config.getoption("--kernel-table")
    if path:
        command = "python -m pytest " + shlex.join(sys.argv[1:])
        text = [
            "# Kernel throughput against the plain references",
            "",
            head + ".",
            "",
            *_table(),
            "",
            f"Produced by `{command}`.",
            "",
        ]
        Path(path).write_text("\n".join(text), encoding="utf-8")
