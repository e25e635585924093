"""vertimrf behind a scikit-learn-style estimator: ``fit(df)``, then ``sample(n)``.

It uses only the public ``vertimrf`` API. Without ``parties`` the estimator fits the
centralized synthesizer (``vertimrf.PrivMRF``); with ``parties`` (each party's columns) it
runs the vertical protocol (``vertimrf.fit_vertical``). Either way the fitted model then
samples any number of rows at no further privacy cost. Run it with
``python docs/examples/estimator.py``: it fits both on a slice of the bundled Adult data
and prints each sample's shape and its 2-way TVD to the data.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

import vertimrf


class DPSynthesizer:
    """A differentially private synthesizer with the estimator interface.

    Args:
        epsilon, delta: the privacy budget one ``fit`` spends.
        spec: the public domain (a ``vertimrf.DomainSpec``); never read off the data.
        parties: each party's column names for the vertical protocol; None fits the
            centralized synthesizer on the whole table.
        max_rows: the vertical protocol's public bound on the record count.
        seed: fixes the noise and sampling (experiments only: not for release).
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-6,
        *,
        spec: vertimrf.DomainSpec,
        parties: list[list[str]] | None = None,
        max_rows: int = 65536,
        seed: int | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.spec = spec
        self.parties = parties
        self.max_rows = max_rows
        self.seed = seed

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor arguments, as scikit-learn's ``clone`` expects."""
        names = ("epsilon", "delta", "spec", "parties", "max_rows", "seed")
        return {name: getattr(self, name) for name in names}

    def set_params(self, **params: Any) -> DPSynthesizer:
        """Set constructor arguments; returns self."""
        for name, value in params.items():
            if name not in self.get_params():
                raise ValueError(f"unknown parameter {name!r}")
            setattr(self, name, value)
        return self

    def fit(self, df: pd.DataFrame, y: None = None) -> DPSynthesizer:
        """Fit on ``df`` (spending the budget once); returns self."""
        self.model_: vertimrf.PrivMRF | vertimrf.VerticalModel
        if self.parties is None:
            fit = vertimrf.PrivMRF(self.epsilon, self.delta, seed=self.seed, progress=False)
            self.model_ = fit.fit(df, self.spec)
        else:
            self.model_ = vertimrf.fit_vertical(
                df,
                self.spec,
                self.parties,
                epsilon=self.epsilon,
                delta=self.delta,
                max_rows=self.max_rows,
                seed=self.seed,
            )
        return self

    def sample(self, n: int, seed: int | None = None) -> pd.DataFrame:
        """``n`` synthetic rows from the fitted model (no privacy cost)."""
        return self.model_.sample(n, seed=seed)


def main() -> dict[str, pd.DataFrame]:
    """Fit the centralized and the vertical estimator on 2,000 rows and 6 columns of Adult;
    print and return a 1,000-row sample of each."""
    df, spec = vertimrf.load_dataset("adult")
    names = list(spec.names)[:6]
    df, spec = df[names].iloc[:2000], spec.subset(names)
    estimators = {
        "centralized": DPSynthesizer(1.0, 1e-6, spec=spec, seed=0),
        "vertical": DPSynthesizer(
            1.0, 1e-6, spec=spec, parties=[names[:3], names[3:]], max_rows=4096, seed=0
        ),
    }
    samples = {}
    for name, estimator in estimators.items():
        rows = estimator.fit(df).sample(1000, seed=1)
        tvd = vertimrf.metrics.tvd(df, rows, spec, ways=2)
        print(f"{name}: {rows.shape[0]} rows x {rows.shape[1]} columns, 2-way TVD {tvd:.3f}")
        samples[name] = rows
    return samples


if __name__ == "__main__":
    main()
