"""Utility metrics for synthetic tables: l-way marginal TVD, a workload's TVD and SVM
misclassification.

Both follow the evaluation protocol of the PrivMRF and VertiMRF papers with two fixes:
the TVD evaluates exactly ``n_marginals`` distinct attribute subsets (the reference drew
subsets with replacement and silently evaluated fewer), and the SVM trains the synthesizer
on the training folds only (the reference let the test fold leak into it).

``spec`` is a :class:`~vertimrf.domain.Domain` (frames are already integer-coded with columns
named by ``Domain.names``), a :class:`~vertimrf.domain.DomainSpec`, or an encoder-like object
with ``encode(df) -> (n, d)`` integer codes and a ``.domain`` (a ``TableEncoder``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from vertimrf.codec import SpecLike, as_table, resolve_codec
from vertimrf.domain import EncodedTable
from vertimrf.errors import ConfigError, DomainError
from vertimrf.workload import Workload

# Above this many candidate subsets they are drawn by rejection instead of being enumerated.
_ENUMERATE_LIMIT = 100_000
# Subset histograms with more cells than this are compared on their supports only.
_DENSE_CELLS = 1 << 22


def sample_marginal_subsets(
    d: int, ways: int, n_marginals: int, seed: int | None = 0
) -> list[tuple[int, ...]]:
    """``n_marginals`` distinct sorted attribute subsets of size ``ways``, uniform over all
    C(d, ways) subsets (all of them, in lexicographic order, if there are no more than
    ``n_marginals``)."""
    if not 1 <= ways <= d:
        raise ConfigError(f"ways must be in 1..d={d}; got {ways}.")
    if n_marginals < 1:
        raise ConfigError(f"n_marginals must be >= 1; got {n_marginals}.")
    total = math.comb(d, ways)
    if total <= n_marginals:
        return list(itertools.combinations(range(d), ways))
    rng = np.random.default_rng(seed)
    if total <= _ENUMERATE_LIMIT:
        every = list(itertools.combinations(range(d), ways))
        return [every[i] for i in rng.choice(total, size=n_marginals, replace=False)]
    # Sequential rejection of repeats draws a uniform sample without replacement.
    chosen: dict[tuple[int, ...], None] = {}
    while len(chosen) < n_marginals:
        chosen.setdefault(tuple(sorted(rng.choice(d, size=ways, replace=False).tolist())))
    return list(chosen)


def _subset_tvd(a: np.ndarray, b: np.ndarray, shape: tuple[int, ...]) -> float:
    """TVD between the normalised histograms of two (rows, k) code arrays over ``shape``."""
    cells = math.prod(shape)
    if cells <= _DENSE_CELLS:
        pa = np.bincount(np.ravel_multi_index(a.T, shape), minlength=cells) / a.shape[0]
        pb = np.bincount(np.ravel_multi_index(b.T, shape), minlength=cells) / b.shape[0]
        return 0.5 * float(np.abs(pa - pb).sum())
    keys, inverse = np.unique(np.concatenate([a, b]), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    pa = np.bincount(inverse[: a.shape[0]], minlength=keys.shape[0]) / a.shape[0]
    pb = np.bincount(inverse[a.shape[0] :], minlength=keys.shape[0]) / b.shape[0]
    return 0.5 * float(np.abs(pa - pb).sum())


def tvd(
    real: pd.DataFrame | EncodedTable,
    synth: pd.DataFrame | EncodedTable,
    spec: SpecLike | None = None,
    ways: int = 3,
    n_marginals: int = 300,
    seed: int | None = 0,
) -> float:
    """Mean total variation distance between the ``ways``-way marginals of two tables.

    The subsets come from :func:`sample_marginal_subsets`; each marginal is a normalised
    full-domain histogram, so tables of different sizes compare as distributions. Either
    table may be an :class:`EncodedTable` (then ``spec`` may be None).
    """
    real_table, codec = as_table(real, spec)
    domain = codec.domain
    a, b = real_table.codes, as_table(synth, domain if spec is None else spec)[0].codes
    if a.shape[0] == 0 or b.shape[0] == 0:
        raise DomainError("tvd needs at least one row in both tables.")
    subsets = sample_marginal_subsets(len(domain), ways, n_marginals, seed)
    values = [_subset_tvd(a[:, s], b[:, s], domain.shape(s)) for s in subsets]
    return float(np.mean(values))


def column_tvd(
    real: pd.DataFrame | EncodedTable,
    synth: pd.DataFrame | EncodedTable,
    spec: SpecLike | None = None,
) -> dict[str, float]:
    """Each column's 1-way TVD (an empty cell counts as a value), by column name in the
    spec's order; with up to 300 columns their mean is ``tvd(..., ways=1)``."""
    real_table, codec = as_table(real, spec)
    domain = codec.domain
    a, b = real_table.codes, as_table(synth, domain if spec is None else spec)[0].codes
    if a.shape[0] == 0 or b.shape[0] == 0:
        raise DomainError("column_tvd needs at least one row in both tables.")
    return {
        name: _subset_tvd(a[:, [i]], b[:, [i]], domain.shape([i]))
        for i, name in enumerate(domain.names)
    }


def workload_tvd(
    real: pd.DataFrame | EncodedTable,
    synth: pd.DataFrame | EncodedTable,
    spec: SpecLike | None,
    workload: Sequence[object],
) -> float:
    """The weighted mean TVD over a workload's marginals (as
    :meth:`vertimrf.workload.Workload.of` reads it: column names or indices, each alone,
    weight 1, or with its weight): the error a workload-aware synthesizer minimises."""
    real_table, codec = as_table(real, spec)
    domain = codec.domain
    a, b = real_table.codes, as_table(synth, domain if spec is None else spec)[0].codes
    if a.shape[0] == 0 or b.shape[0] == 0:
        raise DomainError("workload_tvd needs at least one row in both tables.")
    w = Workload.of(domain, workload)
    values = [_subset_tvd(a[:, list(m)], b[:, list(m)], domain.shape(m)) for m in w.marginals]
    return float(np.dot(values, w.weights) / math.fsum(w.weights))


@dataclass(frozen=True)
class SVMResult:
    """Result of :func:`svm_misclassification`.

    ``mean`` is the mean misclassification rate over folds, ``per_fold`` the rate of each
    fold, and ``test_index`` the row positions (into ``real``) of each held-out fold.
    """

    mean: float
    per_fold: tuple[float, ...]
    test_index: tuple[np.ndarray, ...]


def svm_misclassification(
    real: pd.DataFrame,
    synthesizer_factory: Callable[[pd.DataFrame], pd.DataFrame],
    spec: SpecLike,
    label: str | int,
    folds: int = 5,
    seed: int | None = 0,
) -> SVMResult:
    """Misclassification rate of an RBF SVM trained on synthetic data, tested on real data.

    The rows of ``real`` are shuffled with ``default_rng(seed)`` and cut into ``folds`` folds.
    For each fold, ``synthesizer_factory`` receives the other folds only (rows keep their
    index) and returns a synthetic frame; ``StandardScaler`` + ``SVC(kernel="rbf",
    gamma="auto")`` is fitted on it to predict ``label`` from all other attributes'
    integer codes, and scored on the held-out real fold.
    """
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    codec = resolve_codec(spec)
    domain, encode = codec.domain, codec.encode
    target = label if isinstance(label, int) else domain.index(label)
    if not 0 <= target < len(domain):
        raise ConfigError(f"label index {target} is outside 0..{len(domain) - 1}.")
    n = len(real)
    if not 2 <= folds <= n:
        raise ConfigError(f"folds must be in 2..{n} (the number of rows); got {folds}.")
    real_codes = encode(real)
    features = [j for j in range(len(domain)) if j != target]
    test_sets = np.array_split(np.random.default_rng(seed).permutation(n), folds)
    rates = []
    for test in test_sets:
        train = np.setdiff1d(np.arange(n), test)
        synth_codes = encode(synthesizer_factory(real.iloc[train]))
        if synth_codes.shape[0] == 0:
            raise ConfigError("synthesizer_factory returned an empty frame.")
        x_syn, y_syn = synth_codes[:, features], synth_codes[:, target]
        x_test, y_test = real_codes[test][:, features], real_codes[test][:, target]
        if np.unique(y_syn).size == 1:
            # SVC cannot fit one class; the only consistent classifier predicts it everywhere.
            pred = np.full_like(y_test, y_syn[0])
        else:
            model = make_pipeline(StandardScaler(), SVC(kernel="rbf", gamma="auto"))
            pred = model.fit(x_syn, y_syn).predict(x_test)
        rates.append(float(np.mean(pred != y_test)))
    return SVMResult(float(np.mean(rates)), tuple(rates), tuple(test_sets))
