"""Collusion against the dealer-free product (packed Paillier), one pair at the product's
level: the dealer backend's recovery attack fails, and a coalition of the server and one
party sees nothing a simulator cannot make from the coalition's own inputs, the honest
party's data-independent randomness and the DP release.

The pair: E encrypts its one-hot rows under its key and sends them to G; G aggregates,
masks and replies; E decrypts. Each adds its noise to its share and sends it to the server,
which publishes the sum (the release). Small keys (512 bits) keep the tests fast: the
algebra is the same at 2048."""

from __future__ import annotations

import hashlib
import random

import gmpy2
import numpy as np
import pytest

from vertimrf.crypto import paillier as pl
from vertimrf.crypto.paillier_slots import SlotLayout, draw_masks
from vertimrf.product import paillier as pp
from vertimrf.product.dealer import DealerProduct
from vertimrf.protocol.masks import RowMask, row_mask

BITS, ROWS, WE, WG = 512, 80, 6, 5
MASK = (1 << 64) - 1


@pytest.fixture(scope="module")
def keys() -> dict[str, pl.PrivateKey]:
    """E's key, and G's own (G is the encrypter of its other pairs)."""
    return {r: pl.generate(BITS, random.Random(r).getrandbits) for r in ("E", "G")}


def _tables(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(-1, WE, (ROWS, 1)), rng.integers(-1, WG, (ROWS, 1))


def _noise(role: str) -> np.ndarray:
    """A role's integer noise of the release (from its own tape; fixed seed)."""
    rng = np.random.default_rng(list(role.encode()))
    return rng.integers(-50, 50, (WG, WE)).astype(np.int64).view(np.uint64)


def _run(key: pl.PrivateKey, e: np.ndarray, g: np.ndarray) -> dict[str, bytes]:
    """Every message of one product and its release, by name."""
    pub, layout = key.public, SlotLayout.for_rows(255, BITS, kappa=20)
    table = pl.randomiser_table(pub)
    k_e = pp.stream_key(b"E" * 32, pp.RANDOMISERS, "run", "pair")
    k_g = pp.stream_key(b"G" * 32, pp.MASKS, "run", "pair")
    rows = pp.encrypted_rows(pub, pp.computed(table, k_e), layout, e, WE, 0)
    reply, g_share = pp.masked_reply(pub, table, layout, [(0, ROWS, rows)], g, WE, [WG], k_g)
    e_share = pp.encrypter_shares(key, layout, reply, (WE, WG))
    to_server_e, to_server_g = e_share + _noise("E"), g_share + _noise("G")
    return {
        "public-key": pub.to_bytes(),
        "rows": rows,
        "reply": reply,
        "e-to-server": to_server_e.tobytes(),
        "g-to-server": to_server_g.tobytes(),
        "release": (to_server_e + to_server_g).tobytes(),
    }


def _digest(view: dict[str, bytes]) -> str:
    h = hashlib.sha256()
    for name in sorted(view):
        h.update(name.encode() + len(view[name]).to_bytes(8, "little") + view[name])
    return h.hexdigest()


def _counts(e: np.ndarray, g: np.ndarray) -> np.ndarray:
    out = np.zeros((WG, WE), dtype=np.uint64)
    for a, b in zip(g[:, 0], e[:, 0], strict=True):
        if a >= 0 and b >= 0:
            out[a, b] += 1
    return out


def _open_rows(raw: bytes, key: pl.PrivateKey, layout: SlotLayout) -> np.ndarray:
    """The row-opening step of the attack: each received row's slots under ``key``."""
    cts = pl.ciphertexts_from_bytes(key.public, raw)
    slot = (1 << layout.slot_bits) - 1
    return np.array(
        [[(int(key.decrypt(c)) >> (layout.slot_bits * s)) & slot for s in range(WE)] for c in cts],
        dtype=object,
    )


def test_the_dealer_attack_recovers_rows_the_paillier_product_does_not_open(keys):
    """With the dealer, the server knows the mask U it dealt, so it and the receiver recover
    the sender's rows X = (X - U) + U exactly. Without a dealer there is no mask to add: the
    server dealt nothing, and E's rows open only under E's key, which no coalition of the
    server and G holds. E's key opens them (the control); G's own key (its n is the larger,
    so the same integers can be read under it) opens no row to a one-hot one."""
    e, g = _tables(0)
    onehot = np.zeros((ROWS, WE), dtype=np.uint64)
    onehot[np.arange(ROWS)[e[:, 0] >= 0], e[e[:, 0] >= 0, 0]] = 1
    seed_u = bytes(range(32))  # the dealer's seed of E's mask, known to the server
    sent = DealerProduct().sent(e, seed_u, RowMask.U, 0, ROWS, WE, np.uint64)
    recovered = sent + row_mask(seed_u, RowMask.U, 0, ROWS, WE, np.uint64)
    np.testing.assert_array_equal(recovered, onehot)  # the dealer backend: every row

    small, big = sorted(keys.values(), key=lambda k: k.public.n)
    layout = SlotLayout.for_rows(255, BITS, kappa=20)
    rows = _run(small, e, g)["rows"]
    opened = _open_rows(rows, small, layout)  # the control: the encrypter's key
    np.testing.assert_array_equal(opened.astype(np.uint64), onehot)
    cts = pl.ciphertexts_from_bytes(small.public, rows)
    as_big = pl.ciphertexts_to_bytes(big.public, cts)  # the same integers, read under big's n
    attempt = _open_rows(as_big, big, layout)
    assert not (attempt <= 1).all(axis=1).any()  # no row opens to 0s and 1s


def test_a_coalition_with_the_key_holder_sees_only_what_a_simulator_makes(keys):
    """Server + E: its view (E's inputs, G's reply, both noisy shares, the release) is made
    exactly, compared by digest, from E's inputs, the release and G's randomness alone (its
    masks M, its noise, and each reply's total exponent t = sum of E's exponents + G's). No
    input of the simulator is G's table. G's masks and noise are drawn from G's keyed streams
    independently of its table; t is G's exponent (kappa bits wider than any sum of E's)
    shifted by a sum E knows, so it is within 2^-kappa of independent of G's table
    (statistical smudging): the view's distribution depends on G's table only through the
    release, to within 2^-kappa."""
    key = keys["E"]
    pub, layout = key.public, SlotLayout.for_rows(255, BITS, kappa=20)
    for seed in (2, 3):
        e, g = _tables(seed)
        real = _run(key, e, g)
        coalition = {k: real[k] for k in ("public-key", "rows", "reply", "e-to-server",
                                          "g-to-server", "release")}  # fmt: skip
        # G's randomness, as G's streams give it (no table of G's enters here) ...
        k_g = pp.stream_key(b"G" * 32, pp.MASKS, "run", "pair")
        masks = draw_masks(layout, k_g, (WG, WE))
        bits = pp.reply_bits(layout)
        own = pl.exponents(k_g, pp.MASK_START, WG, bits)
        # ... and each reply's total exponent: G's, shifted by the sum of E's exponents of
        # the rows G put in that accumulator (E knows every one of its exponents).
        k_e = pp.stream_key(b"E" * 32, pp.RANDOMISERS, "run", "pair")
        e_exp = pl.exponents(k_e, 0, ROWS)
        shift = [sum(x for x, v in zip(e_exp, g[:, 0], strict=True) if v == w) for w in range(WG)]
        assert max(shift) < 1 << (pl.EXPONENT_BITS + layout.count_bits) <= 1 << (bits - 20)
        total = [s + t for s, t in zip(shift, own, strict=True)]

        release = np.frombuffer(real["release"], dtype=np.uint64).reshape(WG, WE)
        counts = release - _noise("E") - _noise("G")  # what the release and the tapes give
        plain = counts + masks
        reply = [
            (1 + sum(gmpy2.mpz(int(x)) << (layout.slot_bits * s) for s, x in enumerate(row))
             * pub.n) * gmpy2.powmod(pub.hs, t, pub.n2) % pub.n2
            for row, t in zip(plain.tolist(), total, strict=True)
        ]  # fmt: skip
        rows = pp.encrypted_rows(pub, pp.computed(pl.randomiser_table(pub), k_e), layout, e, WE, 0)
        simulated = {
            "public-key": pub.to_bytes(),
            "rows": rows,
            "reply": pl.ciphertexts_to_bytes(pub, reply),
            "e-to-server": (plain + _noise("E")).tobytes(),
            "g-to-server": ((np.uint64(0) - masks) + _noise("G")).tobytes(),
            "release": real["release"],
        }
        assert _digest(simulated) == _digest(coalition)
        np.testing.assert_array_equal(counts, _counts(e, g))  # the release is the counts + noise


def test_a_coalition_with_the_aggregator_sees_ciphertexts_and_what_the_release_gives(keys):
    """Server + G: every value of its view but E's rows is made exactly (by digest) from G's
    inputs and tape and the release; E's rows are replaced by encryptions of zero, which are
    indistinguishable from them under E's key (decisional composite residuosity, and the
    short-exponent assumption of the randomisers): that part is computational, not tested."""
    key = keys["E"]
    pub, layout = key.public, SlotLayout.for_rows(255, BITS, kappa=20)
    e, g = _tables(4)
    real = _run(key, e, g)
    zeros = np.full((ROWS, 1), -1)
    k_sim = pp.stream_key(b"S" * 32, pp.RANDOMISERS, "simulator")
    fake_rows = pp.encrypted_rows(
        pub, pp.computed(pl.randomiser_table(pub), k_sim), layout, zeros, WE, 0
    )
    assert len(fake_rows) == len(real["rows"]) and fake_rows != real["rows"]
    k_g = pp.stream_key(b"G" * 32, pp.MASKS, "run", "pair")
    masks = draw_masks(layout, k_g, (WG, WE))
    g_to_server = (np.uint64(0) - masks) + _noise("G")
    release = np.frombuffer(real["release"], dtype=np.uint64).reshape(WG, WE)
    simulated = {
        "g-to-server": g_to_server.tobytes(),
        "e-to-server": (release - g_to_server).tobytes(),
        "release": real["release"],
    }
    assert _digest(simulated) == _digest({k: real[k] for k in simulated})
    # G's reply is its own function of the rows it received: on the simulated rows it is
    # the same computation (and its decryption, which G never sees, would be the masks).
    reply, _ = pp.masked_reply(pub, pl.randomiser_table(pub), layout, [(0, ROWS, fake_rows)],
                               g, WE, [WG], k_g)  # fmt: skip
    opened = pp.encrypter_shares(key, layout, reply, (WE, WG))
    np.testing.assert_array_equal(opened, masks)
