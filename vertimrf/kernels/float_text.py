"""Numba kernel laying out Arrow's float text the way Python's ``repr`` lays
it out; design notes in docs/design/kernels.md."""

import numpy as np
from numba import njit

_MINUS, _PLUS, _POINT, _ZERO, _E = 45, 43, 46, 48, 101


@njit(cache=True)
def repr_floats(data, offsets, out, ends):
    """Value ``i``, Arrow's text ``data[offsets[i]:offsets[i + 1]]`` (uint8), in ``repr``'s
    layout into ``out[ends[i]:ends[i + 1]]``; ``out`` holds ``data.size + 24`` bytes per
    value. Returns the bytes written."""
    n = offsets.size - 1
    width = 1
    for i in range(n):
        width = max(width, offsets[i + 1] - offsets[i])
    digits = np.empty(width, np.uint8)
    k = 0
    ends[0] = 0
    for i in range(n):
        p, stop = offsets[i], offsets[i + 1]
        if p < stop and data[p] == _MINUS:
            out[k] = _MINUS
            k += 1
            p += 1
        if p < stop and not (_ZERO <= data[p] <= _ZERO + 9):  # inf, nan
            while p < stop:
                out[k] = data[p]
                k += 1
                p += 1
            ends[i + 1] = k
            continue
        if p == stop:  # empty: a missing value
            ends[i + 1] = k
            continue
        nd = 0
        point = -1
        while p < stop and data[p] != _E:
            if data[p] == _POINT:
                point = nd
            else:
                digits[nd] = data[p]
                nd += 1
            p += 1
        if point < 0:
            point = nd
        exp = 0
        if p < stop:  # the exponent after "e"
            p += 1
            negative = data[p] == _MINUS
            if data[p] == _MINUS or data[p] == _PLUS:
                p += 1
            while p < stop:
                exp = 10 * exp + (data[p] - _ZERO)
                p += 1
            if negative:
                exp = -exp
        first = 0
        while first < nd - 1 and digits[first] == _ZERO:
            first += 1
        while nd - 1 > first and digits[nd - 1] == _ZERO:
            nd -= 1
        m = nd - first
        decpt = point + exp - first  # the value is 0.D x 10**decpt, D = digits[first:nd]
        if m == 1 and digits[first] == _ZERO:  # zero
            out[k], out[k + 1], out[k + 2] = _ZERO, _POINT, _ZERO
            k += 3
        elif -4 < decpt <= 16:  # positional
            if decpt <= 0:
                out[k], out[k + 1] = _ZERO, _POINT
                k += 2
                for _ in range(-decpt):
                    out[k] = _ZERO
                    k += 1
                for j in range(first, nd):
                    out[k] = digits[j]
                    k += 1
            elif decpt >= m:
                for j in range(first, nd):
                    out[k] = digits[j]
                    k += 1
                for _ in range(decpt - m):
                    out[k] = _ZERO
                    k += 1
                out[k], out[k + 1] = _POINT, _ZERO
                k += 2
            else:
                for j in range(first, nd):
                    if j - first == decpt:
                        out[k] = _POINT
                        k += 1
                    out[k] = digits[j]
                    k += 1
        else:  # d.ddde+XX
            out[k] = digits[first]
            k += 1
            if m > 1:
                out[k] = _POINT
                k += 1
                for j in range(first + 1, nd):
                    out[k] = digits[j]
                    k += 1
            e = decpt - 1
            out[k] = _E
            out[k + 1] = _MINUS if e < 0 else _PLUS
            k += 2
            e = abs(e)
            size = 2 if e < 100 else 3
            for j in range(size - 1, -1, -1):
                out[k + j] = _ZERO + e % 10
                e //= 10
            k += size
        ends[i + 1] = k
    return k
