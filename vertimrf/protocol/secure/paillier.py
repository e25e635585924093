"""The dealer-free product's messages (the config's ``product`` "paillier"): who encrypts in
each pair, and every blob's shape, from the plan's public values alone. Each blob is a
feature blob (:mod:`vertimrf.protocol.secure.features`) of bytes, one row a ciphertext:

- ``features``, E to G: E's Paillier public key in the first :func:`key_rows` rows, then
  E's rows, ``per_row(k_E)`` ciphertexts each; G to E: no rows.
- ``reply``, G to E: G's masked accumulators, k_G x per_row(k_E); E to G: no rows.
- ``groups``, E to G: E's round-2 groups' rows, per_row(w_E) ciphertexts each (none without
  groups); G to E: no rows.
- ``group-reply``, G to E: E's round-1 rows by G's groups (w_G x per_row(k_E)), then E's
  round-2 rows by G's singles and groups ((k_G + w_G) x per_row(w_E)); E to G: no rows.
- with coins, ``features-coins`` and ``groups-coins``, E to G: E's coins, a slot column of
  cells at a time, a ciphertext a coin (coins x per_row(cells)); G to E: no rows. G's coin
  reply, one ciphertext a cell, ends its ``reply`` and ``group-reply``.

An empty blob still carries its sender's record-set digest and nonce, so both ends of a pair
check one another and bind their pads as with the dealer."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from vertimrf.crypto.paillier import KEY_BITS, ciphertext_bytes, public_key_bytes
from vertimrf.crypto.paillier_slots import SlotLayout, joint_blocks
from vertimrf.errors import ConfigError
from vertimrf.protocol.secure.features import coin_shape, feature_blob_bytes
from vertimrf.protocol.secure.plan import Layout, SecurePlan

NAME = "paillier"
WORD = np.uint8  # a blob's values: a ciphertext's bytes, one row a ciphertext
CIPHERTEXT = ciphertext_bytes(KEY_BITS)
ROWS = 2048  # E's rows encrypted, and read by G, at a time
COIN_BLOCK = 2048  # E's coin ciphertexts made, or read by G, at a time
SUBSET_BITS = 4  # G's coins: a table of the products of every subset of this many ciphertexts
TABLE_BYTES = 64 << 20  # E's CRT randomiser tables toward one peer (57 MB measured)
PUBLIC_TABLE_BYTES = 8 << 20  # G's fixed-base table of E's key (4.4 MB measured)
HELD = 4 * CIPHERTEXT  # a ciphertext held: its bytes, its integer, a product before reduction
COIN_HELD = 4  # bytes a coin of a cell drawn: its bit, its stream, a copy (bound)
# Seconds per operation on one core of this machine (2 cores, AMD EPYC), measured by
# benchmarks/bench_paillier_cost.py (benchmarks/results/paillier_cost.json): the plan's
# estimates of each role's time.
RATES: Mapping[str, float] = {
    "randomiser": 7.8e-5,  # E's h_s^e by its CRT tables
    "encrypt": 3.7e-6,
    "to_bytes": 7.6e-7,
    "from_bytes": 9.0e-7,
    "product": 3.76e-6,  # a product mod n^2
    "joint_per_row": 2.4e-5,  # a row into G's buckets (the bucket products included)
    "reply_randomiser": 1.6e-4,
    "mask": 1.7e-5,
    "decrypt": 2.25e-3,
}
# The dealing arrangements this product runs with.
DEALERS = ("server",)


def slot_layout(plan: SecurePlan) -> SlotLayout:
    """The run's slots: counts of up to ``plan.rows`` rows under a KEY_BITS key."""
    return SlotLayout.for_rows(plan.rows, KEY_BITS)


def check(plan: SecurePlan, dealer: str) -> None:
    """ConfigError for what this product does not run, before any budget is spent."""
    slot_layout(plan)  # ConfigError when max_rows leaves no room for the masks
    if plan.cross_noise.weight not in (0.0, 1.0):
        raise ConfigError(
            "product 'paillier' takes coins with coin_weight 1 (the server with a party then "
            f"faces the coins' sigma^2, as every viewer does), not {plan.cross_noise.weight}: "
            "drop --coin-weight, or use cross_noise 'split'."
        )
    if dealer not in DEALERS:
        raise ConfigError(
            "product 'paillier' needs no dealer; dealer 'own' adds a role it never uses: "
            "drop the dealer setting."
        )


def encrypter(
    layout: SlotLayout, widths: tuple[int, int], sizes: tuple[Sequence[int], Sequence[int]]
) -> int:
    """0 or 1: which of the pair's two parties (one-hot ``widths``, attribute ``sizes``)
    encrypts. Fewest ciphertexts a row first (E's bytes), then fewest products for G (rows
    x G's runs of :func:`~vertimrf.crypto.paillier_slots.joint_blocks` x ciphertexts a
    row); the lower party on a tie."""

    def cost(e: int) -> tuple[int, int]:
        per = layout.per_row(widths[e])
        return per, len(joint_blocks(sizes[1 - e])) * per

    return 1 if cost(1) < cost(0) else 0


def message_bytes(layout: SlotLayout, rows: int, widths: tuple[int, int]) -> tuple[int, int]:
    """Bytes of the ciphertexts E sends G (its rows) and G sends E (its masked accumulators)
    for one product of ``rows`` rows and one-hot ``widths`` (E's, G's)."""
    size = ciphertext_bytes(layout.key_bits)
    per = layout.per_row(widths[0])
    return rows * per * size, widths[1] * per * size


def pair_encrypter(plan: SecurePlan, a: int, b: int) -> int:
    """The index of the party that encrypts in the pair a < b."""
    sizes = tuple([plan.sizes[x] for x in plan.attrs[p]] for p in (a, b))
    e = encrypter(slot_layout(plan), (plan.widths[a], plan.widths[b]), (sizes[0], sizes[1]))
    return (a, b)[e]


def key_rows(per: int) -> int:
    """Rows of E's public key at the head of its features: whole ciphertext rows, a whole
    number of E's rows (``per`` ciphertexts each), so E's rows start on a block."""
    rows = -(-public_key_bytes(KEY_BITS) // CIPHERTEXT)
    return per * -(-rows // per)


def blob_bytes(rows: int) -> int:
    """The length of a blob of ``rows`` ciphertexts."""
    return feature_blob_bytes((rows, CIPHERTEXT), WORD, 1)


def features_rows(plan: SecurePlan, sender: int, receiver: int) -> int:
    """Ciphertexts in ``sender``'s features to ``receiver``."""
    a, b = sorted((sender, receiver))
    if pair_encrypter(plan, a, b) != sender:
        return 0
    per = slot_layout(plan).per_row(plan.widths[sender])
    return key_rows(per) + plan.rows * per


def reply_rows(plan: SecurePlan, sender: int, receiver: int) -> int:
    """Ciphertexts in ``sender``'s reply to ``receiver``."""
    a, b = sorted((sender, receiver))
    if pair_encrypter(plan, a, b) != receiver:
        return 0
    return plan.widths[sender] * slot_layout(plan).per_row(plan.widths[receiver])


def group_widths(plan: SecurePlan, layout: Layout | None, p: int, q: int) -> int:
    """Party p's round-2 columns toward q: the layout's, or at most its cap (None)."""
    return plan.group_caps[p] if layout is None else layout.width(p, q)


def groups_rows(plan: SecurePlan, sender: int, receiver: int, layout: Layout | None = None) -> int:
    """Ciphertexts in ``sender``'s round-2 groups to ``receiver`` (``layout``: the
    request's; None: the most any request may need)."""
    a, b = sorted((sender, receiver))
    width = group_widths(plan, layout, sender, receiver)
    if pair_encrypter(plan, a, b) != sender or not width:
        return 0
    return plan.rows * slot_layout(plan).per_row(width)


def group_reply_rows(
    plan: SecurePlan, sender: int, receiver: int, layout: Layout | None = None
) -> int:
    """Ciphertexts in ``sender``'s round-2 reply to ``receiver`` (``layout`` as for
    :func:`groups_rows`)."""
    a, b = sorted((sender, receiver))
    if pair_encrypter(plan, a, b) != receiver:
        return 0
    slots = slot_layout(plan)
    mine, theirs = (
        group_widths(plan, layout, *x) for x in ((sender, receiver), (receiver, sender))
    )
    first = mine * slots.per_row(plan.widths[receiver])
    second = (plan.widths[sender] + mine) * slots.per_row(theirs) if theirs else 0
    return first + second


def coin_rows(
    plan: SecurePlan, sender: int, receiver: int, shape: tuple[int, int] | None = None
) -> int:
    """Ciphertexts in ``sender``'s coins to ``receiver`` (cross_noise "coins"): E's coins,
    a slot column of cells at a time, a ciphertext a coin; ``shape`` (cells, coins a cell):
    the release's (None: the first release's)."""
    a, b = sorted((sender, receiver))
    cells, coins = shape or coin_shape(plan, a, b, first=True)
    if pair_encrypter(plan, a, b) != sender or not cells:
        return 0
    return coins * slot_layout(plan).per_row(cells)


def group_coin_rows(plan: SecurePlan, sender: int, receiver: int) -> int:
    """The most ciphertexts in ``sender``'s coins of a re-measurement to ``receiver``."""
    return coin_rows(plan, sender, receiver, coin_shape(plan, sender, receiver, first=False))


def coin_bytes(plan: SecurePlan, sender: str, receiver: str, *, first: bool) -> int:
    """The most bytes of coins either way between the two parties in the first release or
    at most in a re-measurement (``first``): E's encrypted coins, or G's coin reply."""
    p, q = plan.party_index(sender), plan.party_index(receiver)
    shape = coin_shape(plan, p, q, first=first)
    e_rows = max(coin_rows(plan, p, q, shape), coin_rows(plan, q, p, shape))
    return max(blob_bytes(e_rows), blob_bytes(shape[0]) if shape[0] else 0)


def coin_reply_rows(plan: SecurePlan, sender: int, receiver: int, cells: int) -> int:
    """Ciphertexts after a reply's accumulators: G's coin reply, one a cell (none from E,
    or without coins)."""
    a, b = sorted((sender, receiver))
    return cells if plan.cross_noise.weight and pair_encrypter(plan, a, b) == receiver else 0


def first_reply_rows(plan: SecurePlan, sender: int, receiver: int) -> int:
    """Ciphertexts in ``sender``'s reply to ``receiver``, its coin reply included."""
    cells = coin_shape(plan, sender, receiver, first=True)[0]
    return reply_rows(plan, sender, receiver) + coin_reply_rows(plan, sender, receiver, cells)


def most_group_reply_rows(plan: SecurePlan, sender: int, receiver: int) -> int:
    """The most ciphertexts in ``sender``'s round-2 reply to ``receiver``, its coin reply
    included."""
    cells = coin_shape(plan, sender, receiver, first=False)[0]
    rows = group_reply_rows(plan, sender, receiver)
    return rows + coin_reply_rows(plan, sender, receiver, cells)


def round_bytes(plan: SecurePlan, sender: int, receiver: int) -> tuple[int, int]:
    """The most bytes ``sender`` sends ``receiver`` in round 1 (features, coins and reply)
    and in round 2 (groups, coins and reply)."""
    one = blob_bytes(features_rows(plan, sender, receiver))
    one += blob_bytes(first_reply_rows(plan, sender, receiver))
    two = blob_bytes(groups_rows(plan, sender, receiver))
    two += blob_bytes(most_group_reply_rows(plan, sender, receiver))
    if plan.cross_noise.weight:
        one += blob_bytes(coin_rows(plan, sender, receiver))
        two += blob_bytes(group_coin_rows(plan, sender, receiver))
    return one, two


def party_bytes(plan: SecurePlan, p: int) -> int:
    """What party ``p`` holds for this product in any one step, beyond the step's base and
    its records: its tables (E's toward each peer it encrypts for, G's of each peer's key),
    and the most of one pair's: a block of rows encrypted or read, G's buckets, a reply
    read whole, and coins (one slot column of cells' coins drawn whole, a block of coin
    ciphertexts, an accumulator a cell)."""
    layout, tables, most = slot_layout(plan), 0, 0
    for q in range(len(plan.names)):
        if q == p:
            continue
        a, b = min(p, q), max(p, q)
        e = pair_encrypter(plan, a, b)
        g = a + b - e
        tables += TABLE_BYTES if e == p else PUBLIC_TABLE_BYTES
        per = max(layout.per_row(plan.widths[e]), -(-groups_rows(plan, e, g) // plan.rows))
        sizes = [plan.sizes[x] for x in plan.attrs[g]]
        buckets = per * sum(math.prod(sizes[x] + 1 for x in run) for run in joint_blocks(sizes))
        replies = max(first_reply_rows(plan, g, e), most_group_reply_rows(plan, g, e))
        coins = 0
        for first in (True, False):
            cells, n = coin_shape(plan, a, b, first=first)
            if cells and plan.cross_noise.weight:
                column = min(cells, layout.slots) * n * COIN_HELD
                coins = max(coins, column + (COIN_BLOCK + cells) * HELD)
        most = max(most, (ROWS * per + buckets + replies) * HELD + coins)
    return tables + most


def products(rows: int, per: int, sizes: Sequence[int]) -> int:
    """G's products mod n^2 in its buckets: one a row, run and ciphertext, then one a
    non-absent value of each attribute of each run's joint cells and ciphertext."""
    total = 0
    for block in joint_blocks(sizes):
        cells = math.prod(sizes[a] + 1 for a in block)
        total += rows * per + per * sum(cells // (sizes[a] + 1) * sizes[a] for a in block)
    return total


def seconds(
    rows: int, slots: SlotLayout, sizes_e: Sequence[int], sizes_g: Sequence[int],
    rates: Mapping[str, float] = RATES,
) -> dict[str, float]:  # fmt: skip
    """One product's seconds at ``rates``: E's randomisers (made before the data, or
    online), E's other work (encrypt, decrypt) and G's (aggregate, mask, reply)."""
    per = slots.per_row(sum(sizes_e))
    cts, accs = rows * per, sum(sizes_g) * per
    bucketed = products(rows, per, sizes_g) - rows * per * len(joint_blocks(sizes_g))
    return {
        "e_randomisers": cts * rates["randomiser"],
        "e_online": cts * (rates["encrypt"] + rates["to_bytes"])
        + accs * (rates["decrypt"] + rates["from_bytes"]),
        "g_online": cts * rates["from_bytes"] + rows * rates["joint_per_row"]
        + bucketed * rates["product"]
        + accs * (rates["reply_randomiser"] + rates["mask"] + rates["to_bytes"]),
    }  # fmt: skip


def subset_bits(cells: int) -> int:
    """Coins a subset table of G's covers in a column of ``cells`` cells: SUBSET_BITS when
    its 2^t - t - 1 products cost less than a product a coin that is 1 of each cell saves,
    else 1 (one coin at a time)."""
    return SUBSET_BITS if cells > (1 << SUBSET_BITS) - SUBSET_BITS - 1 else 1


def coin_products(cells: int, coins: int, slots: int) -> float:
    """G's expected products mod n^2 for ``coins`` coins of ``cells`` cells, ``slots`` cells
    a column: each column's subset tables and one product a cell and table (when not
    empty)."""
    total = 0.0
    for c0 in range(0, cells, slots):
        column, t = min(slots, cells - c0), subset_bits(min(slots, cells - c0))
        per_table = (1 << t) - t - 1 + column * (1 - 2.0**-t)
        total += -(-coins // t) * per_table
    return total


def _coin_seconds(plan: SecurePlan, e: int, g: int, rates: Mapping[str, float] = RATES) -> str:
    """With coins: the estimated seconds of the first release's coins at each side."""
    cells, coins = coin_shape(plan, e, g, first=True)
    if not plan.cross_noise.weight or not cells:
        return ""
    cts = coin_rows(plan, e, g)
    t_e = cts * (rates["randomiser"] + rates["encrypt"]) + cells * rates["decrypt"]
    t_g = coin_products(cells, coins, slot_layout(plan).slots) * rates["product"]
    t_g += cells * (rates["reply_randomiser"] + rates["mask"])
    return (
        f"; the first release's coins add about {t_e:,.0f} s of {plan.names[e]}'s and "
        f"{t_g:,.0f} s of {plan.names[g]}'s"
    )


def plan_lines(plan: SecurePlan) -> tuple[str, ...]:
    """The plan's lines for each pair: who encrypts, the bytes each way in round 1 and the
    estimated seconds of each side's round-1 product on one core of this machine."""
    faces = (
        "the coins' sigma^2, as every viewer does"
        if plan.cross_noise.weight
        else "sigma^2 / 2: it knows two of a cross count's three noise components"
    )
    out = [
        "product paillier: no role deals, so the server together with one party is a viewer "
        f"too; it faces {faces} (the report prints its epsilon)"
    ]
    slots = slot_layout(plan)
    for a, b in plan.pairs():
        e = pair_encrypter(plan, a, b)
        g = b if e == a else a
        sizes = [[plan.sizes[x] for x in plan.attrs[p]] for p in (e, g)]
        t = seconds(plan.rows, slots, sizes[0], sizes[1])
        sent = blob_bytes(features_rows(plan, e, g))
        back = blob_bytes(reply_rows(plan, g, e))
        out.append(
            f"product paillier, {plan.names[e]} and {plan.names[g]}: {plan.names[e]} encrypts "
            f"({sent:,} bytes to {plan.names[g]}, {back:,} back); about "
            f"{t['e_randomisers'] + t['e_online']:,.0f} s of {plan.names[e]}'s time (of them "
            f"{t['e_randomisers']:,.0f} s of randomisers) and {t['g_online']:,.0f} s of "
            f"{plan.names[g]}'s, one core of the machine measured (round 1; round 2 adds the "
            "groups)" + _coin_seconds(plan, e, g)
        )
    return tuple(out)


# Each blob's ciphertexts by its message kind (the schedule's limits): exact in round 1,
# at most in round 2 (any request).
ROWS_BY_KIND = {
    "features": features_rows,
    "reply": first_reply_rows,
    "groups": groups_rows,
    "group-reply": most_group_reply_rows,
    "features-coins": coin_rows,
    "groups-coins": group_coin_rows,
}
EXACT_KINDS = frozenset({"features", "reply", "features-coins"})
