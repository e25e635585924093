"""Numba kernels that project clique tables onto subsets by summing out
blocks of axes; design notes in docs/design/kernels.md."""

from numba import njit, prange

from vertimrf.kernels.bp import GRAIN, PAR_MIN_CELLS_CHEAP


@njit(cache=True)
def _sum_range(src, so, dst, do, s, B, o0, o1):
    """dst[do + o] = sum_j src[so + (a*s + j)*B + b] for output cells o = a*B + b in [o0, o1)."""
    if B == 1:
        for o in range(o0, o1):
            xs = src[so + o * s : so + o * s + s]
            acc = 0.0
            for j in range(s):
                acc += xs[j]
            dst[do + o] = acc
        return
    o = o0
    while o < o1:
        a = o // B
        b0 = o - a * B
        n = min(B - b0, o1 - o)
        ds = dst[do + o : do + o + n]
        base = so + a * s * B + b0
        xs = src[base : base + n]
        for i in range(n):
            ds[i] = xs[i]
        for j in range(1, s):
            xs = src[base + j * B : base + j * B + n]
            for i in range(n):
                ds[i] += xs[i]
        o += n


@njit(cache=True)
def _bcast_range(src, so, dst, do, s, B, o0, o1, add):
    """For input cells o = a*B + b in [o0, o1): dst[do + (a*s + j)*B + b] (+)= src[so + o]."""
    if B == 1:
        for o in range(o0, o1):
            v = src[so + o]
            ds = dst[do + o * s : do + o * s + s]
            if add:
                for j in range(s):
                    ds[j] += v
            else:
                for j in range(s):
                    ds[j] = v
        return
    o = o0
    while o < o1:
        a = o // B
        b0 = o - a * B
        n = min(B - b0, o1 - o)
        xs = src[so + o : so + o + n]
        for j in range(s):
            start = do + (a * s + j) * B + b0
            ds = dst[start : start + n]
            if add:
                for i in range(n):
                    ds[i] += xs[i]
            else:
                for i in range(n):
                    ds[i] = xs[i]
        o += n


@njit(cache=True, parallel=True)
def _sum_step(src, so, dst, do, A, s, B):
    """Sum out the middle axis of src viewed as (A, s, B) into dst (A, B)."""
    n_out = A * B
    if n_out * s < PAR_MIN_CELLS_CHEAP:
        _sum_range(src, so, dst, do, s, B, 0, n_out)
        return
    chunk = max(1, GRAIN // s)
    n_tasks = (n_out + chunk - 1) // chunk
    for t in prange(n_tasks):
        _sum_range(src, so, dst, do, s, B, t * chunk, min(n_out, (t + 1) * chunk))


@njit(cache=True, parallel=True)
def _bcast_step(src, so, dst, do, A, s, B, add):
    """Broadcast src (A, B) over the middle axis of dst viewed as (A, s, B); add or assign."""
    n_in = A * B
    if n_in * s < PAR_MIN_CELLS_CHEAP:
        _bcast_range(src, so, dst, do, s, B, 0, n_in, add)
        return
    chunk = max(1, GRAIN // s)
    n_tasks = (n_in + chunk - 1) // chunk
    for t in prange(n_tasks):
        _bcast_range(src, so, dst, do, s, B, t * chunk, min(n_in, (t + 1) * chunk), add)


@njit(cache=True)
def project_sum(x, coff, sptr, steps, out, optr, tmp0, tmp1):
    """Every projection p of the plan: out[optr[p]:optr[p + 1]] = sum of its clique of x."""
    for p in range(coff.shape[0]):
        k0 = sptr[p]
        k1 = sptr[p + 1]
        o0 = optr[p]
        if k0 == k1:
            n = optr[p + 1] - o0
            out[o0 : o0 + n] = x[coff[p] : coff[p] + n]
            continue
        src = x
        so = coff[p]
        for k in range(k0, k1):
            last = k == k1 - 1
            dst = out if last else (tmp0 if (k - k0) % 2 == 0 else tmp1)
            do = o0 if last else 0
            _sum_step(src, so, dst, do, steps[k, 0], steps[k, 1], steps[k, 2])
            src = dst
            so = do


@njit(cache=True)
def _first_of_clique(coff, p):
    """Whether no projection before p is of p's clique (the same offset)."""
    first = True
    for q in range(p):
        first = first and coff[q] != coff[p]
    return first


@njit(cache=True)
def expand_sum(x, coff, sptr, steps, vec, optr, scale, tmp0, tmp1, overwrite):
    """The transpose of :func:`project_sum`: x[clique of p] += scale * vec[slot of p], broadcast
    over the summed axes, for every projection p. With ``overwrite``, the first projection of
    each clique assigns instead of adding (as if the clique were zeroed first, without the
    pass that zeroes it)."""
    for p in range(coff.shape[0]):
        k0 = sptr[p]
        k1 = sptr[p + 1]
        o0 = optr[p]
        n = optr[p + 1] - o0
        add = not (overwrite and _first_of_clique(coff, p))
        if k0 == k1:
            xs = x[coff[p] : coff[p] + n]
            vs = vec[o0 : o0 + n]
            if add:
                for i in range(n):
                    xs[i] += scale * vs[i]
            else:
                for i in range(n):
                    xs[i] = scale * vs[i]
            continue
        for i in range(n):
            tmp0[i] = scale * vec[o0 + i]
        src = tmp0
        for k in range(k1 - 1, k0 - 1, -1):
            if k == k0:
                _bcast_step(src, 0, x, coff[p], steps[k, 0], steps[k, 1], steps[k, 2], add)
            else:
                dst = tmp1 if (k1 - 1 - k) % 2 == 0 else tmp0
                _bcast_step(src, 0, dst, 0, steps[k, 0], steps[k, 1], steps[k, 2], False)
                src = dst
