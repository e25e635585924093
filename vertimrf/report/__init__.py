"""The report: the paper's experiments and ours as figures, their data and one
markdown page; design notes in docs/design/report.md."""

from vertimrf.report import figures  # noqa: F401  (registers the figures)
from vertimrf.report.build import build_report, report_files
from vertimrf.report.context import ReportContext
from vertimrf.report.registry import FIGURES, LEVELS, Figure

__all__ = ["FIGURES", "LEVELS", "Figure", "ReportContext", "build_report", "report_files"]
