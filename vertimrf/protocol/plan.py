"""The cost of a run, from its config alone, and the checks that refuse a run that
cannot finish; design notes in docs/design/protocol.md."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from vertimrf.errors import ConfigError, PrivacyBudgetError
from vertimrf.privacy.ledger import PrivacyLedger, Release
from vertimrf.privacy.numeric import FINE_MECHANISM, QUANTILE_MECHANISM
from vertimrf.privacy.zcdp import epsilon_to_rho
from vertimrf.protocol.buckets import BALANCE_TAIL_BITS
from vertimrf.protocol.budget import ProtocolBudget
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.costs import (
    BLOB_OVERHEAD,
    MODEL_BYTES_PER_CELL,
    RoleCost,
    deal_bytes,
    local_roles,
    secure_roles,
)
from vertimrf.protocol.methods import SecureSelectRules, rules
from vertimrf.protocol.record_sets import EqualSets, RecordSets
from vertimrf.protocol.regions import RegionNoise
from vertimrf.protocol.secure import paillier
from vertimrf.protocol.secure.features import coin_blob_bytes
from vertimrf.protocol.secure.plan import MEASURE, SELECT, SecurePlan
from vertimrf.protocol.secure.product import check_product
from vertimrf.protocol.secure.release import MAX_WITHIN_CELLS
from vertimrf.protocol.seeds import DEALER

DEFAULT_MAX_MEMORY_GB = 16.0
GB = 1e9
MAX_NOISE_SCALE = 2.0**40  # the samplers refuse larger scales (vertimrf.privacy.samplers)
SEARCH_STEPS = 48  # bisection steps of a hint's boundary
# What a user can change when a run would not fit (a refusal's last words).
LEVERS = (
    "coarser bins (`vertimrf spec --bins N`, or fewer values in the spec), fewer columns "
    "(`vertimrf spec --drop COL`), or a cap (`vertimrf config --model-cells N`, "
    "--max-rows, --feature-width)"
)


@dataclass(frozen=True)
class RunPlan:
    """What a config costs, from the config alone (see the module doc).

    ``releases`` are the ledger entries the config fixes; ``bounds`` are upper bounds of the
    ones chosen at run time (the re-measurement, the local PrivMRF models); ``ledger_total``
    is their sum, the most the ledger can hold, against ``budget_rho``. ``blob_bytes`` is
    each party's round-1 feature blob to each peer, ``group_blob_bytes`` the most its
    round-2 blob to a peer may hold, ``deal_bytes`` (an upper bound) its deal and
    ``ring_bits`` the ring of the masked values and ``buckets`` the PRF buckets and their
    capacity in rows, ``sets`` the record sets (with partial ones, the region counts'
    noise: :mod:`vertimrf.protocol.record_sets`) and ``workload_first`` the first release a
    workload sets (method
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
    sets: RecordSets = EqualSets()
    workload_first: tuple[tuple[int, ...], ...] | None = None
    split: tuple[float, float, float] | None = None
    split_auto: bool = False
    roles: tuple[RoleCost, ...] = ()
    max_memory: int = int(DEFAULT_MAX_MEMORY_GB * GB)
    model_cells: int | None = None
    noise: tuple[str, ...] = ()  # method secure: how the cross noise is made, per release
    product: tuple[str, ...] = ()  # a product backend's own lines (product "paillier")

    @property
    def regions(self) -> RegionNoise | None:
        """Partial record sets: the region counts' noise; None with equal sets."""
        return self.sets.noise

    @property
    def ledger_total(self) -> float:
        """The worst-case total rho of the ledger: the fixed releases plus the bounds."""
        return math.fsum(r.rho for r in (*self.releases, *self.bounds))

    def role(self, name: str) -> RoleCost:
        """The costs of the role called ``name`` ("server", "dealer" or a party's name)."""
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
        lines += self.sets.plan_lines()
        lines += self.noise
        lines += self.product
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
            who = r.role if r.role in ("server", DEALER) else f"party {r.role}"
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
    """:func:`_problem` at ``epsilon``, its plan derived there."""
    return _problem(config, epsilon, rules(config).secure_plan(config, epsilon=epsilon))


def _problem(
    config: ProtocolConfig, epsilon: float, plan: SecurePlan | None
) -> tuple[str, str] | None:
    """None when every noise scale is within range and the worst-case ledger fits at
    ``epsilon`` (``plan``: the secure plan there); else (what is wrong, "large" or
    "small": which way epsilon must move)."""
    for name, scale in _noise_scales(config, epsilon, plan).items():
        if not scale <= MAX_NOISE_SCALE:
            what = f"{name} noise scale {scale:.3g} would exceed 2**40, the samplers' limit"
            return what, "small"
    try:
        fixed, bounds = rules(config).plan_releases(config, epsilon, plan)
    except PrivacyBudgetError:  # KLS's bound: a cross release's noise component below 1/2
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


def _check_budget(config: ProtocolConfig, plan: SecurePlan | None) -> None:
    problem = _problem(config, config.epsilon, plan)
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

COIN_EXAMPLE = 10  # the plan shows a re-measurement's coins for this many marginals


def run_plan(config: ProtocolConfig) -> RunPlan:
    """The plan of ``config``: releases, the worst-case ledger, bytes and memory per role.

    Raises PrivacyBudgetError when a cross release's noise is below KLS's range (a config
    that passed :func:`check_plan` never does)."""
    plan = rules(config).secure_plan(config)
    fixed, bounds = rules(config).plan_releases(config, config.epsilon, plan)
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
        return replace(common, roles=local_roles(config))
    return replace(
        common,
        ring_bits=plan.ring_bits,
        buckets=(plan.buckets, plan.capacity),
        sets=plan.sets,
        workload_first=plan.workload_first,
        split=(
            (plan.rho_count / plan.rho, plan.rho_select / plan.rho, plan.rho_measure / plan.rho)
            if plan.select
            else None
        ),
        split_auto=plan.select and isinstance(config.secure_options().shares, str),
        blob_bytes=_blob_bytes(config, plan, 0),
        group_blob_bytes=_blob_bytes(config, plan, 1) if plan.select else {},
        deal_bytes=deal_bytes(plan),
        noise=noise_lines(
            plan, *((paillier.coin_bytes,) if config.product == paillier.NAME else ())
        ),
        product=paillier.plan_lines(plan) if config.product == paillier.NAME else (),
        roles=secure_roles(config, plan),
        model_cells=int(rules(config).model_cap(config)) if plan.select else None,
    )


# The bytes of a pair's coins from one party to another in the first release or at most in a
# re-measurement (``first``), by the product backend.
CoinBytes = Callable[..., int]


def _blob_bytes(config: ProtocolConfig, plan: SecurePlan, round_: int) -> dict[str, int]:
    """The most each party sends one peer in round 1 (``round_`` 0) or 2 (1): the masked
    features (round 2: at the groups' cap), or with product "paillier" its ciphertexts and
    replies."""
    if config.product == paillier.NAME:
        return {
            name: max(
                paillier.round_bytes(plan, p, q)[round_] for q in range(len(plan.names)) if q != p
            )
            for p, name in enumerate(plan.names)
        }
    widths = plan.group_caps if round_ else plan.widths
    return {
        n: plan.word_bytes * plan.rows * w + BLOB_OVERHEAD
        for n, w in zip(plan.names, widths, strict=True)
    }


def noise_lines(plan: SecurePlan, coin_bytes: CoinBytes = coin_blob_bytes) -> tuple[str, ...]:
    """How the cross noise is made, per release: with coins, the coins a cell, the most
    bytes either way per pair (``coin_bytes``: the product backend's), and the variance
    each viewer faces and a cross count carries."""
    noise, first = plan.cross_noise, plan.first_release()
    carried = f"a cross count carries {noise.release_scale(1.0) ** 2:.3g} sigma^2"
    sigma = plan.sigma(SELECT, first)
    rule = (plan.cross_rule,) if plan.cross_rule else ()
    if not noise.weight:
        return (
            "cross noise: split, three discrete Gaussians of sigma^2 / 2 (each party of a "
            f"pair and the server draws one); every viewer faces sigma^2, {carried}",
            *rule,
        )
    names = plan.names
    each = ", ".join(
        f"{plan.pair_name(p, q)} {cells:,} cells, "
        f"{size(coin_bytes(plan, names[p], names[q], first=True))}"
        for (p, q), (cells, _) in plan.first_coins.items()
    )
    measured = plan.sigma(MEASURE, first[:COIN_EXAMPLE]) if plan.rho_measure > 0 else None
    lines = [
        f"cross noise: coins that no viewer knows carry {noise.weight:g} of sigma^2, "
        f"the rest split in three; every viewer faces sigma^2, {carried}",
        *rule,
        f"coins, first release: {noise.coins(sigma):,} a cell (sigma {sigma:.4g}); each way "
        f"per pair: {each}",
    ]
    if measured is not None:
        most = max(coin_bytes(plan, names[p], names[q], first=False) for p, q in plan.pairs())
        lines.append(
            f"coins, re-measurement: 4 w sigma^2 a cell at the request's sigma, e.g. "
            f"{noise.coins(measured):,} for {COIN_EXAMPLE} marginals (sigma {measured:.4g}); "
            f"at most {size(most)} each way per pair"
        )
    return tuple(lines)


# ---------------------------------------------------------------------------- checks


def _peak(config: ProtocolConfig, plan: SecurePlan | None) -> RoleCost:
    """The role with the largest estimated peak under ``plan``."""
    roles = local_roles(config) if plan is None else secure_roles(config, plan)
    return max(roles, key=lambda r: r.peak)


def _check_tables(config: ProtocolConfig, plan: SecurePlan | None) -> None:
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
    method = rules(config)
    return method.memory_hint(
        config, limit, lambda sizes: _peak(config, method.secure_plan(config, sizes=sizes)).peak
    )


def _check_memory(config: ProtocolConfig, plan: SecurePlan | None) -> None:
    limit = (config.max_memory_gb or DEFAULT_MAX_MEMORY_GB) * GB
    worst = _peak(config, plan)
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
    union = config.sets.union_words
    raise ConfigError(
        f"even the smallest model the server may fit{union} needs {smallest:,} cells, over "
        f"its cap of {int(cap):,}; the widest columns are "
        + " and ".join(f"{c!r} ({spec[c].size:,} values)" for c in widest)
        + f": {LEVERS}."
    )


def _check_backend(config: ProtocolConfig, plan: SecurePlan) -> None:
    """What the config's product backend does not run (product "paillier": its checks)."""
    if config.product != paillier.NAME:
        return
    if not plan.select:
        raise ConfigError(
            "product 'paillier' runs the secure select pipeline (secure_pipeline 'select')."
        )
    paillier.check(plan, config.dealer)


def check_plan(config: ProtocolConfig) -> SecurePlan | None:
    """Refuse (ConfigError, one line) a config whose run would fail: see the module doc.
    Its secure plan, derived once here (None for a method without one)."""
    method = rules(config)
    method.check_record_sets(config)
    check_product(config.product)
    plan = method.secure_plan(config)
    _check_budget(config, plan)
    if plan is not None:  # partial record sets: rows beyond the stop rule's reserve
        plan.sets.check_rows(plan.max_rows)
        _check_backend(config, plan)
    _check_tables(config, plan)
    _check_model(config)
    _check_memory(config, plan)
    return plan
