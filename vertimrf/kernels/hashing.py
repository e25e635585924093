"""Keyed 64-bit hashes of one uint64 message (taken as 8 little-endian
bytes); design notes in docs/design/kernels.md."""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core.extending import intrinsic

_SIP_C0 = np.uint64(0x736F6D6570736575)  # "somepseu"
_SIP_C1 = np.uint64(0x646F72616E646F6D)  # "dorandom"
_SIP_C2 = np.uint64(0x6C7967656E657261)  # "lygenera"
_SIP_C3 = np.uint64(0x7465646279746573)  # "tedbytes"
_SIP_LEN8 = np.uint64(8 << 56)  # last block of an 8-byte message: length byte only
_SIP_FIN = np.uint64(0xFF)

SIP_LANES = 8

_XXH_P1 = np.uint64(0x9E3779B185EBCA87)
_XXH_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_XXH_P3 = np.uint64(0x165667B19E3779F9)
_XXH_P4 = np.uint64(0x85EBCA77C2B2AE63)
_XXH_P5 = np.uint64(0x27D4EB2F165667C5)
_XXH_LEN8 = np.uint64(8)

_R13, _R51 = np.uint64(13), np.uint64(51)
_R16, _R48 = np.uint64(16), np.uint64(48)
_R17, _R47 = np.uint64(17), np.uint64(47)
_R21, _R43 = np.uint64(21), np.uint64(43)
_R27, _R37 = np.uint64(27), np.uint64(37)
_R31, _R33 = np.uint64(31), np.uint64(33)
_R29, _R32 = np.uint64(29), np.uint64(32)


@njit(inline="always", cache=True)
def _sipround(v0, v1, v2, v3):
    v0 += v1
    v1 = (v1 << _R13) | (v1 >> _R51)
    v1 ^= v0
    v0 = (v0 << _R32) | (v0 >> _R32)
    v2 += v3
    v3 = (v3 << _R16) | (v3 >> _R48)
    v3 ^= v2
    v0 += v3
    v3 = (v3 << _R21) | (v3 >> _R43)
    v3 ^= v0
    v2 += v1
    v1 = (v1 << _R17) | (v1 >> _R47)
    v1 ^= v2
    v2 = (v2 << _R32) | (v2 >> _R32)
    return v0, v1, v2, v3


@njit(inline="always", cache=True)
def siphash24_u64(k0, k1, m):
    """SipHash-2-4 of the 8-byte little-endian message ``m`` under key ``(k0, k1)``."""
    v0 = k0 ^ _SIP_C0
    v1 = k1 ^ _SIP_C1
    v2 = k0 ^ _SIP_C2
    v3 = k1 ^ _SIP_C3
    v3 ^= m
    for _ in range(2):
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    v0 ^= m
    v3 ^= _SIP_LEN8
    for _ in range(2):
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    v0 ^= _SIP_LEN8
    v2 ^= _SIP_FIN
    for _ in range(4):
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


_I64 = ir.IntType(64)
_LANES_T = ir.VectorType(_I64, SIP_LANES)


def _splat(value: int) -> ir.Constant:
    return ir.Constant(_LANES_T, [ir.Constant(_I64, value)] * SIP_LANES)


def _ir_rotl(b: ir.IRBuilder, v: ir.Value, n: int) -> ir.Value:
    return b.or_(b.shl(v, _splat(n)), b.lshr(v, _splat(64 - n)))


def _ir_sipround(b: ir.IRBuilder, v0, v1, v2, v3):
    v0 = b.add(v0, v1)
    v1 = b.xor(_ir_rotl(b, v1, 13), v0)
    v0 = _ir_rotl(b, v0, 32)
    v2 = b.add(v2, v3)
    v3 = b.xor(_ir_rotl(b, v3, 16), v2)
    v0 = b.add(v0, v3)
    v3 = b.xor(_ir_rotl(b, v3, 21), v0)
    v2 = b.add(v2, v1)
    v1 = b.xor(_ir_rotl(b, v1, 17), v2)
    v2 = _ir_rotl(b, v2, 32)
    return v0, v1, v2, v3


_U64_ARRAY = types.Array(types.uint64, 1, "C")


@intrinsic
def _siphash24_vector(typingctx, k0, k1, m, out, start):
    """``out[start + i] = siphash(k0[start + i], k1[start + i], m)`` for ``i < SIP_LANES``.

    No bounds check: the caller guarantees ``start + SIP_LANES <= size`` of all three arrays.
    """
    if (
        (k0, k1, out) != (_U64_ARRAY,) * 3
        or m != types.uint64
        or not isinstance(start, types.Integer)
    ):
        return None

    def codegen(context, builder, signature, args):
        b = builder
        offset = context.cast(b, args[4], signature.args[4], types.intp)

        def lanes_ptr(array_value, array_type):
            data = context.make_array(array_type)(context, b, array_value).data
            return b.bitcast(b.gep(data, [offset]), _LANES_T.as_pointer())

        key0 = b.load(lanes_ptr(args[0], signature.args[0]), align=8)
        key1 = b.load(lanes_ptr(args[1], signature.args[1]), align=8)
        one = b.insert_element(
            ir.Constant(_LANES_T, ir.Undefined), args[2], ir.Constant(ir.IntType(32), 0)
        )
        msg = b.shuffle_vector(
            one,
            ir.Constant(_LANES_T, ir.Undefined),
            ir.Constant(ir.VectorType(ir.IntType(32), SIP_LANES), [0] * SIP_LANES),
        )
        v0 = b.xor(key0, _splat(int(_SIP_C0)))
        v1 = b.xor(key1, _splat(int(_SIP_C1)))
        v2 = b.xor(key0, _splat(int(_SIP_C2)))
        v3 = b.xor(b.xor(key1, _splat(int(_SIP_C3))), msg)
        for _ in range(2):
            v0, v1, v2, v3 = _ir_sipround(b, v0, v1, v2, v3)
        v0 = b.xor(v0, msg)
        v3 = b.xor(v3, _splat(int(_SIP_LEN8)))
        for _ in range(2):
            v0, v1, v2, v3 = _ir_sipround(b, v0, v1, v2, v3)
        v0 = b.xor(v0, _splat(int(_SIP_LEN8)))
        v2 = b.xor(v2, _splat(int(_SIP_FIN)))
        for _ in range(4):
            v0, v1, v2, v3 = _ir_sipround(b, v0, v1, v2, v3)
        digest = b.xor(b.xor(v0, v1), b.xor(v2, v3))
        b.store(digest, lanes_ptr(args[3], signature.args[3]), align=8)
        return context.get_dummy_value()

    return types.void(k0, k1, m, out, start), codegen


@njit(inline="always", cache=True)
def siphash24_lanes(k0, k1, m, out):
    """``out[i] = siphash(k0[i], k1[i], m)``: one message under many keys, ``SIP_LANES`` at once.

    ``k0``, ``k1`` and ``out`` are C-contiguous uint64 arrays of one size; a size that is not
    a multiple of ``SIP_LANES`` finishes with the scalar hash.
    """
    vector_end = out.size - out.size % SIP_LANES
    for start in range(0, vector_end, SIP_LANES):
        _siphash24_vector(k0, k1, m, out, start)
    for i in range(vector_end, out.size):
        out[i] = siphash24_u64(k0[i], k1[i], m)


@njit(inline="always", cache=True)
def xxh64_u64(seed, m):
    """xxHash64 of the 8-byte little-endian message ``m`` with ``seed``."""
    h = seed + _XXH_P5 + _XXH_LEN8
    k = m * _XXH_P2
    k = ((k << _R31) | (k >> _R33)) * _XXH_P1
    h ^= k
    h = ((h << _R27) | (h >> _R37)) * _XXH_P1 + _XXH_P4
    h ^= h >> _R33
    h *= _XXH_P2
    h ^= h >> _R29
    h *= _XXH_P3
    h ^= h >> _R32
    return h


@njit(cache=True)
def siphash24_array(k0, k1, messages):
    """Element-wise SipHash-2-4: ``out[i] = siphash(k0[i], k1[i], messages[i])``."""
    out = np.empty(messages.size, np.uint64)
    for i in range(messages.size):
        out[i] = siphash24_u64(k0[i], k1[i], messages[i])
    return out


@njit(cache=True)
def xxh64_array(seeds, messages):
    """Element-wise xxHash64: ``out[i] = xxh64(seeds[i], messages[i])``."""
    out = np.empty(messages.size, np.uint64)
    for i in range(messages.size):
        out[i] = xxh64_u64(seeds[i], messages[i])
    return out
