"""The report's figures; importing this package registers them, in the report's order."""

# isort: off
from vertimrf.report.figures import tvd, audit, svm, parties, theta, splits, cost, scaling  # noqa: F401
# isort: on
