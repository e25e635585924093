"""Numba kernels for log-space sum-product on clique tables stored in one flat
float64 buffer; design notes in docs/design/kernels.md."""

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

GRAIN = 16384
MIN_TASKS = 8
PAR_MIN_CELLS = 32 * GRAIN
PAR_MIN_CELLS_CHEAP = 64 * GRAIN
TINY = 1e-290
LOG_TINY = np.log(TINY)
LOOSE = 1e-12
SHORT_RUN = 8  # subset-side runs shorter than this are walked in memory order, run by run
NEG_INF = -np.inf

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_ROUND = 6755399441055744.0  # 1.5 * 2**52: adding it rounds a double to an integer
_X_MIN = -708.0
_X_MAX = 709.0


def _bitcast(frm, to, to_ir):
    """An intrinsic that reads the 64 bits of a ``frm`` value as a ``to`` value."""

    @intrinsic
    def cast(typingctx, x):
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], to_ir)

        return to(frm), codegen

    return cast


_bits_to_f64 = _bitcast(types.int64, types.float64, ir.DoubleType())
_f64_to_bits = _bitcast(types.float64, types.int64, ir.IntType(64))


@intrinsic
def _fma(typingctx, a, b, c):
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return sig, codegen


@njit(cache=True, inline="always")
def fexp(x):
    """exp(x) to ~1 ulp, branch-free so loops vectorise; 0 below -708, NaN stays NaN.

    Range reduction x = k ln2 + r (|r| <= ln2/2, two-part ln2), degree-13 Taylor polynomial for
    exp(r) (truncation < 1e-17) by fused multiply-adds, and 2**k built from its exponent bits.
    """
    xc = min(max(x, _X_MIN), _X_MAX)
    t = xc * _LOG2E + _ROUND
    k = t - _ROUND
    ki = _f64_to_bits(t) - _f64_to_bits(_ROUND)
    r = _fma(-k, _LN2_LO, _fma(-k, _LN2_HI, xc))
    p = 1.0 / 6227020800.0
    p = _fma(p, r, 1.0 / 479001600.0)
    p = _fma(p, r, 1.0 / 39916800.0)
    p = _fma(p, r, 1.0 / 3628800.0)
    p = _fma(p, r, 1.0 / 362880.0)
    p = _fma(p, r, 1.0 / 40320.0)
    p = _fma(p, r, 1.0 / 5040.0)
    p = _fma(p, r, 1.0 / 720.0)
    p = _fma(p, r, 1.0 / 120.0)
    p = _fma(p, r, 1.0 / 24.0)
    p = _fma(p, r, 1.0 / 6.0)
    p = _fma(p, r, 0.5)
    p = _fma(p, r, 1.0)
    p = _fma(p, r, 1.0)
    y = p * _bits_to_f64((ki + 1023) << 52)
    y = 0.0 if x < _X_MIN else y
    y = np.inf if x > _X_MAX else y
    return x if x != x else y


@njit(cache=True)
def _chunks(starts, ends):
    """GRAIN-sized chunks (start, end) covering the ranges [starts[i], ends[i])."""
    n = 0
    for i in range(starts.shape[0]):
        n += (ends[i] - starts[i] + GRAIN - 1) // GRAIN
    lo = np.empty(n, dtype=np.int64)
    hi = np.empty(n, dtype=np.int64)
    k = 0
    for i in range(starts.shape[0]):
        for c in range(starts[i], ends[i], GRAIN):
            lo[k] = c
            hi[k] = min(ends[i], c + GRAIN)
            k += 1
    return lo, hi


@njit(cache=True)
def _span(lo, hi):
    """Total length of the chunks. A plain loop: inside a ``parallel=True`` kernel, the array
    expression ``np.sum(hi - lo)`` becomes a parallel region of its own, launched on every call
    (and slow to join when another process holds a core)."""
    n = 0
    for t in range(lo.shape[0]):
        n += hi[t] - lo[t]
    return n


@njit(cache=True)
def _exp_chunk(x, shift, scale, out, lo, hi):
    xs = x[lo:hi]
    os = out[lo:hi]
    for i in range(xs.shape[0]):
        os[i] = scale * fexp(xs[i] - shift)


@njit(cache=True, parallel=True)
def exp_shifted(x, shift, scale, out, starts, ends):
    """out[i] = scale * exp(x[i] - shift) for i in the ranges [starts[k], ends[k]).

    exp is flushed to 0 below e^-708, which is far under float64 precision of any total.
    """
    lo, hi = _chunks(starts, ends)
    if _span(lo, hi) < PAR_MIN_CELLS:
        for t in range(lo.shape[0]):
            _exp_chunk(x, shift, scale, out, lo[t], hi[t])
    else:
        for t in prange(lo.shape[0]):
            _exp_chunk(x, shift, scale, out, lo[t], hi[t])


@njit(cache=True)
def _axpy_chunk(out, x, a, y, lo, hi):
    xs = x[lo:hi]
    ys = y[lo:hi]
    os = out[lo:hi]
    for i in range(xs.shape[0]):
        os[i] = xs[i] + a * ys[i]


@njit(cache=True, parallel=True)
def axpy(out, x, a, y, starts, ends):
    """out[i] = x[i] + a * y[i] for i in the ranges [starts[k], ends[k])."""
    lo, hi = _chunks(starts, ends)
    if _span(lo, hi) < PAR_MIN_CELLS_CHEAP:
        for t in range(lo.shape[0]):
            _axpy_chunk(out, x, a, y, lo[t], hi[t])
    else:
        for t in prange(lo.shape[0]):
            _axpy_chunk(out, x, a, y, lo[t], hi[t])


@njit(cache=True)
def _plan(ns, nr, run, side, par_min):
    """Task cut of an ns x nr projection: (s_block, r_block, n_sb, n_rb).

    Cut over subset cells first (no partial results); cut the rest axes too, in whole runs, only
    when that leaves fewer than MIN_TASKS tasks. Projections under par_min cells are one task.
    """
    if ns * nr < par_min:
        return ns, nr, 1, 1
    if side == 0:
        s_block = min(ns, max(1, GRAIN // nr))
        r_block = nr
        if (ns + s_block - 1) // s_block < MIN_TASKS and nr > run:
            s_block = 1
            r_block = min(nr, run * max(1, GRAIN // run))
    else:
        s_block = min(ns, run * max(1, GRAIN // (run * nr)))
        r_block = nr
        if (ns + s_block - 1) // s_block < MIN_TASKS:
            s_block = min(ns, run * max(1, GRAIN // run))
            r_block = min(nr, max(1, GRAIN // s_block))
    return s_block, r_block, (ns + s_block - 1) // s_block, (nr + r_block - 1) // r_block


@njit(cache=True, inline="always")
def _task_bounds(t, n_rb, s_block, r_block, ns, nr):
    """Subset and rest ranges (s0, s1, r0, r1) of task t of a :func:`_plan` cut."""
    s0 = (t // n_rb) * s_block
    r0 = (t % n_rb) * r_block
    return s0, min(ns, s0 + s_block), r0, min(nr, r0 + r_block)


@njit(cache=True, inline="always")
def _lanes_sum(buf, n):
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    j = 0
    while j + 4 <= n:
        a0 += buf[j]
        a1 += buf[j + 1]
        a2 += buf[j + 2]
        a3 += buf[j + 3]
        j += 4
    while j < n:
        a0 += buf[j]
        j += 1
    return (a0 + a1) + (a2 + a3)


@njit(cache=True)
def _clique_max(x, lo, hi):
    """max of x[lo:hi] (-inf if empty), with four independent accumulators."""
    xs = x[lo:hi]
    n = xs.shape[0]
    m0 = NEG_INF
    m1 = NEG_INF
    m2 = NEG_INF
    m3 = NEG_INF
    j = 0
    while j + 4 <= n:
        m0 = xs[j] if xs[j] > m0 else m0
        m1 = xs[j + 1] if xs[j + 1] > m1 else m1
        m2 = xs[j + 2] if xs[j + 2] > m2 else m2
        m3 = xs[j + 3] if xs[j + 3] > m3 else m3
        j += 4
    while j < n:
        m0 = xs[j] if xs[j] > m0 else m0
        j += 1
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    return m2 if m2 > m0 else m0


@njit(cache=True)
def _reduce_rest_runs(x, coff, base, rest, run, s0, s1, r0, r1, ps, poff, shift, use_log):
    """Runs along the rest axes: per subset cell, sum of exp(x - shift) (or of x) over its cells.

    Each group's cells are first gathered run by run into one contiguous buffer, so the
    exponentials run in one long vectorised loop however short the runs are. Loops run over
    slices so that indices are provably non-negative.
    """
    tmp = np.empty(r1 - r0)
    for s in range(s0, s1):
        b = coff + base[s]
        for ro in range(r0, r1, run):
            ts = tmp[ro - r0 : ro - r0 + run]
            xs = x[b + rest[ro] : b + rest[ro] + run]
            for j in range(run):
                ts[j] = xs[j]
        if use_log:
            for k in range(tmp.shape[0]):
                tmp[k] = fexp(tmp[k] - shift)
        ps[poff + s] = _lanes_sum(tmp, tmp.shape[0])


@njit(cache=True)
def _reduce_short_runs(x, coff, base, rest, run, s0, s1, r0, r1, pss, shift, use_log):
    """Short runs along the subset axes: per run of subset cells, its cells over every rest
    combination, read in memory order (the innermost rest axis is next to the run), then
    summed per cell in rest order, as the rest-major loop sums them (the same bits). A
    rest-major walk would use one run of every cache line per pass over the clique."""
    rs = rest[r0:r1]
    tmp = np.empty(rs.shape[0] * run if use_log else 0)
    for so in range(s0, s1, run):
        b = coff + base[so]
        if not use_log:
            for j in range(run):
                acc = 0.0
                for r in range(rs.shape[0]):
                    acc += x[b + rs[r] + j]
                pss[so - s0 + j] += acc
            continue
        k = 0
        for r in range(rs.shape[0]):
            c = b + rs[r]
            for j in range(run):
                tmp[k] = x[c + j]
                k += 1
        for k in range(tmp.shape[0]):
            tmp[k] = fexp(tmp[k] - shift)
        for j in range(run):
            acc = 0.0
            for r in range(rs.shape[0]):
                acc += tmp[r * run + j]
            pss[so - s0 + j] += acc


@njit(cache=True)
def _reduce_base_runs(x, coff, base, rest, run, s0, s1, r0, r1, ps, poff, shift, use_log):
    """Runs along the subset axes: element-wise sums of exp(x - shift) (or of x) per cell.

    For each rest combination the task's cells are gathered into a contiguous buffer first.
    """
    pss = ps[poff + s0 : poff + s1]
    pss[:] = 0.0
    if run < SHORT_RUN:
        _reduce_short_runs(x, coff, base, rest, run, s0, s1, r0, r1, pss, shift, use_log)
        return
    tmp = np.empty(s1 - s0)
    for r in range(r0, r1):
        ro = coff + rest[r]
        for so in range(s0, s1, run):
            ts = tmp[so - s0 : so - s0 + run]
            xs = x[ro + base[so] : ro + base[so] + run]
            for j in range(run):
                ts[j] = xs[j]
        if use_log:
            for k in range(tmp.shape[0]):
                pss[k] += fexp(tmp[k] - shift)
        else:
            for k in range(tmp.shape[0]):
                pss[k] += tmp[k]


@njit(cache=True)
def _group_lse(x, start, rest):
    """Exact two-pass log-sum-exp of the cells x[start + rest[r]] (the underflow fallback)."""
    m = NEG_INF
    for r in range(rest.shape[0]):
        v = x[start + rest[r]]
        m = v if v > m else m
    if m == NEG_INF:
        return NEG_INF
    acc = 0.0
    for r in range(rest.shape[0]):
        acc += fexp(x[start + rest[r]] - m)
    return m + np.log(acc)


@njit(cache=True)
def _finish(x, coff, base, rest, ps, s0, s1, out, ooff, shift, use_log):
    """Write the results of subset cells s0:s1; log groups that underflowed are recomputed."""
    for s in range(s0, s1):
        if not use_log:
            out[ooff + s] = ps[s]
        elif ps[s] >= TINY:
            out[ooff + s] = shift + np.log(ps[s])
        else:
            out[ooff + s] = _group_lse(x, coff + base[s], rest)


@njit(cache=True)
def _reduce_task(
    x, coff, base, rest, run, side, s0, s1, r0, r1, ps, poff, shift, use_log, out, ooff, finish
):
    if side == 0:
        _reduce_rest_runs(x, coff, base, rest, run, s0, s1, r0, r1, ps, poff, shift, use_log)
    else:
        _reduce_base_runs(x, coff, base, rest, run, s0, s1, r0, r1, ps, poff, shift, use_log)
    if finish:
        _finish(x, coff, base, rest, ps, s0, s1, out, ooff, shift, use_log)


@njit(cache=True)
def _merge_partials(ps, ns, n_rb):
    """ps[s] = sum over the n_rb task slots c of ps[c * ns + s], in slot order."""
    for s in range(ns):
        acc = 0.0
        for c in range(n_rb):
            acc += ps[c * ns + s]
        ps[s] = acc


@njit(cache=True, parallel=True)
def project(x, p, coff, bptr, base, rptr, rest, run, side, out, ooff, use_log, shift):
    """Project table x through projection p into out[ooff:ooff+|S|].

    use_log: out[s] = log sum_r exp(x[cell(s, r)]), computed as shift + log sum exp(x - shift)
    in one pass, where shift bounds the clique's values from above (e.g. its max; NaN: the max
    is computed here), so no exp overflows. A group whose shifted sum falls under TINY (all
    its cells more than ~668 below the shift) is recomputed with its own max, so results stay
    accurate to the last bits; an all -inf group gives -inf. Otherwise out[s] is the plain sum.
    """
    bs = base[bptr[p] : bptr[p + 1]]
    rs = rest[rptr[p] : rptr[p + 1]]
    ns = bs.shape[0]
    nr = rs.shape[0]
    rn = run[p]
    sd = side[p]
    c0 = coff[p]
    if use_log and shift != shift:
        shift = _clique_max(x, c0, c0 + ns * nr)
    if use_log and shift == NEG_INF:
        out[ooff : ooff + ns] = NEG_INF
        return
    s_block, r_block, n_sb, n_rb = _plan(
        ns, nr, rn, sd, PAR_MIN_CELLS if use_log else PAR_MIN_CELLS_CHEAP
    )
    ps = np.empty(n_rb * ns)
    ntask = n_sb * n_rb
    single = n_rb == 1
    if ntask == 1:
        _reduce_task(x, c0, bs, rs, rn, sd, 0, ns, 0, nr, ps, 0, shift, use_log, out, ooff, True)
        return
    for t in prange(ntask):
        s0, s1, r0, r1 = _task_bounds(t, n_rb, s_block, r_block, ns, nr)
        poff = (t % n_rb) * ns
        _reduce_task(
            x, c0, bs, rs, rn, sd, s0, s1, r0, r1, ps, poff, shift, use_log, out, ooff, single
        )
    if not single:
        _merge_partials(ps, ns, n_rb)
        _finish(x, c0, bs, rs, ps, 0, ns, out, ooff, shift, use_log)


@njit(cache=True)
def _expand_task(x, coff, base, rest, run, side, s0, s1, r0, r1, vec, voff, scale, mul):
    if side == 0:
        for s in range(s0, s1):
            b = coff + base[s]
            v = scale * vec[voff + s]
            for ro in range(r0, r1, run):
                xs = x[b + rest[ro] : b + rest[ro] + run]
                if mul:
                    for j in range(run):
                        xs[j] *= v
                else:
                    for j in range(run):
                        xs[j] += v
    elif run < SHORT_RUN:  # memory order, as in _reduce_short_runs
        for so in range(s0, s1, run):
            b = coff + base[so]
            vs = vec[voff + so : voff + so + run]
            for j in range(run):
                v = scale * vs[j]
                if mul:
                    for r in range(r0, r1):
                        x[b + rest[r] + j] *= v
                else:
                    for r in range(r0, r1):
                        x[b + rest[r] + j] += v
    else:
        for r in range(r0, r1):
            ro = coff + rest[r]
            for so in range(s0, s1, run):
                xs = x[ro + base[so] : ro + base[so] + run]
                vs = vec[voff + so : voff + so + run]
                if mul:
                    for j in range(run):
                        xs[j] *= scale * vs[j]
                else:
                    for j in range(run):
                        xs[j] += scale * vs[j]


@njit(cache=True, parallel=True)
def _expand(x, p, coff, bptr, base, rptr, rest, run, side, vec, voff, scale, mul):
    bs = base[bptr[p] : bptr[p + 1]]
    rs = rest[rptr[p] : rptr[p + 1]]
    ns = bs.shape[0]
    nr = rs.shape[0]
    rn = run[p]
    sd = side[p]
    c0 = coff[p]
    s_block, r_block, n_sb, n_rb = _plan(ns, nr, rn, sd, PAR_MIN_CELLS_CHEAP)
    ntask = n_sb * n_rb
    if ntask == 1:
        _expand_task(x, c0, bs, rs, rn, sd, 0, ns, 0, nr, vec, voff, scale, mul)
        return
    for t in prange(ntask):
        s0, s1, r0, r1 = _task_bounds(t, n_rb, s_block, r_block, ns, nr)
        _expand_task(x, c0, bs, rs, rn, sd, s0, s1, r0, r1, vec, voff, scale, mul)


@njit(cache=True)
def expand_add(x, p, coff, bptr, base, rptr, rest, run, side, vec, voff, scale):
    """Add scale * vec[voff + s] to every cell of x that projection p maps to subset cell s."""
    _expand(x, p, coff, bptr, base, rptr, rest, run, side, vec, voff, scale, False)


@njit(cache=True, parallel=True)
def range_max(x, lo, hi):
    """max of x[lo:hi] (-inf if empty); GRAIN chunks in parallel when the range is large."""
    if hi - lo < PAR_MIN_CELLS_CHEAP:
        return _clique_max(x, lo, hi)
    n = (hi - lo + GRAIN - 1) // GRAIN
    tmax = np.empty(n)
    for t in prange(n):
        tmax[t] = _clique_max(x, lo + t * GRAIN, min(hi, lo + (t + 1) * GRAIN))
    return _clique_max(tmax, 0, n)


@njit(cache=True)
def _exponentiate(beliefs, probs, pshift, offsets, c):
    """probs of clique c = exp(beliefs - pshift[c]), pshift[c] the clique's max (0s if -inf)."""
    m = range_max(beliefs, offsets[c], offsets[c + 1])
    pshift[c] = m
    if m == NEG_INF:
        probs[offsets[c] : offsets[c + 1]] = 0.0
    else:
        exp_shifted(beliefs, m, 1.0, probs, offsets[c : c + 1], offsets[c + 1 : c + 2])


@njit(cache=True)
def _log_message(beliefs, probs, shift, p, coff, bptr, base, rptr, rest, run, side, new):
    """log-sum-exp of a clique onto a separator, from its probabilities (sums, no exp).

    new[s] = shift + log(sum of the group's probabilities); a group whose sum is under TINY
    (its cells all underflowed or nearly) is recomputed exactly from the log-beliefs.
    """
    project(probs, p, coff, bptr, base, rptr, rest, run, side, new, 0, False, 0.0)
    bs = base[bptr[p] : bptr[p + 1]]
    rs = rest[rptr[p] : rptr[p + 1]]
    _finish(beliefs, coff[p], bs, rs, new, 0, bs.shape[0], new, 0, shift, True)


@njit(cache=True)
def _divide_up(new, up):
    """new -= up (-inf where up is -inf, so no inf - inf); returns the max of the result."""
    dmax = NEG_INF
    for s in range(new.shape[0]):
        new[s] = NEG_INF if up[s] == NEG_INF else new[s] - up[s]
        dmax = new[s] if new[s] > dmax else dmax
    return dmax


@njit(cache=True)
def _refresh_underflowed(
    beliefs, probs, up, new, old_shift, shift, q, coff, bptr, base, rptr, rest
):
    """Recompute from the log-beliefs the groups of projection q whose probabilities had
    underflowed before the message (upward message under LOG_TINY relative to old_shift)."""
    rs = rest[rptr[q] : rptr[q + 1]]
    for s in range(new.shape[0]):
        if up[s] - old_shift < LOG_TINY and new[s] > NEG_INF:
            start = coff[q] + base[bptr[q] + s]
            for r in range(rs.shape[0]):
                probs[start + rs[r]] = fexp(beliefs[start + rs[r]] - shift)


@njit(cache=True)
def _tighten(beliefs, probs, pshift, offsets, c):
    """Rescale clique c if its largest probability is under LOOSE; re-exponentiate if far under."""
    top = range_max(probs, offsets[c], offsets[c + 1])
    if top < LOOSE * LOOSE:
        _exponentiate(beliefs, probs, pshift, offsets, c)
    elif top < LOOSE:
        ps = probs[offsets[c] : offsets[c + 1]]
        for k in range(ps.shape[0]):
            ps[k] /= top
        pshift[c] += np.log(top)


@njit(cache=True)
def _absorb_down(
    beliefs, probs, pshift, up, new, w, q, dst, offsets, coff, bptr, base, rptr, rest, run, side
):
    """Absorb a downward message ``new`` (log) into clique dst through its projection q.

    The message delta (``new`` divided by the edge's upward message ``up``, -inf where that was
    -inf, so no inf - inf) is added to the log-beliefs and multiplied into the probabilities as
    exp(delta - max delta). If that leaves the clique's largest probability under LOOSE (the
    shift was loose), the clique is rescaled, or re-exponentiated when far under; groups whose
    probabilities had underflowed before the message are recomputed from the log-beliefs.
    """
    dmax = _divide_up(new, up)
    expand_add(beliefs, q, coff, bptr, base, rptr, rest, run, side, new, 0, 1.0)
    if dmax == NEG_INF:
        _exponentiate(beliefs, probs, pshift, offsets, dst)
        return
    for s in range(new.shape[0]):
        w[s] = fexp(new[s] - dmax)
    _expand(probs, q, coff, bptr, base, rptr, rest, run, side, w, 0, 1.0, True)  # probs *= w
    shift = pshift[dst] + dmax
    _refresh_underflowed(
        beliefs, probs, up, new, pshift[dst], shift, q, coff, bptr, base, rptr, rest
    )
    pshift[dst] = shift
    _tighten(beliefs, probs, pshift, offsets, dst)


@njit(cache=True)
def calibrate(
    theta,
    beliefs,
    probs,
    pshift,
    up,
    msg_src,
    msg_dst,
    msg_edge,
    eptr,
    root,
    offsets,
    pclique,
    coff,
    bptr,
    base,
    rptr,
    rest,
    run,
    side,
):
    """Two-pass log-space sum-product (Hugin form); returns log Z.

    Writes beliefs = theta plus all messages (log, unnormalised) and, for every clique c,
    probs = exp(beliefs - pshift[c]) (at most 1), so a clique's marginal is
    probs * exp(pshift[c] - log Z). up[eptr[e]:eptr[e+1]] keeps the upward message of edge e.

    Message i goes from projection msg_src[i] (source clique onto the separator) into
    projection msg_dst[i] (destination clique); pclique[p] is projection p's clique and offsets
    the clique table offsets. The first half of the messages go up (leaves to root), the rest
    down. Each clique is exponentiated once, shifted by its max, when it sends its upward
    message (the root: after the upward pass); messages are then plain sums of probabilities.
    Downward messages are absorbed by :func:`_absorb_down`.
    """
    beliefs[:] = theta
    a = (coff, bptr, base, rptr, rest, run, side)
    nmax = max(1, np.max(eptr[1:] - eptr[:-1])) if eptr.shape[0] > 1 else 1
    new = np.empty(nmax)
    w = np.empty(nmax)
    n_up = msg_src.shape[0] // 2
    for i in range(n_up):
        e0 = eptr[msg_edge[i]]
        ns = eptr[msg_edge[i] + 1] - e0
        src = pclique[msg_src[i]]
        _exponentiate(beliefs, probs, pshift, offsets, src)
        _log_message(beliefs, probs, pshift[src], msg_src[i], *a, new)
        up[e0 : e0 + ns] = new[:ns]
        expand_add(beliefs, msg_dst[i], *a, new, 0, 1.0)
    _exponentiate(beliefs, probs, pshift, offsets, root)
    for i in range(n_up, msg_src.shape[0]):
        e0 = eptr[msg_edge[i]]
        ns = eptr[msg_edge[i] + 1] - e0
        src = pclique[msg_src[i]]
        _log_message(beliefs, probs, pshift[src], msg_src[i], *a, new)
        q = msg_dst[i]
        _absorb_down(
            beliefs, probs, pshift, up[e0 : e0 + ns], new[:ns], w, q, pclique[q], offsets, *a
        )
    lo = offsets[root]
    return pshift[root] + np.log(_lanes_sum(probs[lo : offsets[root + 1]], offsets[root + 1] - lo))
