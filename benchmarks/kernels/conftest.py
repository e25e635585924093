"""Kernel throughput against plain references, as pytest-benchmark entries.

Every benchmark goes through the ``pair`` fixture: pytest-benchmark times the kernel
(``benchmark.pedantic``), the reference is timed right after it in the same test (the best of
its ``time.perf_counter`` runs), each side after a warm-up call and for about BUDGET seconds, and
the two outputs are compared, so each benchmark is a test too. Both rates are from the fastest
run, the one least slowed by other processes. A large reference is timed on a slice of the work
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
_START_LOAD: list[float] = []
BUDGET = 1.0  # seconds of timed runs each side aims at, in at least 3 and at most 200 runs


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--kernel-table",
        metavar="PATH",
        default=None,
        help="write the table of kernel / reference ratios to PATH (Markdown)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "large: a million-row size (skip with -m 'not large')")
    _START_LOAD[:] = os.getloadavg()


def machine() -> dict[str, Any]:
    """Cores, Numba threads and load: what a throughput was measured on."""
    return {
        "cores": os.cpu_count(),
        "numba_threads": numba.get_num_threads(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default (active)"),
    }


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _rounds(seconds: float) -> int:
    """Runs of a call of ``seconds`` that fill about BUDGET seconds."""
    return int(min(200, max(3, BUDGET / max(seconds, 1e-9))))


def _best(fn: Callable[[], Any]) -> tuple[float, Any]:
    """The fastest of about BUDGET seconds of runs of ``fn``, after a warm-up run."""
    fn()
    best, out = _timed(fn)
    for _ in range(_rounds(best) - 1):
        seconds, out = _timed(fn)
        best = min(best, seconds)
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
        if benchmark.disabled:
            check(benchmark.pedantic(kernel), reference())
            return
        kernel()  # loads the compiled kernel: no first-call cost in the timed runs
        warm, _ = _timed(kernel)
        got = benchmark.pedantic(kernel, rounds=_rounds(warm), iterations=1)
        ref_seconds, want = _best(reference)
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


def _rate(value: float, unit: str) -> str:
    """``value`` with an SI prefix on ``unit``: 7.1e8 records/s -> "710 M records/s"."""
    for prefix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {prefix} {unit}"
    return f"{value:.3g} {unit}"


def _table() -> list[str]:
    lines = [
        "| group | benchmark | kernel | reference | kernel / reference | reference timed on |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in _ROWS:
        share = r["reference_fraction"]
        part = "all" if share == 1 else f"{share:.3g} of the work, scaled"
        lines.append(
            f"| {r['group']} | `{r['name']}` | {_rate(r['throughput'], r['unit'])} | "
            f"{_rate(r['reference_throughput'], r['unit'])} ({r['reference']}) | "
            f"**{r['ratio']:.3g}x** | {part} |"
        )
    return lines


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if not _ROWS:
        return
    m = machine()
    head = (
        f"{m['cores']} cores, {m['numba_threads']} Numba threads, load average (1 min) "
        f"{_START_LOAD[0]:.2f} at the start and {m['load_average'][0]:.2f} at the end, "
        f"OMP_WAIT_POLICY {m['omp_wait_policy']}; "
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
