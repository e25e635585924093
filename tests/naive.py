"""Plain numpy and Python references the kernels and the engine are checked against:
brute-force joint tables and plain versions of each kernel.

These are the ground truth for the tests. The brute force enumerates the full joint (refused
above ``MAX_BRUTE_CELLS``). The numpy junction-tree calibration, which the benchmarks use too,
is :class:`vertimrf.mrf.reference.NumpyCalibrator`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vertimrf.domain import Domain
from vertimrf.errors import ConfigError
from vertimrf.mrf.cliques import Clique, expand_to
from vertimrf.mrf.inference import logsumexp
from vertimrf.server.carest import _power_table, harmonic_constant

MAX_BRUTE_CELLS = 200_000


def project_table(
    table: np.ndarray, clique: Clique, subset: Sequence[int], use_log: bool
) -> np.ndarray:
    """Sum (or log-sum-exp) a clique table onto the sorted ``subset``; flat C-order result."""
    sub = set(subset)
    axes = tuple(i for i, a in enumerate(clique) if a not in sub)
    out = logsumexp(table, axes) if use_log else table.sum(axis=axes)
    return np.asarray(out).ravel()


def expand_add_table(
    table: np.ndarray, clique: Clique, subset: Sequence[int], vec: np.ndarray, scale: float
) -> None:
    """table += scale * vec broadcast over the clique axes outside the sorted ``subset``."""
    sub = sorted(subset)
    shape = [table.shape[i] if a in sub else 1 for i, a in enumerate(clique)]
    table += scale * np.asarray(vec).reshape(shape)


def brute_force_log_joint(
    domain: Domain, cliques: Sequence[Clique], tables: Sequence[np.ndarray]
) -> np.ndarray:
    """Unnormalised log joint over the whole domain: sum of the clique log-potentials."""
    cells = domain.size()
    if cells > MAX_BRUTE_CELLS:
        raise ConfigError(
            f"Brute force needs the full joint of {cells:,} cells; the limit is "
            f"{MAX_BRUTE_CELLS:,}. Use a smaller domain for reference checks."
        )
    joint = np.zeros(domain.shape(range(len(domain))))
    allattrs = list(range(len(domain)))
    for c, t in zip(cliques, tables, strict=True):
        joint = joint + expand_to(np.asarray(t).reshape(domain.shape(c)), c, allattrs)
    return joint


def brute_force_log_marginal(log_joint: np.ndarray, attrs: Sequence[int]) -> np.ndarray:
    """Normalised log marginal of ``attrs`` (axes in the given order) from a log joint table."""
    keep = list(attrs)
    other = tuple(i for i in range(log_joint.ndim) if i not in keep)
    lm = logsumexp(log_joint, other) if other else log_joint
    lm = lm - logsumexp(log_joint)
    order = np.argsort(np.argsort(keep))
    return np.transpose(lm, order) if lm.ndim else lm


def round_groups_ref(
    p: np.ndarray, base: np.ndarray, rest: np.ndarray, group_size: np.ndarray, u: np.ndarray
) -> np.ndarray:
    """Reference of kernels.sample.round_groups: systematic rounding of each group's split."""
    counts = np.zeros(p.size, dtype=np.int64)
    for s in range(base.size):
        k = int(group_size[s])
        cells = base[s] + rest
        w = p[cells]
        tot = np.cumsum(w)[-1]  # sequential sums, as the kernel adds
        t = np.full(rest.size, k / rest.size) if tot <= 0 else k * (w / tot)
        f = np.floor(t)
        frac = t - f
        counts[cells] = f.astype(np.int64)
        extra = k - int(f.sum())
        while extra < 0:
            counts[cells[np.argmax(counts[cells])]] -= 1
            extra += 1
        if extra == 0:
            continue
        pos = frac > 0
        if not pos.any():
            counts[cells[np.argmax(w)]] += extra
            continue
        csum = np.cumsum(frac[pos])
        cum = u[s] + extra * (csum / csum[-1])
        cum[-1] = u[s] + extra
        hits = np.diff(np.concatenate(([0], np.floor(cum).astype(np.int64))))
        counts[cells[pos]] += hits
    return counts


def group_rows_ref(
    code: np.ndarray, perm: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """Reference of kernels.sample.group_rows: stable sort of perm by group code."""
    order = perm[np.argsort(code[perm], kind="stable")]
    starts = np.concatenate(([0], np.cumsum(np.bincount(code, minlength=n_groups))))
    return order, starts.astype(np.int64)


def assign_values_ref(
    order: np.ndarray,
    starts: np.ndarray,
    counts: np.ndarray,
    base: np.ndarray,
    rest: np.ndarray,
    rest_codes: np.ndarray,
    cols: np.ndarray,
    out: np.ndarray,
) -> None:
    """Reference of kernels.sample.assign_values."""
    for s in range(base.size):
        reps = counts[base[s] + rest]
        values = np.repeat(rest_codes, reps, axis=0)
        rows = order[starts[s] : starts[s] + values.shape[0]]
        out[np.ix_(rows, cols)] = values


def reference_sum_out(table: np.ndarray, keep: tuple[int, ...]) -> np.ndarray:
    """Plain numpy reference: sum ``table`` over the axes not in ``keep``; flat C order."""
    axes = tuple(i for i in range(table.ndim) if i not in keep)
    return np.asarray(table.sum(axis=axes)).ravel()


def reference_broadcast_add(
    table: np.ndarray, keep: tuple[int, ...], vec: np.ndarray, scale: float
) -> None:
    """Plain numpy reference: ``table += scale * vec`` broadcast over the axes not in ``keep``."""
    shape = [table.shape[i] if i in keep else 1 for i in range(table.ndim)]
    table += scale * np.asarray(vec).reshape(shape)


def reference_scaled_loss(
    mu: np.ndarray, factor: np.ndarray, home: np.ndarray, y: np.ndarray, w2: np.ndarray
) -> float:
    """Plain numpy reference of ``kernels.loss.scaled_loss`` (also scales ``mu`` in place)."""
    mu *= factor[home]
    r = mu - y
    return 0.5 * float(np.dot(w2 * r, r))


def reference_dot_diff(g: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """Plain numpy reference of ``kernels.loss.dot_diff``."""
    return float(np.sum(g * (a - b)))


def reference_weighted_squares(w: np.ndarray, r: np.ndarray) -> float:
    """Plain numpy reference of ``kernels.loss.weighted_squares``."""
    return float(np.sum(w * r * r))


def estimate_cardinality(values: np.ndarray, gamma: float = 1.0) -> float:
    """Non-private harmonic estimate of a set's size from its t sketch values (shape (t,))."""
    values = np.asarray(values, dtype=np.int64)
    t = values.shape[0]
    return harmonic_constant(gamma, t) * t / float(np.sum(_power_table(gamma)[values]))


def matmul_tn_u64_ref(a: np.ndarray, b: np.ndarray, ring_bits: int = 64) -> np.ndarray:
    """Reference of kernels.secure.matmul_tn_u64: ``a.T @ b`` over Python integers, then
    reduced modulo 2**ring_bits (no reliance on uint64 or uint32 wrap-around); uint64."""
    exact = np.asarray(a).astype(object).T @ np.asarray(b).astype(object)
    return (exact % 2**ring_bits).astype(np.uint64)


def row_dots_u64_ref(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Reference of kernels.secure.row_dots_u64: each row's inner product over Python
    integers, reduced modulo 2**64; uint64."""
    exact = (np.asarray(x).astype(object) * np.asarray(y).astype(object)).sum(axis=1)
    return (exact % 2**64).astype(np.uint64)


def onehot_scatter_u64_ref(
    a: np.ndarray, cols: np.ndarray, kb: int, ring_bits: int = 64
) -> np.ndarray:
    """Reference of kernels.secure.onehot_scatter_u64: for every ``cols[r, j] >= 0``, add row
    ``r`` of ``a`` to output column ``cols[r, j]``, over Python integers, modulo
    2**ring_bits; uint64."""
    rows = np.asarray(a).astype(object)
    exact = np.zeros((rows.shape[1], kb), dtype=object)
    for r in range(rows.shape[0]):
        for c in cols[r]:
            if c >= 0:
                exact[:, c] += rows[r]
    return (exact % 2**ring_bits).astype(np.uint64)


def onehot_minus_ref(mask: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Reference of kernels.packing.onehot_minus: X - U over Python integers, X the one-hot
    with a 1 at (r, cols[r, j]) for every ``cols[r, j] >= 0``, modulo the word's 2**bits."""
    top = 2 ** (8 * mask.dtype.itemsize)
    exact = -np.asarray(mask).astype(object)
    for r in range(cols.shape[0]):
        for c in cols[r]:
            if c >= 0:
                exact[r, c] += 1
    return (exact % top).astype(mask.dtype)


def pack_low_ref(words: np.ndarray, size: int) -> bytes:
    """Reference of kernels.packing.pack_low: each word's low ``size`` bytes, little-endian,
    by Python's ``int.to_bytes``."""
    return b"".join((int(w) % 256**size).to_bytes(size, "little") for w in words)


def merge_sorted_ref(lists: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct tokens of sorted lists and each one's list mask (bit i: list i), by
    ``np.unique`` of their concatenation."""
    distinct = np.unique(np.concatenate([np.empty(0, np.uint64), *lists]))
    region = np.zeros(distinct.size, np.int64)
    for i, tokens in enumerate(lists):
        region[np.searchsorted(distinct, tokens)] |= 1 << i
    return distinct, region
