"""What each role of a run costs, from the config alone: the bytes it sends and keeps and the
peak memory of each of its steps (:class:`RoleCost`), which
:func:`vertimrf.protocol.plan.run_plan` sums up.

The memory model (bytes; R = max_rows, k_p = party p's round-1 width (its singles), c_p its
round-2 cap toward one peer, f_p = k_p + c_p, d_p its attributes, w the bytes of a ring
value in a blob (r / 8), Z_p = sum over lower parties q of k_q k_p words dealt to p, S_p =
sum over p's pairs of k_p k_q share words, S'_p the same at f_p f_q, BASE = 256 MiB for an
idle role process, and L(x) = h min(R x, max(ROW_BLOCK_WORDS, x)) one row block of ring
values x wide in memory (h = 4 or 8 bytes each): a party streams every feature blob in and
out by blocks of whole rows of at most ROW_BLOCK_WORDS values, so no R x k matrix of ring
values exists; a block's int64 column indices and the mask's zero input count as one or
two L each; C_p = min(R, PART) (3 d_p + 80) bytes for aligning the party's table from its
file, PART = ALIGN_PART_ROWS records at a time (:mod:`vertimrf.party.records.file_table`: a part's
records, their sorted copy, order and PRF values; a batch of the input in the pass before
weighs less) follows the code's large arrays. It is the cost of a role command (a driver
with a state folder, the table in a file). Through the Python API, a table given in memory
costs R (2 d_p + 80) instead of C_p (its codes and row slots, and while they are aligned the
IDs' fingerprints, PRF values, order and ranks), and a caller that holds a sealed blob adds
w R k_p (round 2: w R c_p).

* party features: BASE + 32 Z_p + C_p + 3 L(k_p): the deal opened, the aligned rows' part
  being sorted, a block of the mask, its zero input and its packed values (each peer's blob
  is sealed from blocks of X - U into its kept copy as it is made);
* partial record sets (T = max_tokens, the records and every dummy; K = min(T, SLOT_BLOCK)):
  the table's records are sorted by token and laid out at their slots a part at a time
  (:mod:`vertimrf.party.records.slot_file`), which C_p covers (a part's records, their sorted copy,
  order and keys); party tokens: BASE + C_p (the token list is written by blocks); every
  step that may lay the records out (features, and release, groups and measure in a process
  that does not find the layout kept) adds 32 K + min(T, PART) (2 d_p + 112): the slot map
  read by blocks (a block decrypted and its slots) and a part of the records laid out at
  once (their tokens, fingerprints, codes, list positions and slots, and the records
  scattered to the slot parts: measured about 105 MiB for 2^20 records of 5 columns); a
  table given in memory through the Python API reads its slots whole, 8 T more;
* party release: BASE + 8 (2 Z_p + S_p + 3 max k_p k_q) + C_p + 4 L(max k): one peer's
  blob mapped and read by blocks (the pages read are dropped), the shares and one block's
  product, a block of the mask and of the blob's values;
* party groups: BASE + C_p + 6 L(c_p): the aligned rows, a block of the round-2 blob's
  group columns and mask;
* party measure: BASE + 24 S'_p + C_p + 10 L(max f): the grown shares, the columns, one
  peer's blobs of both rounds mapped and read by the same row blocks (pages dropped as
  read; their values side by side, the masks of both rounds, the group columns);
* server deal: BASE + 8 (2 sum Z + 2 max Z_p + 2 max k_p k_q) + 16 B, B = min(R sum k,
  MASK_BLOCK_WORDS + sum k): every Z, the sealed deals, one deal's archive and ciphertext,
  one block of masks; with partial record sets, + 160 m K: the token lists merged by
  blocks of K tokens each (:mod:`vertimrf.server.slots`: each list's block read, the merged
  block, its distinct tokens, regions and ranks, about 48 bytes a token) and the keyed
  permutation of a block's ranks (its Feistel halves and AES blocks, about 112 bytes a
  value); the token lists are read in place and each party's slot map is written to a
  file as it is made, so nothing grows with R;
* server select: BASE + 8 (4 C + cap + 3 sum f_p f_q) + 24 B, C the cells of every
  first-release table and cap the server's model cap (the round-2 deals: every Z and one
  block of masks); synthesize: BASE + 24 C + MODEL_BYTES_PER_CELL cap +
  OUTPUT_BYTES_PER_CELL min(R, OUTPUT_CHUNK_ROWS) d (one chunk of the synthetic table as
  sampled, decoded and written);
* the paper pipeline: no measure and no select; a party's `local` step and methods fo / fm
  cost the local model cap (MODEL_BYTES_PER_CELL local_max_total_cells) plus 32 R d_p, the
  server the larger of max_model_cells and tau.

Peak RSS against the model, every role its own process (the report's scaling figure: Adult
resampled, 2 parties, ``vertimrf server run`` and ``party run`` over folders): at max_rows
2^20, 2^22 and 2^24 the parties peaked at 436-442, 514-546 and 831-865 MB against the model's
421-424, 493-496 and 781-784 MB (up to 11% over it); the server at 407, 696 and 1,908 MB
against 538 MB at every size, so from 2^22 rows on the server's model is too low (1.3x at
2^22, 3.5x at 2^24). The model is an estimate, not a bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from vertimrf.crypto.kdf import NONCE_BYTES, TAG_BYTES
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.methods import rules
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
            "features": BASE_BYTES + 8 * 4 * dealt[p] + columns + slots + 3 * row_block(widths[p]),
            "release": BASE_BYTES
            + 8 * (2 * dealt[p] + shares[p] + 3 * largest[p])
            + columns
            + slots
            + 4 * row_block(max(widths[p], peer)),
        }
        steps.update(plan.sets.token_steps(BASE_BYTES + columns))
        if plan.select:
            steps["groups"] = BASE_BYTES + columns + slots + 6 * row_block(caps[p])
            steps["measure"] = (
                BASE_BYTES + 8 * 3 * grown[p] + columns + slots + 10 * row_block(max(full))
            )
        else:
            steps["local"] = local_peak(config, d_p)
        own = sum(plan.cells(mg) for mg in first if p in {plan.owner[a] for a in mg})
        blobs = wire * rows * (widths[p] + caps[p]) + 2 * BLOB_OVERHEAD
        sends = (m - 1) * blobs + 8 * (own + grown[p] + plan.max_tokens) + 2 * CONTAINER_BYTES
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
