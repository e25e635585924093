"""Utility metrics for synthetic tables: TVDs, column and pair scores, SVM
misclassification; design notes in docs/design/core.md."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from vertimrf.codec import SpecLike, TableLike, as_table, resolve_codec
from vertimrf.domain import DATETIME, NUMERIC, ColumnSpec, Domain, DomainSpec, empty_cells
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


def _subset_tvd(a: np.ndarray, b: np.ndarray, domain: Domain, attrs: Sequence[int]) -> float:
    """TVD between the normalised histograms of two code arrays' columns ``attrs``."""
    attrs = list(attrs)
    a, b, shape = a[:, attrs], b[:, attrs], domain.shape(attrs)
    cells = math.prod(shape)
    if cells <= _DENSE_CELLS:
        ia, ib = np.ravel_multi_index(a.T, shape), np.ravel_multi_index(b.T, shape)
    else:
        keys, inverse = np.unique(np.concatenate([a, b]), axis=0, return_inverse=True)
        ia, ib, cells = inverse[: a.shape[0]], inverse[a.shape[0] :], keys.shape[0]
    pa = np.bincount(ia.reshape(-1), minlength=cells) / a.shape[0]
    pb = np.bincount(ib.reshape(-1), minlength=cells) / b.shape[0]
    return 0.5 * float(np.abs(pa - pb).sum())


def _both_codes(
    real: TableLike, synth: TableLike, spec: SpecLike | None, what: str
) -> tuple[np.ndarray, np.ndarray, Domain]:
    """The codes of both tables over one domain (``spec``'s, or ``real``'s when it is an
    EncodedTable and ``spec`` is None); DomainError naming ``what`` if either has no row."""
    real_table, codec = as_table(real, spec)
    domain = codec.domain
    a, b = real_table.codes, as_table(synth, domain if spec is None else spec)[0].codes
    if a.shape[0] == 0 or b.shape[0] == 0:
        raise DomainError(f"{what} needs at least one row in both tables.")
    return a, b, domain


def tvd(
    real: TableLike,
    synth: TableLike,
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
    a, b, domain = _both_codes(real, synth, spec, "tvd")
    subsets = sample_marginal_subsets(len(domain), ways, n_marginals, seed)
    values = [_subset_tvd(a, b, domain, s) for s in subsets]
    return float(np.mean(values))


def column_tvd(real: TableLike, synth: TableLike, spec: SpecLike | None = None) -> dict[str, float]:
    """Each column's 1-way TVD (an empty cell counts as a value), by column name in the
    spec's order; with up to 300 columns their mean is ``tvd(..., ways=1)``."""
    a, b, domain = _both_codes(real, synth, spec, "column_tvd")
    return {name: _subset_tvd(a, b, domain, [i]) for i, name in enumerate(domain.names)}


@dataclass(frozen=True)
class ColumnDistance:
    """One column's distance between a real and a synthetic table.

    ``kind`` is the column's type in the spec ("categorical", "numeric", "datetime"; "codes"
    for a :class:`~vertimrf.domain.Domain`), ``metric`` is ``"ks"`` (the Kolmogorov-Smirnov
    distance of the values, :func:`ks_distance`) or ``"tvd"`` (the 1-way TVD of the codes),
    and ``distance`` is in [0, 1]; ``tvd1`` is the column's 1-way TVD whatever the metric.
    """

    column: str
    kind: str
    metric: str
    distance: float
    tvd1: float


def ks_distance(a: np.ndarray | Sequence[float], b: np.ndarray | Sequence[float]) -> float:
    """The two-sample Kolmogorov-Smirnov distance: the largest gap between the empirical
    CDFs of ``a`` and ``b``. An empty cell (NaN) counts as a value above every number, so a
    difference in the share of empty cells counts too."""
    x = np.sort(np.asarray(a, dtype=np.float64))  # NaN sorts last
    y = np.sort(np.asarray(b, dtype=np.float64))
    if x.size == 0 or y.size == 0:
        raise DomainError("ks_distance needs at least one value in both samples.")
    at = np.concatenate([x, y])
    fx = np.searchsorted(x, at, side="right") / x.size
    fy = np.searchsorted(y, at, side="right") / y.size
    return float(np.max(np.abs(fx - fy)))


def column_distances(
    real: TableLike, synth: TableLike, spec: SpecLike | None = None
) -> dict[str, ColumnDistance]:
    """Each column's distance, by name in the spec's order: the KS distance of the values
    (:func:`ks_distance`) for a numeric column of a DomainSpec when both frames hold numbers
    in it, or a datetime column's (its times as seconds); else the column's 1-way TVD
    (:func:`column_tvd`)."""
    columns = _spec_columns(spec)
    out = {}
    for name, value in column_tvd(real, synth, spec).items():
        col = columns.get(name)
        kind = col.kind if col is not None else "codes"
        both = _both_values(real, synth, col) if col is not None else None
        if both is not None:
            out[name] = ColumnDistance(name, kind, "ks", ks_distance(*both), value)
        else:
            out[name] = ColumnDistance(name, kind, "tvd", value, value)
    return out


def pair_tvd(
    real: TableLike, synth: TableLike, spec: SpecLike | None = None
) -> dict[tuple[str, str], float]:
    """The 2-way TVD of every pair of columns (an empty cell counts as a value), keyed by
    the pair's names in the spec's order."""
    a, b, domain = _both_codes(real, synth, spec, "pair_tvd")
    names = domain.names
    return {
        (names[i], names[j]): _subset_tvd(a, b, domain, [i, j])
        for i, j in itertools.combinations(range(len(domain)), 2)
    }


@dataclass(frozen=True)
class PairTrend:
    """How two columns move together in each table: ``metric`` is ``"correlation"``
    (Pearson's, for two columns of numbers or times, as :func:`column_distances` compares
    them) or ``"cramers_v"`` (of their codes, :func:`cramers_v`)."""

    metric: str
    real: float
    synth: float

    @property
    def difference(self) -> float:
        """``|real - synth|``: up to 2 for a correlation, up to 1 for Cramér's V."""
        return abs(self.real - self.synth)


def cramers_v(x: np.ndarray, y: np.ndarray) -> float:
    """Cramér's V of two code arrays: sqrt(chi2 / (n (k - 1))), with k the smaller number
    of distinct values of either; 0 when either takes one value."""
    _, xi = np.unique(np.asarray(x), return_inverse=True)
    _, yi = np.unique(np.asarray(y), return_inverse=True)
    r, c = int(xi.max(initial=-1)) + 1, int(yi.max(initial=-1)) + 1
    if min(r, c) < 2:
        return 0.0
    n = xi.size
    observed = np.bincount(xi * c + yi, minlength=r * c).reshape(r, c).astype(np.float64)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / n
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    return math.sqrt(chi2 / (n * (min(r, c) - 1)))


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's correlation over the rows where both values are present; 0 when either is
    constant there or fewer than two rows are."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    both = ~(np.isnan(x) | np.isnan(y))
    if both.sum() < 2:
        return 0.0
    x, y = x[both] - x[both].mean(), y[both] - y[both].mean()
    scale = math.sqrt(float(x @ x) * float(y @ y))
    return float(x @ y) / scale if scale > 0 else 0.0


def pair_trends(
    real: TableLike, synth: TableLike, spec: SpecLike | None = None
) -> dict[tuple[str, str], PairTrend]:
    """Every pair's trend in both tables (:class:`PairTrend`), keyed as :func:`pair_tvd`."""
    a, b, domain = _both_codes(real, synth, spec, "pair_trends")
    columns = _spec_columns(spec)
    both = {n: _both_values(real, synth, columns[n]) for n in domain.names if n in columns}
    values = {n: xy for n, xy in both.items() if xy is not None}
    out = {}
    for i, j in itertools.combinations(range(len(domain)), 2):
        u, v = domain.names[i], domain.names[j]
        if u in values and v in values:
            (ur, us), (vr, vs) = values[u], values[v]
            trend = PairTrend("correlation", pearson(ur, vr), pearson(us, vs))
        else:
            trend = PairTrend("cramers_v", cramers_v(a[:, i], a[:, j]), cramers_v(b[:, i], b[:, j]))
        out[(u, v)] = trend
    return out


def _spec_columns(spec: object) -> dict[str, ColumnSpec]:
    """The column specs of a DomainSpec (or of a TableEncoder's); none for a Domain."""
    spec = getattr(spec, "spec", spec)
    return {c.name: c for c in spec.columns} if isinstance(spec, DomainSpec) else {}


def _both_values(
    real: TableLike, synth: TableLike, col: ColumnSpec
) -> tuple[np.ndarray, np.ndarray] | None:
    """Column ``col``'s values in both tables (:func:`column_values`), or None unless both
    have them."""
    x, y = column_values(real, col), column_values(synth, col)
    return None if x is None or y is None else (x, y)


def column_values(frame: TableLike, col: ColumnSpec) -> np.ndarray | None:
    """Column ``col`` of a frame as float64, NaN where empty, as the column distances compare
    it: a numeric column's numbers, a datetime column's times as seconds since 1970; None for
    a categorical column, an EncodedTable, or a numeric column of text."""
    if not isinstance(frame, pd.DataFrame) or col.kind not in (NUMERIC, DATETIME):
        return None
    s = frame.set_axis([str(c) for c in frame.columns], axis=1)[col.name]
    if col.kind == DATETIME and col.time is not None:
        return col.time.read(s, empty_cells(s))[0]
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return None
    return s.to_numpy(dtype=np.float64, na_value=np.nan)


def workload_tvd(
    real: TableLike, synth: TableLike, spec: SpecLike | None, workload: Sequence[object]
) -> float:
    """The weighted mean TVD over a workload's marginals (as
    :meth:`vertimrf.workload.Workload.of` reads it: column names or indices, each alone,
    weight 1, or with its weight): the error a workload-aware synthesizer minimises."""
    a, b, domain = _both_codes(real, synth, spec, "workload_tvd")
    w = Workload.of(domain, workload)
    values = [_subset_tvd(a, b, domain, m) for m in w.marginals]
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
