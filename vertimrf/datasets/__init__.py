"""Bundled datasets of the paper (Adult, NLTCS), with their public domain specs.

The files are gzip copies of the project's ``shared/data`` CSVs (integer-coded Adult and
NLTCS, and Adult with its real column names and text labels as ``adult_labeled``).
"""

from __future__ import annotations

import json
from importlib import resources

import pandas as pd

from vertimrf.domain import DomainSpec
from vertimrf.errors import ConfigError

DATASETS = ("adult", "nltcs", "adult_labeled")


def load_dataset(name: str) -> tuple[pd.DataFrame, DomainSpec]:
    """Return ``(DataFrame, DomainSpec)`` for a bundled dataset: adult, nltcs or adult_labeled."""
    if name not in DATASETS:
        raise ConfigError(f"unknown dataset {name!r}; bundled datasets are {list(DATASETS)}.")
    root = resources.files(__name__)
    spec = DomainSpec.from_dict(json.loads((root / f"{name}.domain.json").read_text("utf-8")))
    with (root / f"{name}.csv.gz").open("rb") as fh:
        df = pd.read_csv(fh, compression="gzip")
    df.columns = [str(c) for c in df.columns]
    return df, spec
