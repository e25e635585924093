"""Numba kernels for junction-tree forward sampling: rounding, grouping and
value assignment; design notes in docs/design/kernels.md."""

import numpy as np
from numba import njit, prange

GROUP_GRAIN = 4096
PAR_MIN_CELLS = 65536


@njit(cache=True)
def _round_group(p, base_s, rest, k, u, counts):
    nr = rest.shape[0]
    tot = 0.0
    for r in range(nr):
        tot += p[base_s + rest[r]]
    floor_sum = 0
    frac_sum = 0.0
    last = -1
    for r in range(nr):
        t = k / nr if tot <= 0.0 else k * (p[base_s + rest[r]] / tot)
        f = np.floor(t)
        counts[base_s + rest[r]] = np.int64(f)
        floor_sum += np.int64(f)
        if t > f:
            frac_sum += t - f
            last = r
    extra = k - floor_sum
    while extra < 0:
        big = 0
        for r in range(nr):
            if counts[base_s + rest[r]] > counts[base_s + rest[big]]:
                big = r
        counts[base_s + rest[big]] -= 1
        extra += 1
    if extra == 0:
        return
    if last < 0:
        big = 0
        for r in range(nr):
            if p[base_s + rest[r]] > p[base_s + rest[big]]:
                big = r
        counts[base_s + rest[big]] += extra
        return
    cum = 0.0
    prev = 0
    for r in range(last + 1):
        t = k / nr if tot <= 0.0 else k * (p[base_s + rest[r]] / tot)
        fr = t - np.floor(t)
        if fr > 0.0:
            cum += fr
            pos = u + extra if r == last else u + extra * (cum / frac_sum)
            cur = np.int64(np.floor(pos))
            counts[base_s + rest[r]] += cur - prev
            prev = cur


@njit(cache=True, parallel=True)
def round_groups(p, base, rest, group_size, u, counts):
    """Integer counts per clique cell: group s (of group_size[s] rows) split by p(. | s).

    p: clique table (any non-negative scale), cells at base[s] + rest[r]. u[s] in [0, 1) is the
    group's systematic-rounding offset. Every cell gets floor or ceil of its expected count,
    ceil with probability equal to the fractional part; each group's counts sum to its size.
    A group whose cells are all zero is split uniformly.
    """
    ns = base.shape[0]
    nsb = max(1, GROUP_GRAIN // max(1, rest.shape[0]))
    ntask = (ns + nsb - 1) // nsb
    if ns * rest.shape[0] < PAR_MIN_CELLS:
        for s in range(ns):
            _round_group(p, base[s], rest, group_size[s], u[s], counts)
        return
    for t in prange(ntask):
        for s in range(t * nsb, min(ns, (t + 1) * nsb)):
            _round_group(p, base[s], rest, group_size[s], u[s], counts)


@njit(cache=True)
def group_rows(code, perm, n_groups):
    """Counting sort of rows by group code, visiting rows in the order ``perm``.

    Returns (order, starts): rows of group g are order[starts[g]:starts[g+1]], in perm order,
    so ties between rows of one group are in random order when perm is a random permutation.
    """
    starts = np.zeros(n_groups + 1, dtype=np.int64)
    for i in range(code.shape[0]):
        starts[code[i] + 1] += 1
    for g in range(n_groups):
        starts[g + 1] += starts[g]
    pos = starts[:-1].copy()
    order = np.empty(perm.shape[0], dtype=np.int64)
    for i in range(perm.shape[0]):
        row = perm[i]
        g = code[row]
        order[pos[g]] = row
        pos[g] += 1
    return order, starts


@njit(cache=True)
def _assign_group(order, pos, counts, base_s, rest, rest_codes, cols, out):
    for r in range(rest.shape[0]):
        for _ in range(counts[base_s + rest[r]]):
            row = order[pos]
            for j in range(cols.shape[0]):
                out[row, cols[j]] = rest_codes[r, j]
            pos += 1


@njit(cache=True, parallel=True)
def assign_values(order, starts, counts, base, rest, rest_codes, cols, out):
    """Write the new attributes' codes: group s's rows take counts[base[s]+rest[r]] copies of r.

    rest_codes[r, j] is the code of attribute cols[j] in combination r; out is (n, d).
    """
    ns = base.shape[0]
    nsb = max(1, GROUP_GRAIN // max(1, rest.shape[0]))
    ntask = (ns + nsb - 1) // nsb
    if order.shape[0] + ns * rest.shape[0] < PAR_MIN_CELLS:
        for s in range(ns):
            _assign_group(order, starts[s], counts, base[s], rest, rest_codes, cols, out)
        return
    for t in prange(ntask):
        for s in range(t * nsb, min(ns, (t + 1) * nsb)):
            _assign_group(order, starts[s], counts, base[s], rest, rest_codes, cols, out)
