"""The report: the paper's experiments and ours as figures, their data and one markdown page.

A research harness, like :mod:`vertimrf.experiment`: it runs every role in one process on a
table it also reads to score the results, with seeded (reproducible, not for release) noise.
Each figure is a registered :class:`~vertimrf.report.registry.Figure`; :func:`build_report`
runs the chosen ones at one level of :data:`~vertimrf.report.registry.LEVELS` and returns
the files to write (``REPORT.md``, ``<figure>.png`` and ``<figure>.json``). ``vertimrf
report`` is its command.
"""

from vertimrf.report import figures  # noqa: F401  (registers the figures)
from vertimrf.report.build import build_report, report_files
from vertimrf.report.context import ReportContext
from vertimrf.report.registry import FIGURES, LEVELS, Figure

__all__ = ["FIGURES", "LEVELS", "Figure", "ReportContext", "build_report", "report_files"]
