"""Exact checks of the TVD and SVM metrics against brute force and hand-computed cases."""

import itertools
import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from vertimrf.domain import ColumnSpec, Domain, DomainSpec
from vertimrf.encoding import TableEncoder
from vertimrf.errors import ConfigError, DomainError
from vertimrf.metrics import (
    SVMResult,
    sample_marginal_subsets,
    svm_misclassification,
    tvd,
    workload_tvd,
)


def _random_frame(rng: np.random.Generator, domain: Domain, n: int) -> pd.DataFrame:
    pairs = zip(domain.names, domain.sizes, strict=True)
    return pd.DataFrame({name: rng.integers(0, size, n) for name, size in pairs})


def _brute_tvd(real: pd.DataFrame, synth: pd.DataFrame, cols: list[str]) -> float:
    """Per-subset TVD with Python counters over the rows."""
    p = Counter(map(tuple, real[cols].itertuples(index=False)))
    q = Counter(map(tuple, synth[cols].itertuples(index=False)))
    return 0.5 * sum(abs(p[k] / len(real) - q[k] / len(synth)) for k in set(p) | set(q))


@pytest.mark.parametrize("ways", [1, 2, 3])
def test_tvd_matches_brute_force(ways: int) -> None:
    rng = np.random.default_rng(1)
    dom = Domain(("a", "b", "c", "d", "e"), (2, 3, 4, 2, 5))
    real, synth = _random_frame(rng, dom, 200), _random_frame(rng, dom, 137)
    # C(5, ways) <= 300, so every subset is evaluated.
    expected = np.mean(
        [_brute_tvd(real, synth, list(s)) for s in itertools.combinations(dom.names, ways)]
    )
    assert tvd(real, synth, dom, ways=ways) == pytest.approx(expected, abs=1e-12)


def test_tvd_of_sampled_subsets_matches_brute_force() -> None:
    rng = np.random.default_rng(2)
    dom = Domain.from_sizes([3] * 12)
    real, synth = _random_frame(rng, dom, 150), _random_frame(rng, dom, 90)
    subsets = sample_marginal_subsets(12, 3, 40, seed=7)
    expected = np.mean([_brute_tvd(real, synth, [dom.names[i] for i in s]) for s in subsets])
    got = tvd(real, synth, dom, ways=3, n_marginals=40, seed=7)
    assert got == pytest.approx(expected, abs=1e-12)


def test_tvd_sparse_branch_matches_brute_force() -> None:
    # 300^3 = 2.7e7 cells exceeds the dense limit, so the support-only branch runs.
    rng = np.random.default_rng(3)
    dom = Domain(("x", "y", "z"), (300, 300, 300))
    real, synth = _random_frame(rng, dom, 400), _random_frame(rng, dom, 300)
    synth.iloc[:100] = real.iloc[:100].to_numpy()
    expected = _brute_tvd(real, synth, ["x", "y", "z"])
    assert tvd(real, synth, dom, ways=3) == pytest.approx(expected, abs=1e-12)


def test_tvd_hand_computed_cases() -> None:
    dom = Domain(("a", "b", "c"), (2, 2, 2))
    rng = np.random.default_rng(4)
    real = _random_frame(rng, dom, 50)
    assert tvd(real, real.copy(), dom, ways=2) == 0.0
    # Same distribution, different sizes: two copies of the table.
    assert tvd(real, pd.concat([real, real]), dom, ways=3) == pytest.approx(0.0, abs=1e-15)
    zeros = pd.DataFrame(np.zeros((10, 3), dtype=np.int64), columns=dom.names)
    ones = pd.DataFrame(np.ones((7, 3), dtype=np.int64), columns=dom.names)
    assert tvd(zeros, ones, dom, ways=2) == 1.0
    # One 1-way marginal: p = (1, 0), q = (1/2, 1/2) -> TVD 1/2; the others are identical.
    half = zeros.copy()
    half.loc[:4, "a"] = 1
    assert tvd(zeros, half, dom, ways=1) == pytest.approx(0.5 / 3)


def test_subset_sampling_rule() -> None:
    subsets = sample_marginal_subsets(20, 3, 300, seed=0)
    assert len(subsets) == 300
    assert len(set(subsets)) == 300
    assert all(len(s) == 3 and list(s) == sorted(set(s)) and s[-1] < 20 for s in subsets)
    assert subsets == sample_marginal_subsets(20, 3, 300, seed=0)
    assert subsets != sample_marginal_subsets(20, 3, 300, seed=1)
    # C(6, 3) = 20 <= 300: every subset, each once.
    assert sample_marginal_subsets(6, 3, 300) == list(itertools.combinations(range(6), 3))


def test_subset_sampling_rejection_branch() -> None:
    # C(60, 4) = 487,635 subsets are too many to enumerate.
    subsets = sample_marginal_subsets(60, 4, 500, seed=5)
    assert len(set(subsets)) == 500 and all(len(set(s)) == 4 for s in subsets)
    assert subsets == sample_marginal_subsets(60, 4, 500, seed=5)
    # Uniform subsets include each attribute with probability 4/60: 2000 slots, mean 33.3,
    # binomial sd 5.6; 6 sd (bound 33.6) holds for this fixed seed and any correct sampler.
    counts = np.bincount(np.concatenate(subsets), minlength=60)
    assert np.all(np.abs(counts - 500 * 4 / 60) < 6 * math.sqrt(2000 * (4 / 60) * (56 / 60)))


def test_subset_sampling_is_uniform() -> None:
    # 120 subsets, 60 drawn: each is included with probability 1/2. Over 400 seeds the count
    # is Binomial(400, 1/2): mean 200, sd 10. A 6-sd band fails a uniform sampler with
    # probability < 1e-6 per subset; the seeds are fixed so the test is deterministic.
    counts = Counter(s for seed in range(400) for s in sample_marginal_subsets(10, 3, 60, seed))
    assert len(counts) == 120
    assert all(abs(c - 200) < 60 for c in counts.values())


def test_encoder_spec_is_accepted() -> None:
    dom = Domain(("color", "size"), (3, 2))

    class Encoder:
        domain = dom
        colors = {"red": 0, "green": 1, "blue": 2}

        def encode(self, df: pd.DataFrame) -> np.ndarray:
            return np.column_stack([df["color"].map(self.colors), df["size"]])

    real = pd.DataFrame({"color": ["red", "red", "blue", "green"], "size": [0, 1, 1, 1]})
    synth = pd.DataFrame({"color": ["red", "blue"], "size": [0, 1]})
    # 1-way: color p=(1/2,1/4,1/4) q=(1/2,0,1/2) -> 1/4; size p=(1/4,3/4) q=(1/2,1/2) -> 1/4.
    assert tvd(real, synth, Encoder(), ways=1) == pytest.approx(0.25)


def test_input_validation() -> None:
    dom = Domain(("a", "b"), (2, 2))
    good = pd.DataFrame({"a": [0, 1], "b": [1, 0]})
    with pytest.raises(DomainError, match="outside"):
        tvd(good, pd.DataFrame({"a": [0, 2], "b": [1, 0]}), dom, ways=1)
    with pytest.raises(DomainError, match="lacks"):
        tvd(good, pd.DataFrame({"a": [0, 1]}), dom, ways=1)
    with pytest.raises(DomainError, match="integer"):
        tvd(good, pd.DataFrame({"a": ["x", "y"], "b": [1, 0]}), dom, ways=1)
    with pytest.raises(ConfigError):
        tvd(good, good, dom, ways=3)
    with pytest.raises(ConfigError, match="spec"):
        tvd(good, good, object(), ways=1)


def _separable(n: int) -> tuple[pd.DataFrame, Domain]:
    dom = Domain(("x", "noise", "label"), (10, 3, 2))
    rng = np.random.default_rng(6)
    lab = rng.integers(0, 2, n)
    frame = pd.DataFrame({"x": np.where(lab == 1, 9, 0), "noise": rng.integers(0, 3, n)})
    frame["label"] = lab
    return frame, dom


def test_svm_folds_never_leak() -> None:
    real, dom = _separable(103)
    seen: list[np.ndarray] = []

    def factory(train: pd.DataFrame) -> pd.DataFrame:
        seen.append(train.index.to_numpy())
        return train

    result = svm_misclassification(real, factory, dom, "label", folds=5, seed=3)
    assert isinstance(result, SVMResult) and len(seen) == 5 == len(result.per_fold)
    all_test = np.concatenate(result.test_index)
    assert np.array_equal(np.sort(all_test), np.arange(103))  # folds partition the rows
    for train_rows, test_rows in zip(seen, result.test_index, strict=True):
        assert np.intersect1d(train_rows, test_rows).size == 0
        assert np.array_equal(np.sort(np.concatenate([train_rows, test_rows])), np.arange(103))
    # The identity "synthesizer" on separable data: label = (x == 9), so no errors.
    assert result.mean == 0.0


def test_svm_exact_rate_with_one_class_synthesizer() -> None:
    real, dom = _separable(100)

    def all_zero(train: pd.DataFrame) -> pd.DataFrame:
        out = train.copy()
        out["label"] = 0
        return out

    result = svm_misclassification(real, all_zero, dom, "label", folds=4, seed=0)
    labels = real["label"].to_numpy()
    expected = [float(np.mean(labels[t] != 0)) for t in result.test_index]
    assert result.per_fold == pytest.approx(expected, abs=0)
    assert result.mean == pytest.approx(np.mean(expected))
    by_index = svm_misclassification(real, all_zero, dom, 2, folds=4, seed=0)
    assert by_index.per_fold == result.per_fold


def test_svm_validation() -> None:
    real, dom = _separable(10)
    with pytest.raises(ConfigError, match="folds"):
        svm_misclassification(real, lambda t: t, dom, "label", folds=1)
    with pytest.raises(DomainError, match="Unknown attribute"):
        svm_misclassification(real, lambda t: t, dom, "nope")


def test_domain_spec_is_accepted() -> None:
    spec = DomainSpec(
        [
            ColumnSpec("color", "categorical", ("red", "green", "blue")),
            ColumnSpec("size", "categorical", (0, 1)),
        ]
    )
    real = pd.DataFrame({"color": ["red", "red", "blue", "green"], "size": [0, 1, 1, 1]})
    synth = pd.DataFrame({"color": ["red", "blue"], "size": [0, 1]})
    # Same tables as test_encoder_spec_is_accepted: both 1-way marginals are 1/4 apart.
    assert tvd(real, synth, spec, ways=1) == pytest.approx(0.25)
    assert tvd(real, synth, TableEncoder(spec), ways=2) == pytest.approx(
        _brute_tvd(real, synth, ["color", "size"])
    )


def test_tvd_counts_missing_as_a_value() -> None:
    """Columns declared ``missing``: an empty cell is one more value of its column in every
    marginal, so the TVD equals brute force over the tables with empty cells written as a
    value of their own, and a table that moves rows from a value to empty is farther off."""
    spec = DomainSpec(
        [
            ColumnSpec("color", "categorical", ("red", "green"), missing=True),
            ColumnSpec("age", "numeric", None, 0, 100, 2, missing=True),
            ColumnSpec("size", "categorical", (0, 1)),
        ]
    )
    rng = np.random.default_rng(4)
    tables = []
    for n in (60, 45):
        frame = pd.DataFrame(
            {
                "color": rng.choice(np.array(["red", "green", None], dtype=object), n),
                "age": np.where(rng.random(n) < 0.3, np.nan, rng.uniform(0, 100, n)),
                "size": rng.integers(0, 2, n),
            }
        )
        tables.append(frame)
    real, synth = tables
    # Brute force: empty as the word "empty", ages as their bin (0 below 50, 1 from 50).
    words = [
        t.assign(
            color=t.color.fillna("empty"),
            age=np.where(t.age.isna(), "empty", (t.age >= 50).astype(int).astype(str)),
        )
        for t in tables
    ]
    for ways in (1, 2, 3):
        expected = np.mean(
            [_brute_tvd(*words, list(s)) for s in itertools.combinations(spec.names, ways)]
        )
        assert tvd(real, synth, spec, ways=ways) == pytest.approx(expected, abs=1e-12)
    # Only the color of one row differs: "red" in the real table, empty in the other.
    moved = real.copy()
    row = int(np.flatnonzero(real.color.eq("red").to_numpy())[0])
    moved.loc[row, "color"] = None
    assert tvd(real, moved, spec, ways=1) == pytest.approx((1 / 60) / 3, abs=1e-12)


def test_workload_tvd_is_the_weighted_mean_of_brute_force_tvds() -> None:
    rng = np.random.default_rng(5)
    dom = Domain(("a", "b", "c", "d", "e"), (2, 3, 4, 2, 5))
    real, synth = _random_frame(rng, dom, 200), _random_frame(rng, dom, 137)
    workload = [["a", "c", "e"], (("b", "d"), 3.0), ["e"]]
    each = [_brute_tvd(real, synth, ["a", "c", "e"]), _brute_tvd(real, synth, ["b", "d"]),
            _brute_tvd(real, synth, ["e"])]  # fmt: skip
    expected = (each[0] + 3.0 * each[1] + each[2]) / 5.0
    assert workload_tvd(real, synth, dom, workload) == pytest.approx(expected, abs=1e-12)
    assert workload_tvd(real, real, dom, workload) == 0.0
    with pytest.raises(ConfigError, match="'zz'"):
        workload_tvd(real, synth, dom, [["a", "zz"]])
    with pytest.raises(DomainError, match="at least one row"):
        workload_tvd(real, synth.iloc[:0], dom, workload)
