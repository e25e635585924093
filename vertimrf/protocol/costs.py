"""What each role of a run costs, from the config alone: bytes sent and kept,
peak memory; design notes in docs/design/protocol.md."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from vertimrf.crypto.kdf import NONCE_BYTES, TAG_BYTES
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.methods import rules
from vertimrf.protocol.secure import paillier
from vertimrf.protocol.secure.features import coin_blob_bytes
from vertimrf.protocol.secure.plan import SecurePlan
from vertimrf.protocol.secure.slot_map import slot_map_bytes
from vertimrf.protocol.secure.widths import MASK_BLOCK_WORDS
from vertimrf.protocol.secure.wire import DIGEST_BYTES, ROW_BLOCK_WORDS, SEED_BYTES, SLOT_BLOCK
from vertimrf.protocol.seeds import DEALER

BASE_BYTES = 256 << 20  # an idle role process: Python, numpy, pandas, cryptography (measured)
BLOB_OVERHEAD = DIGEST_BYTES + NONCE_BYTES + TAG_BYTES  # a feature blob beyond 8 R k_p
SEAL_OVERHEAD = 1 + 32 + NONCE_BYTES + TAG_BYTES  # a sealed deal beyond its archive
ARCHIVE_ENTRY_BYTES = 512  # upper bound of one array's zip and .npy headers in an archive
CONTAINER_BYTES = 4096  # a container's manifest, checksum and directory (upper bound)
MODEL_BYTES_PER_CELL = 64  # a fit: ~6 float64 arrays per model cell (44.9 MiB for 980,592)
OUTPUT_BYTES_PER_CELL = 40  # a synthetic cell: sampled codes, decoded frame, CSV text
OUTPUT_CHUNK_ROWS = 65_536  # synthetic rows sampled and written at once (mrf SAMPLE_CHUNK)
ALIGN_PART_ROWS = 1 << 20  # records a party aligns at once from its file (party.records.file_table)


@dataclass(frozen=True)
class RoleCost:
    """One role's costs: bytes it sends in all, bytes of its private state between steps,
    and the estimated peak memory of each of its steps (bytes)."""

    role: str
    sends: int
    keeps: int
    steps: Mapping[str, int]
    note: str = ""

    @property
    def step(self) -> str:
        """The step with the largest estimated peak."""
        return max(self.steps, key=self.steps.__getitem__)

    @property
    def peak(self) -> int:
        """The role's estimated peak memory (bytes)."""
        return self.steps[self.step]


def secure_roles(config: ProtocolConfig, plan: SecurePlan) -> tuple[RoleCost, ...]:
    """Every role's costs in a secure run (the module doc's memory model)."""
    rows, widths, caps, names = plan.rows, plan.widths, plan.group_caps, plan.names
    wire, held = plan.word_bytes, 8 if plan.ring_bits > 32 else 4  # in a blob, in memory
    m = len(names)
    slot_block = min(plan.max_tokens, SLOT_BLOCK)  # 0 unless the record sets are partial
    pairs = plan.pairs()
    full = [k + c for k, c in zip(widths, caps, strict=True)]

    def row_block(width: int) -> int:  # a row block of values streamed in or out
        return held * min(rows * width, max(ROW_BLOCK_WORDS, width))

    dealt = [sum(widths[a] * widths[q] for a, q in pairs if q == p) for p in range(m)]
    shares = [sum(widths[a] * widths[b] for a, b in pairs if p in (a, b)) for p in range(m)]
    grown = [sum(plan.max_cells(a, b) for a, b in pairs if p in (a, b)) for p in range(m)]
    largest = [max(widths[a] * widths[b] for a, b in pairs if p in (a, b)) for p in range(m)]
    first = plan.first_release()
    tables = sum(plan.cells(mg) for mg in first)
    cap = rules(config).model_cap(config)
    # cross_noise "coins": a block of coins at a time (bits, mask, words sent or read, dots)
    tossing = plan.first_coins
    coin_peak = 40 * MASK_BLOCK_WORDS if tossing else 0
    roles = []
    for p, name in enumerate(names):
        d_p = len(plan.attrs[p])
        columns = min(rows, ALIGN_PART_ROWS) * (3 * d_p + 80)  # a part of the rows aligned
        # partial record sets: the slot map read by blocks, and the records laid out a part
        # at a time (a block's tokens, fingerprints, codes, list positions and slots, and
        # its records scattered to the slot parts)
        slots = 32 * slot_block + min(plan.max_tokens, ALIGN_PART_ROWS) * (2 * d_p + 112)
        peer = max(widths[q] for q in range(m) if q != p)
        steps = {
            "features": BASE_BYTES
            + 8 * 4 * dealt[p]
            + columns
            + slots
            + max(3 * row_block(widths[p]), coin_peak),
            "release": BASE_BYTES
            + 8 * (2 * dealt[p] + shares[p] + 3 * largest[p])
            + columns
            + slots
            + max(4 * row_block(max(widths[p], peer)), coin_peak),
        }
        steps.update(plan.sets.token_steps(BASE_BYTES + columns))
        if plan.select:
            steps["groups"] = BASE_BYTES + columns + slots + max(6 * row_block(caps[p]), coin_peak)
            steps["measure"] = (
                BASE_BYTES
                + 8 * 3 * grown[p]
                + columns
                + slots
                + max(10 * row_block(max(full)), coin_peak)
            )
        else:
            steps["local"] = local_peak(config, d_p)
        if config.product == paillier.NAME:  # its steps hold tables, blocks, replies, coins
            product = BASE_BYTES + columns + slots + paillier.party_bytes(plan, p)
            rounds = ["features", "reply", "release"]
            if plan.select:
                rounds += ["groups", "group-reply", "measure"]
            for step in rounds:
                steps[step] = max(steps.get(step, 0), product)
        own = sum(plan.cells(mg) for mg in first if p in {plan.owner[a] for a in mg})
        blobs = wire * rows * (widths[p] + caps[p]) + 2 * BLOB_OVERHEAD
        peers = [q for q in names if q != name]
        coins = sum(coin_blob_bytes(plan, name, q, first=True) for q in peers) if tossing else 0
        if config.product == paillier.NAME:  # ciphertexts one way, replies the other
            blobs_sent = sum(sum(paillier.round_bytes(plan, p, q)) for q in range(m) if q != p)
            coins = 0  # in its rounds' bytes
        else:
            blobs_sent = (m - 1) * blobs
        sends = blobs_sent + coins + 8 * (own + grown[p] + plan.max_tokens) + 2 * CONTAINER_BYTES
        keeps = state_bytes(shares[p]) if plan.select else 0
        roles.append(RoleCost(name, sends, keeps, steps))
    total = sum(dealt)
    block = min(rows * sum(full), MASK_BLOCK_WORDS + sum(full))
    max_cells = sum(plan.max_cells(a, b) for a, b in pairs)
    server = {
        "deal": BASE_BYTES
        + 8 * (2 * total + 2 * max(dealt) + 2 * max(max(largest), 1))
        + 16 * block
        + 160 * m * slot_block,
        "synthesize": BASE_BYTES
        + 24 * tables
        + MODEL_BYTES_PER_CELL * int(cap)
        + OUTPUT_BYTES_PER_CELL * min(rows, OUTPUT_CHUNK_ROWS) * len(plan.sizes),
    }
    if plan.select:
        server["select"] = BASE_BYTES + 8 * (4 * tables + int(cap) + 3 * max_cells) + 24 * block
    deals = sum(deal_bytes(plan).values())
    if plan.max_tokens:  # partial record sets: every party's slot map
        deals += m * slot_map_bytes(plan.max_tokens)
    keeps = state_bytes(tables) + 64 * len(first) if plan.select else 0
    if config.dealer_role == DEALER:  # a dealer of its own deals; the server only fits
        roles.append(RoleCost(DEALER, deals, 0, {"deal": server.pop("deal")}))
        deals = 0
    roles.append(RoleCost("server", deals, keeps, server))
    return tuple(roles)


def state_bytes(words: int) -> int:
    """Upper bound of a container holding ``words`` 8-byte words (deflate adds at most 5
    bytes per 64 KiB block of incompressible data)."""
    return 8 * words + 8 * words // 8192 + CONTAINER_BYTES


def deal_bytes(plan: SecurePlan) -> dict[str, int]:
    """Upper bound of each party's sealed deal: its mask seed, a W seed per higher peer and
    a Z matrix per lower peer (and its slot map's key, digests and count, with partial
    record sets), each an archive entry."""
    out = {}
    for p, name in enumerate(plan.names):
        higher = [q for a, q in plan.pairs() if a == p]
        lower = [a for a, q in plan.pairs() if q == p]
        words = sum(plan.widths[a] * plan.widths[p] for a in lower)
        slot_map = 4 if plan.max_tokens else 0  # key, digest, count and assignment
        entries = 1 + len(higher) + len(lower) + slot_map
        out[name] = (
            8 * words
            + (3 * DIGEST_BYTES + 8) * (slot_map > 0)
            + SEED_BYTES * (1 + len(higher))
            + ARCHIVE_ENTRY_BYTES * entries
            + 22
            + SEAL_OVERHEAD
        )
    return out


def local_peak(config: ProtocolConfig, columns: int) -> int:
    """A party's local PrivMRF and message: its model cap and, with max_rows, its table."""
    rows = config.max_rows or 0
    return int(
        BASE_BYTES
        + MODEL_BYTES_PER_CELL * config.paper_options().local_max_total_cells
        + 8 * 4 * rows * columns
    )


def local_roles(config: ProtocolConfig) -> tuple[RoleCost, ...]:
    """Costs of method fo / fm (coarse: the model caps; the table's share needs max_rows)."""
    rows = config.max_rows
    note = "" if rows else "plus the data table: give max_rows to count it"
    options = config.paper_options()
    roles = []
    for p in config.parties:
        d_p = len(p.columns)
        payload = 8 * rules(config).payload_words(config, d_p, rows)
        sends = payload + int(8 * options.local_max_total_cells) + CONTAINER_BYTES
        roles.append(RoleCost(p.name, sends, 0, {"local": local_peak(config, d_p)}, note))
    cells = max(options.max_model_cells, options.tau)
    peak = int(
        BASE_BYTES
        + MODEL_BYTES_PER_CELL * cells
        + OUTPUT_BYTES_PER_CELL * min(rows or 0, OUTPUT_CHUNK_ROWS) * len(config.spec)
    )
    roles.append(RoleCost("server", 0, 0, {"synthesize": peak}, note))
    return tuple(roles)
