"""The cost of a run, from its config alone, and the checks that refuse a run that cannot finish.

:func:`run_plan` lists every release the config fixes, bounds the ones chosen at run time, and
estimates, for each role, the bytes it sends and keeps and its peak memory. :func:`check_plan`
(called by ``ProtocolConfig.__post_init__``) refuses, with one line saying what to change:

* partial record sets whose ``max_rows`` is at most the rows the server's stop rule sets
  aside (R regions x (offset + margin), :attr:`RegionNoise.reserve`): no room for any record,
  so the run would stop after the region counts, a charged release;
* a noise scale outside the samplers' range: above 2**40 (epsilon too small), or a first
  release that cannot spend its share because its distributed discrete Gaussian components
  would be below 1/2 (KLS's bound; epsilon too large): the hint gives the largest epsilon
  that fits;
* a worst-case ledger total above the budget, as :class:`PrivacyLedger` checks it (the
  fixed releases charged one by one, then the bounds of the run-time ones: the
  re-measurement's is its share, whatever the server requests, since
  :meth:`SecurePlan.sigma` solves each release's noise for its share, the KLS tau term
  included; a local PrivMRF's is its share);
* a first-release within-party table over the release reader's cell limit;
* a smallest model (method secure's select pipeline: every attribute alone, over the union
  of the records with partial record sets) above the server's model cap: the selection
  picks a model whose junction tree, triangulated as the fit builds it, fits the cap, else
  that smallest one, so the fit's model is bounded by the cap before any release;
* an estimated peak memory of any role above ``max_memory_gb`` (default 16 GB; ``vertimrf
  config --memory``, whose default is this machine's memory), the server's counting the
  largest model the cap allows.

The memory model (bytes; R = max_rows, k_p = party p's round-1 width (its singles), c_p its
round-2 cap toward one peer, f_p = k_p + c_p, d_p its attributes, w the bytes of a ring
value in a blob (r / 8), Z_p = sum over lower parties q of k_q k_p words dealt to p, S_p =
sum over p's pairs of k_p k_q share words, S'_p the same at f_p f_q, BASE = 256 MiB for an
idle role process, and L(x) = h min(R x, max(ROW_BLOCK_WORDS, x)) one row block of ring
values x wide in memory (h = 4 or 8 bytes each): a party streams every feature blob in and
out by blocks of whole rows of at most ROW_BLOCK_WORDS values, so no R x k matrix of ring
values exists; a block's int64 column indices and the mask's zero input count as one or
two L each; C_p = min(R, PART) (3 d_p + 80) bytes for aligning the party's table from its
file, PART = ALIGN_PART_ROWS records at a time (:mod:`vertimrf.party.file_table`: a part's
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
  (:mod:`vertimrf.party.slot_file`), which C_p covers (a part's records, their sorted copy,
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

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from vertimrf.crypto.kdf import NONCE_BYTES, TAG_BYTES
from vertimrf.errors import ConfigError, PrivacyBudgetError
from vertimrf.privacy.ledger import PrivacyLedger, Release
from vertimrf.privacy.numeric import FINE_MECHANISM, QUANTILE_MECHANISM
from vertimrf.privacy.zcdp import epsilon_to_rho
from vertimrf.protocol.buckets import BALANCE_TAIL_BITS
from vertimrf.protocol.budget import ProtocolBudget
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.methods import SecureSelectRules, rules
from vertimrf.protocol.regions import RegionNoise
from vertimrf.protocol.secure.plan import (
    MASK_BLOCK_WORDS,
    MEASURE,
    SELECT,
    SecurePlan,
)
from vertimrf.protocol.secure.release import MAX_WITHIN_CELLS
from vertimrf.protocol.secure.slot_map import slot_map_bytes
from vertimrf.protocol.secure.wire import DIGEST_BYTES, ROW_BLOCK_WORDS, SEED_BYTES, SLOT_BLOCK

DEFAULT_MAX_MEMORY_GB = 16.0
GB = 1e9
MAX_NOISE_SCALE = 2.0**40  # the samplers refuse larger scales (vertimrf.privacy.samplers)
BASE_BYTES = 256 << 20  # an idle role process: Python, numpy, pandas, cryptography (measured)
BLOB_OVERHEAD = DIGEST_BYTES + NONCE_BYTES + TAG_BYTES  # a feature blob beyond 8 R k_p
SEAL_OVERHEAD = 1 + 32 + NONCE_BYTES + TAG_BYTES  # a sealed deal beyond its archive
ARCHIVE_ENTRY_BYTES = 512  # upper bound of one array's zip and .npy headers in an archive
CONTAINER_BYTES = 4096  # a container's manifest, checksum and directory (upper bound)
MODEL_BYTES_PER_CELL = 64  # a fit: ~6 float64 arrays per model cell (44.9 MiB for 980,592)
OUTPUT_BYTES_PER_CELL = 40  # a synthetic cell: sampled codes, decoded frame, CSV text
OUTPUT_CHUNK_ROWS = 65_536  # synthetic rows sampled and written at once (mrf SAMPLE_CHUNK)
SEARCH_STEPS = 48  # bisection steps of a hint's boundary
ALIGN_PART_ROWS = 1 << 20  # records a party aligns at once from its file (party.file_table)
# What a user can change when a run would not fit (a refusal's last words).
LEVERS = (
    "coarser bins (`vertimrf spec --bins N`, or fewer values in the spec), fewer columns "
    "(`vertimrf spec --drop COL`), or a cap (`vertimrf config --model-cells N`, "
    "--max-rows, --feature-width)"
)


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


@dataclass(frozen=True)
class RunPlan:
    """What a config costs, from the config alone (see the module doc).

    ``releases`` are the ledger entries the config fixes; ``bounds`` are upper bounds of the
    ones chosen at run time (the re-measurement, the local PrivMRF models); ``ledger_total``
    is their sum, the most the ledger can hold, against ``budget_rho``. ``blob_bytes`` is
    each party's round-1 feature blob to each peer, ``group_blob_bytes`` the most its
    round-2 blob to a peer may hold, ``deal_bytes`` (an upper bound) its deal and
    ``ring_bits`` the ring of the masked values and ``buckets`` the PRF buckets and their
    capacity in rows and ``workload_first`` the first release a workload sets (method
    secure; None: every pair); ``split`` the select pipeline's fractions of rho for the
    count, the first release and the re-measurement (``split_auto``: chosen by
    ``secure_shares="auto"``); ``roles`` the per-role
    costs; ``max_memory`` the limit (bytes); ``model_cells`` the most cells the server's
    model may hold (the select pipeline's cap, which its selection keeps to).
    """

    method: str
    epsilon: float
    delta: float
    budget_rho: float
    releases: tuple[Release, ...]
    bounds: tuple[Release, ...]
    rows: int | None
    blob_bytes: Mapping[str, int] = field(default_factory=dict)
    group_blob_bytes: Mapping[str, int] = field(default_factory=dict)
    deal_bytes: Mapping[str, int] = field(default_factory=dict)
    ring_bits: int | None = None
    buckets: tuple[int, int] | None = None
    regions: RegionNoise | None = None
    workload_first: tuple[tuple[int, ...], ...] | None = None
    split: tuple[float, float, float] | None = None
    split_auto: bool = False
    roles: tuple[RoleCost, ...] = ()
    max_memory: int = int(DEFAULT_MAX_MEMORY_GB * GB)
    model_cells: int | None = None

    @property
    def ledger_total(self) -> float:
        """The worst-case total rho of the ledger: the fixed releases plus the bounds."""
        return math.fsum(r.rho for r in (*self.releases, *self.bounds))

    def role(self, name: str) -> RoleCost:
        """The costs of the role called ``name`` ("server" or a party's name)."""
        for r in self.roles:
            if r.role == name:
                return r
        raise ConfigError(f"no role {name!r}; roles are {[r.role for r in self.roles]}.")

    def describe(self) -> str:
        """Human lines: the budget, then one line per role (bytes in kB / MB / GB)."""
        used = self.ledger_total / self.budget_rho
        lines = [
            f"privacy: {len(self.releases)} releases fixed by the config (rho "
            f"{_rho(self.releases)})"
            + (f", the run-time ones at most rho {_rho(self.bounds)}" if self.bounds else "")
            + f"; worst case {used:.2%} of the budget rho {self.budget_rho:.4g}"
        ]
        if self.ring_bits is not None:
            lines.append(
                f"ring: Z_2^{self.ring_bits} (masked values in {self.ring_bits // 8}-byte words; "
                + (
                    "every count plus its noise fits)"
                    if self.ring_bits < 64
                    else "a count plus its noise may need all 64 bits)"
                )
            )
        if self.regions is not None:
            noise = self.regions
            lines.append(
                f"record sets: partial; the server sees the count of each of the "
                f"{noise.regions} regions (the records held by exactly one set of parties) plus "
                f"N_Z(0, {noise.sigma:.4g}^2) noise from the parties' dummy tokens, and "
                f"publishes them with its own noise of the same scale (rho {noise.rho:.4g}); "
                "max_rows must hold every party's records at once (their union) plus up to "
                f"{noise.dummy_rows:,} dummy rows and a margin of "
                f"{noise.regions * noise.margin:,}"
            )
        fine = [r for r in self.releases if r.mechanism == FINE_MECHANISM]
        cuts = [r for r in self.releases if r.mechanism == QUANTILE_MECHANISM]
        if fine or cuts:
            share = math.fsum(r.rho for r in (*fine, *cuts)) / self.budget_rho
            parts = []
            if cuts:
                parts.append(f"{len(cuts)} DP quantile cuts, measured by their parties first")
            if fine:
                names = ", ".join(str(r.params["column"]) for r in fine)
                parts.append(
                    f"a fine histogram of each of {names} with the re-measurement (a "
                    "synthetic number is drawn inside its bin by it)"
                )
            lines.append(f"numeric values: {'; '.join(parts)}; {share:.1%} of rho in all")
        if self.split is not None:
            count, select, measure = self.split
            why = ""
            if self.split_auto:
                why = (
                    " (auto: at 50% the first release would be "
                    + ("informative" if select >= 0.5 else "mostly noise")
                    + " for max_rows records)"
                )
            lines.append(
                f"budget split: count {count:.1%}, first release {select:.1%}, "
                f"re-measurement {measure:.1%} of rho{why}"
            )
        if self.workload_first is not None:
            first = self.workload_first
            alone = sum(1 for m in first if len(m) == 1)
            pairs = len(first) - alone
            lines.append(
                f"workload: the first release is the {pairs} pair{'s' * (pairs != 1)} the "
                f"workload's marginals hold and the 1-way marginals of the {alone} other "
                f"column{'s' * (alone != 1)} (not every pair); the selection favours the "
                "workload's pairs"
            )
        if self.buckets is not None and self.buckets[0] > 1:
            count, capacity = self.buckets
            lines.append(
                f"rows: {count} PRF buckets of {capacity:,} rows ({count * capacity:,} padded "
                f"rows for max_rows {self.rows:,}); a bucket overflows with probability at most "
                f"2^-{BALANCE_TAIL_BITS}, into free rows that no message reveals"
            )
        model = ""
        if self.model_cells is not None:
            model = (
                f"; the server's model holds at most {self.model_cells:,} cells "
                f"({size(MODEL_BYTES_PER_CELL * self.model_cells)} to fit)"
            )
        lines.append(f"memory: each role may use {size(self.max_memory)} (max_memory_gb){model}")
        for r in self.roles:
            blob, deal = self.blob_bytes.get(r.role), self.deal_bytes.get(r.role)
            group = self.group_blob_bytes.get(r.role)
            parts = []
            if blob is not None:
                parts.append(
                    f"sends {size(blob)} to each peer"
                    + ("" if group is None else f", then at most {size(group)} of groups")
                )
            elif r.sends:
                parts.append(f"sends {size(r.sends)}" + (" of deals" if self.deal_bytes else ""))
            if deal is not None:
                parts.append(f"receives a {size(deal)} deal")
            if r.keeps:
                parts.append(f"keeps a {size(r.keeps)} state")
            parts = [", ".join(parts)] if parts else []
            note = f"; {r.note}" if r.note else ""
            parts.append(f"needs about {size(r.peak)} of memory ({r.step}{note})")
            who = r.role if r.role == "server" else f"party {r.role}"
            lines.append(f"{who}: {'; '.join(parts)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()


def size(n: int) -> str:
    """Bytes as kB / MB / GB (powers of 1000), two or three significant digits."""
    for unit, scale in (("GB", GB), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            value = n / scale
            return f"{value:.1f} {unit}" if value < 100 else f"{value:,.0f} {unit}"
    return f"{n} B"


def _rho(releases: tuple[Release, ...]) -> str:
    return f"{math.fsum(r.rho for r in releases):.4g}"


# ---------------------------------------------------------------------------- releases


def _releases(
    config: ProtocolConfig, epsilon: float, plan: SecurePlan | None
) -> tuple[list[Release], list[Release]]:
    """The fixed releases and the bounds of the run-time ones at ``epsilon``, in the order
    the server's ledger charges them. Raises PrivacyBudgetError (from KLS's bound) when a
    cross release's noise component is below 1/2."""
    return rules(config).plan_releases(config, epsilon, plan)


def _noise_scales(
    config: ProtocolConfig, epsilon: float, plan: SecurePlan | None
) -> dict[str, float]:
    """Every noise scale the config fixes at ``epsilon`` (name -> scale)."""
    out = {}
    if plan is not None:
        if plan.rho_count > 0:
            out["the noisy count's"] = 1.0 / plan.count_epsilon
        out["the first release's"] = plan.nominal_sigma(SELECT, len(plan.first_release()))
        if plan.rho_measure > 0:
            planned = len(plan.all_pairs()) + len(plan.sizes) * (1 + plan.refine_fraction)
            out["the re-measurement's"] = plan.nominal_sigma(MEASURE, math.ceil(planned))
    if plan is None or not plan.select:
        budget = ProtocolBudget.from_config(config, epsilon=epsilon)
        out["the noisy count's"] = 1.0 / budget.count_epsilon
        if budget.binning_epsilon > 0:
            out["the binning counts'"] = 1.0 / budget.binning_epsilon
    return out


def _budget_problem(config: ProtocolConfig, epsilon: float) -> tuple[str, str] | None:
    """None when every noise scale is within range and the worst-case ledger fits at
    ``epsilon``; else (what is wrong, "large" or "small": which way epsilon must move)."""
    plan = _secure_plan(config, epsilon=epsilon)
    for name, scale in _noise_scales(config, epsilon, plan).items():
        if not scale <= MAX_NOISE_SCALE:
            what = f"{name} noise scale {scale:.3g} would exceed 2**40, the samplers' limit"
            return what, "small"
    try:
        fixed, bounds = _releases(config, epsilon, plan)
    except PrivacyBudgetError:
        if plan is None:  # only a cross release's bound raises
            raise
        s = plan.nominal_sigma(SELECT, len(plan.first_release())) / math.sqrt(2.0)
        return (
            f"the first release's noise components (s = {s:.3g}) would be below the 1/2 that "
            "the distributed discrete Gaussian bound needs",
            "large",
        )
    budget_rho = epsilon_to_rho(epsilon, config.delta)
    ledger = PrivacyLedger(rho=budget_rho)
    try:
        ledger.extend([*fixed, *bounds])
    except PrivacyBudgetError:
        over = math.fsum(r.rho for r in (*fixed, *bounds)) - budget_rho
        return (
            f"the worst-case ledger total would exceed the budget rho {budget_rho:.6g} "
            f"by {over:.2g} (the KLS tau term of the cross releases grows as their noise "
            "shrinks)",
            "large",
        )
    return None


def _boundary(ok: Callable[[float], bool], bad: float, direction: str) -> float | None:
    """The epsilon nearest ``bad`` at which ``ok`` holds, on the side ``direction`` says
    ("large": below ``bad``, "small": above), rounded inwards to 3 significant digits; None
    when no power-of-2 step within 2**-SEARCH_STEPS .. 2**SEARCH_STEPS of ``bad`` is ok."""
    factor = 0.5 if direction == "large" else 2.0
    good = bad
    for _ in range(SEARCH_STEPS):
        good *= factor
        if ok(good):
            break
    else:
        return None
    lo, hi = (good, good / factor) if direction == "large" else (good / factor, good)
    for _ in range(SEARCH_STEPS):
        mid = math.sqrt(lo * hi)
        if ok(mid) == (direction == "large"):
            lo = mid
        else:
            hi = mid
    edge = lo if direction == "large" else hi
    unit = 10.0 ** (math.floor(math.log10(edge)) - 2)
    rounded = (math.floor if direction == "large" else math.ceil)(edge / unit) * unit
    return float(f"{rounded:.3g}")


def _check_budget(config: ProtocolConfig) -> None:
    problem = _budget_problem(config, config.epsilon)
    if problem is None:
        return
    what, direction = problem
    edge = _boundary(lambda e: _budget_problem(config, e) is None, config.epsilon, direction)
    if direction == "large":
        fix = f"use epsilon at most {edge:g}" if edge else "use a smaller epsilon"
    else:
        fix = f"use epsilon at least {edge:g}" if edge else "use a larger epsilon"
    raise ConfigError(f"epsilon {config.epsilon:g} cannot run: {what}; {fix}.")


# ---------------------------------------------------------------------------- costs


def _secure_plan(
    config: ProtocolConfig, *, epsilon: float | None = None, sizes: tuple[int, ...] | None = None
) -> SecurePlan | None:
    return rules(config).secure_plan(config, epsilon=epsilon, sizes=sizes)


def _secure_roles(config: ProtocolConfig, plan: SecurePlan) -> tuple[RoleCost, ...]:
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
        if plan.regions is not None:
            steps["tokens"] = BASE_BYTES + columns
        if plan.select:
            steps["groups"] = BASE_BYTES + columns + slots + 6 * row_block(caps[p])
            steps["measure"] = (
                BASE_BYTES + 8 * 3 * grown[p] + columns + slots + 10 * row_block(max(full))
            )
        else:
            steps["local"] = _local_peak(config, d_p)
        own = sum(plan.cells(mg) for mg in first if p in {plan.owner[a] for a in mg})
        blobs = wire * rows * (widths[p] + caps[p]) + 2 * BLOB_OVERHEAD
        sends = (m - 1) * blobs + 8 * (own + grown[p] + plan.max_tokens) + 2 * CONTAINER_BYTES
        keeps = _state_bytes(shares[p]) if plan.select else 0
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
    deals = sum(_deal_bytes(plan).values())
    if plan.max_tokens:  # partial record sets: every party's slot map
        deals += m * slot_map_bytes(plan.max_tokens)
    keeps = _state_bytes(tables) + 64 * len(first) if plan.select else 0
    roles.append(RoleCost("server", deals, keeps, server))
    return tuple(roles)


def _state_bytes(words: int) -> int:
    """Upper bound of a container holding ``words`` 8-byte words (deflate adds at most 5
    bytes per 64 KiB block of incompressible data)."""
    return 8 * words + 8 * words // 8192 + CONTAINER_BYTES


def _deal_bytes(plan: SecurePlan) -> dict[str, int]:
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


def _local_peak(config: ProtocolConfig, columns: int) -> int:
    """A party's local PrivMRF and message: its model cap and, with max_rows, its table."""
    rows = config.max_rows or 0
    return int(
        BASE_BYTES
        + MODEL_BYTES_PER_CELL * config.paper_options().local_max_total_cells
        + 8 * 4 * rows * columns
    )


def _local_roles(config: ProtocolConfig) -> tuple[RoleCost, ...]:
    """Costs of method fo / fm (coarse: the model caps; the table's share needs max_rows)."""
    rows = config.max_rows
    note = "" if rows else "plus the data table: give max_rows to count it"
    options = config.paper_options()
    roles = []
    for p in config.parties:
        d_p = len(p.columns)
        payload = 8 * rules(config).payload_words(config, d_p, rows)
        sends = payload + int(8 * options.local_max_total_cells) + CONTAINER_BYTES
        roles.append(RoleCost(p.name, sends, 0, {"local": _local_peak(config, d_p)}, note))
    cells = max(options.max_model_cells, options.tau)
    peak = int(
        BASE_BYTES
        + MODEL_BYTES_PER_CELL * cells
        + OUTPUT_BYTES_PER_CELL * min(rows or 0, OUTPUT_CHUNK_ROWS) * len(config.spec)
    )
    roles.append(RoleCost("server", 0, 0, {"synthesize": peak}, note))
    return tuple(roles)


def run_plan(config: ProtocolConfig) -> RunPlan:
    """The plan of ``config``: releases, the worst-case ledger, bytes and memory per role.

    Raises PrivacyBudgetError when a cross release's noise is below KLS's range (a config
    that passed :func:`check_plan` never does)."""
    plan = _secure_plan(config)
    fixed, bounds = _releases(config, config.epsilon, plan)
    limit = config.max_memory_gb or DEFAULT_MAX_MEMORY_GB
    common = RunPlan(
        method=config.method,
        epsilon=config.epsilon,
        delta=config.delta,
        budget_rho=epsilon_to_rho(config.epsilon, config.delta),
        releases=tuple(fixed),
        bounds=tuple(bounds),
        rows=config.max_rows,
        max_memory=int(limit * GB),
    )
    if plan is None:
        return replace(common, roles=_local_roles(config))
    return replace(
        common,
        ring_bits=plan.ring_bits,
        buckets=(plan.buckets, plan.capacity),
        regions=plan.regions,
        workload_first=plan.workload_first,
        split=(
            (plan.rho_count / plan.rho, plan.rho_select / plan.rho, plan.rho_measure / plan.rho)
            if plan.select
            else None
        ),
        split_auto=plan.select and isinstance(config.secure_options().shares, str),
        blob_bytes={
            n: plan.word_bytes * plan.rows * w + BLOB_OVERHEAD
            for n, w in zip(plan.names, plan.widths, strict=True)
        },
        group_blob_bytes={
            n: plan.word_bytes * plan.rows * c + BLOB_OVERHEAD
            for n, c in zip(plan.names, plan.group_caps, strict=True)
            if plan.select
        },
        deal_bytes=_deal_bytes(plan),
        roles=_secure_roles(config, plan),
        model_cells=int(rules(config).model_cap(config)) if plan.select else None,
    )


# ---------------------------------------------------------------------------- checks


def _peak(config: ProtocolConfig, sizes: tuple[int, ...] | None = None) -> RoleCost:
    """The role with the largest estimated peak (with the domain's ``sizes`` replaced)."""
    plan = _secure_plan(config, sizes=sizes)
    roles = _local_roles(config) if plan is None else _secure_roles(config, plan)
    return max(roles, key=lambda r: r.peak)


def _check_tables(config: ProtocolConfig) -> None:
    plan = _secure_plan(config)
    if plan is None or not plan.select:
        return
    names = config.spec.names
    for m in plan.first_release():
        if plan.kind(m) == "within" and plan.cells(m) > MAX_WITHIN_CELLS:
            what = " and ".join(repr(names[i]) for i in m)
            raise ConfigError(
                f"the marginal of {what} (party {plan.names[plan.owner[m[0]]]!r}) has "
                f"{plan.cells(m):,} cells, more than a release may hold "
                f"({MAX_WITHIN_CELLS:,}); bin its attributes to fewer values."
            )


def _memory_hint(config: ProtocolConfig, limit: float) -> str:
    """What to change so that every role fits ``limit`` bytes."""
    return rules(config).memory_hint(config, limit, lambda sizes: _peak(config, sizes).peak)


def _check_memory(config: ProtocolConfig) -> None:
    limit = (config.max_memory_gb or DEFAULT_MAX_MEMORY_GB) * GB
    worst = _peak(config)
    if worst.peak <= limit:
        return
    who = "the server" if worst.role == "server" else f"party {worst.role}"
    raise ConfigError(
        f"{who} would need about {size(worst.peak)} of memory ({worst.step}), more than "
        f"max_memory_gb = {limit / GB:g} (`vertimrf config --memory`): "
        f"{_memory_hint(config, limit)}; the levers: {LEVERS}; or more memory, if the "
        "machine has it."
    )


def _check_model(config: ProtocolConfig) -> None:
    """The smallest model the server's selection may fall back to must fit its cap, so the
    selection always finds one that fits (the plan's memory counts the cap)."""
    method = rules(config)
    if not isinstance(method, SecureSelectRules):
        return
    cap, smallest = method.model_cap(config), method.smallest_model(config)
    if smallest <= cap:
        return
    spec = config.spec
    widest = sorted(spec.names, key=lambda c: -spec[c].size)[:2]
    union = (
        " over the union of the parties' records (every column alone, with one more value, "
        "absent, and each party's columns linked)"
        if config.record_sets == "partial"
        else " (every column alone)"
    )
    raise ConfigError(
        f"even the smallest model the server may fit{union} needs {smallest:,} cells, over "
        f"its cap of {int(cap):,}; the widest columns are "
        + " and ".join(f"{c!r} ({spec[c].size:,} values)" for c in widest)
        + f": {LEVERS}."
    )


def _check_rows(config: ProtocolConfig) -> None:
    """Partial record sets: max_rows must exceed the rows the server's stop rule sets aside
    (:attr:`RegionNoise.reserve`), else the run stops after the region counts, a charged
    release, unless their noise is below minus the records' count."""
    plan = _secure_plan(config)
    if plan is None or plan.regions is None:
        return
    noise, rows = plan.regions, plan.max_rows
    if rows > noise.reserve:
        return
    raise ConfigError(
        f"max_rows {rows:,} leaves no room for any record: with partial record sets the run "
        f"needs the records of the union plus {noise.reserve:,} rows ({noise.regions} regions "
        f"x (an offset of {noise.offset:,} dummy rows + a margin of {noise.margin:,})), so it "
        "would stop after the parties spent budget on the region counts; give `vertimrf config "
        f"--max-rows` at least {noise.reserve:,} plus the records of the union, or "
        "--record-sets equal if every party holds the same records, or a larger --epsilon "
        "or --region-share (fewer dummies)."
    )


def check_plan(config: ProtocolConfig) -> None:
    """Refuse (ConfigError, one line) a config whose run would fail: see the module doc."""
    rules(config).check_record_sets(config)
    _check_budget(config)
    _check_rows(config)
    _check_tables(config)
    _check_model(config)
    _check_memory(config)
