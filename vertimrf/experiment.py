"""A self-contained sketch experiment: encode a table as several parties, estimate every
cross-party 2-way marginal with CarEst, and measure the error against the real marginals.

This is a research harness (used by ``benchmarks/bench_carest.py`` and the sketch accuracy
tests): it runs every role in one process, so it reads the real table to score the estimates.
It is not a protocol run, and the FM sketches it measures are not differentially private.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from vertimrf.domain import DomainSpec, EncodedTable
from vertimrf.encoding import TableEncoder
from vertimrf.errors import ConfigError
from vertimrf.party.keys import HashKeys
from vertimrf.party.locenc import locenc
from vertimrf.party.records.ids import record_fingerprints
from vertimrf.privacy import DEFAULT_DELTA, PrivacyLedger, sketch_epsilon
from vertimrf.privacy.mechanisms import discrete_laplace_count
from vertimrf.privacy.samplers import noise_sampler
from vertimrf.privacy.zcdp import epsilon_to_rho
from vertimrf.protocol.sketchset import SketchSet
from vertimrf.server.carest import CarEst


@dataclass
class CrossMarginalResult:
    """Per-pair TVDs of the cross-party 2-way estimates, timings and the privacy ledger."""

    tvd: dict[tuple[str, str], float]
    encode_seconds: list[float]
    carest_seconds: float
    eps_prime: float
    n_hat: float
    ledger: PrivacyLedger
    sketches: list[SketchSet]

    @property
    def mean_tvd(self) -> float:
        return float(np.mean(list(self.tvd.values())))


def marginal_tvd(estimate: np.ndarray, truth: np.ndarray) -> float:
    """Total variation distance between two count tables after normalising each to 1."""
    est = np.clip(estimate, 0, None)
    s = est.sum()
    p = est / s if s > 0 else np.full(est.shape, 1.0 / est.size)
    return 0.5 * float(np.abs(p - truth / truth.sum()).sum())


def cross_marginal_experiment(
    df: pd.DataFrame,
    spec: DomainSpec,
    parties: list[list[str]],
    *,
    epsilon: float,
    delta: float | None = None,
    t: int = 2000,
    sketch_share: float = 0.36,
    count_share: float = 0.04,
    accounting: str = "zcdp",
    gamma: float = 1.0,
    method: str = "containment",
    hash: str | None = None,
    sketch_rho: float | None = None,
    seed: int | None = None,
) -> CrossMarginalResult:
    """Encode ``df`` split by ``parties`` (lists of column names) and score CarEst.

    The table is encoded once and each party takes its columns (timings cover LocEnc only).

    Budget shares are fractions of the zCDP budget rho of (epsilon, delta) under
    ``accounting="zcdp"``; under ``"theorem2"`` the sketch share is a fraction of epsilon fed to
    the paper's formula (the ledger still charges the true zCDP cost). ``sketch_rho``, if
    given, sets the sketches' zCDP cost directly instead of ``sketch_share``.
    """
    if len(parties) < 2:
        raise ConfigError("give at least two parties (lists of column names).")
    n = len(df)
    delta = DEFAULT_DELTA if delta is None else delta
    rng = np.random.default_rng(seed)
    secret = rng.bytes(32) if seed is not None else os.urandom(32)
    ledger = PrivacyLedger(epsilon, delta)
    budget_rho = epsilon_to_rho(epsilon, delta)  # the ledger's budget
    d = sum(len(p) for p in parties)
    if sketch_rho is not None:
        eps_prime = sketch_epsilon(t, d, rho=sketch_rho)
    elif accounting == "zcdp":
        eps_prime = sketch_epsilon(t, d, rho=sketch_share * budget_rho)
    else:
        eps_prime = sketch_epsilon(
            t, d, epsilon=sketch_share * epsilon, delta=delta, accounting=accounting
        )
    keys = HashKeys.from_secret(secret, t)
    fps = record_fingerprints(np.arange(n))
    n_hat = discrete_laplace_count(
        n,
        math.sqrt(2.0 * count_share * budget_rho),
        noise=noise_sampler(rng if seed is not None else None),
        ledger=ledger,
        party="party0",
    )
    dom = spec.domain
    codes_all = TableEncoder(spec).encode(df[list(spec.names)])
    sketches, enc_time = [], []
    for i, cols in enumerate(parties):
        start = time.perf_counter()
        sub = spec.subset(cols)
        sketches.append(
            locenc(
                EncodedTable(codes_all[:, [dom.index(c) for c in cols]], sub.domain),
                fps,
                keys,
                eps_prime=eps_prime,
                rng=rng,
                ledger=ledger,
                gamma=gamma,
                party=f"party{i}",
                hash=hash,
            )
        )
        enc_time.append(time.perf_counter() - start)
    start = time.perf_counter()
    est = CarEst(sketches, n_hat, method=method)
    pairs = [
        (a, b)
        for p, q in itertools.combinations(range(len(parties)), 2)
        for a, b in itertools.product(parties[p], parties[q])
    ]
    estimates = {pair: est.marginal(pair) for pair in pairs}
    carest_seconds = time.perf_counter() - start
    tvd = {}
    for (a, b), table in estimates.items():
        i, j = dom.index(a), dom.index(b)
        truth = np.zeros((dom.sizes[i], dom.sizes[j]))
        np.add.at(truth, (codes_all[:, i], codes_all[:, j]), 1)
        tvd[(a, b)] = marginal_tvd(table, truth)
    return CrossMarginalResult(tvd, enc_time, carest_seconds, eps_prime, n_hat, ledger, sketches)
