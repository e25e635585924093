"""What each method means to the protocol, in one place per method;
design notes in docs/design/protocol.md."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import ClassVar, TypeVar

from vertimrf.domain import NUMERIC
from vertimrf.errors import ConfigError
from vertimrf.privacy.fm import fm_noise
from vertimrf.privacy.ledger import Release
from vertimrf.privacy.numeric import fine_cells
from vertimrf.privacy.split import first_share
from vertimrf.privacy.zcdp import pure_to_rho
from vertimrf.protocol.buckets import bucket_capacity, check_buckets
from vertimrf.protocol.budget import ProtocolBudget
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.options import (
    AUTO_COUNT_SHARE,
    FMOptions,
    FOOptions,
    SecureOptions,
    SecurePaperOptions,
    options_class,
)
from vertimrf.protocol.secure.cross_noise import cross_noise, release_delta
from vertimrf.protocol.secure.marginals import Marginal
from vertimrf.protocol.secure.noise_rule import choose
from vertimrf.protocol.secure.plan import SELECT, SecurePlan
from vertimrf.protocol.secure.product import DEALER_FREE, check_product
from vertimrf.protocol.secure.widths import feature_width, group_width
from vertimrf.workload import Workload

# A role's estimated peak memory (bytes) with the domain's sizes replaced (see plan.py).
PeakFn = Callable[[tuple[int, ...]], int]

FM_MECHANISM = "fm_sketch"
GRR_MECHANISM = "grr"
# The keyed hash named in a message of a method without sketches (FO's row order uses it).
DEFAULT_HASH = "siphash24"


def pure_release(
    mechanism: str, epsilon: float, count: int, party: str, what: str, **params: object
) -> Release:
    """``count`` releases of a pure ``epsilon``-DP mechanism, as one ledger entry."""
    params = {"epsilon": epsilon, **params}
    return Release(mechanism, what, count * pure_to_rho(epsilon), count, party, params)


T = TypeVar("T")

# A plan's numeric releases, per column: (column, attribute, cells or bins, rho).
NumericPlan = tuple[tuple[str, int, int, float], ...]


class Method:
    """One method: its protocol rules, the name of its schedule, and the names of its
    party's and its server's strategies (classes of :mod:`vertimrf.protocol.schedule`,
    :mod:`vertimrf.party.methods` and :mod:`vertimrf.server.methods`, which look them up
    there: the rules import none of them). The base's local message holds no cross
    release (the secure ones: their cross release is the secure product's); the base has no
    secure product, and its plan is the paper pipeline's (methods fo and fm)."""

    name: ClassVar[str]
    label: ClassVar[str]  # the method and, for "secure", its pipeline: its schedule's name
    party: ClassVar[str] = ""  # its local message's strategy ("": none)
    server: ClassVar[str]
    # The method's steps: a local message (release_count, release), the secure product
    # (a key pair per role, the deal, features and a secure release), the select step
    # (the server's selection and the parties' re-measurement).
    local_message: ClassVar[bool] = True
    secure_product: ClassVar[bool] = False
    selects: ClassVar[bool] = False
    # Why the method cannot run on record sets that differ ("": it can).
    equal_sets_only: ClassVar[str] = ""

    def schedule(self, config: ProtocolConfig) -> str:
        """The name of the run's schedule for ``config``."""
        return self.label

    def check_record_sets(self, config: ProtocolConfig) -> None:
        """ConfigError (one line) when ``config`` has partial record sets and the method
        needs equal ones."""
        config.sets.refuse(self.label, self.equal_sets_only)

    # ------------------------------------------------------------------ the plan
    def secure_plan(
        self,
        config: ProtocolConfig,
        *,
        epsilon: float | None = None,
        sizes: Sequence[int] | None = None,
    ) -> SecurePlan | None:
        """The secure product's plan (``epsilon`` and the domain's ``sizes`` replaced), or
        None for a method without one."""
        return None

    def plan_releases(
        self, config: ProtocolConfig, epsilon: float, plan: SecurePlan | None
    ) -> tuple[list[Release], list[Release]]:
        """The fixed releases and the bounds of the run-time ones at ``epsilon``, in the order
        the server's ledger charges them: here every party's local message and the bound of
        its local PrivMRF (when it has one)."""
        fixed: list[Release] = []
        bounds: list[Release] = []
        budget = ProtocolBudget.from_config(config, epsilon=epsilon)
        local_mrf = config.paper_options().local_mrf
        for p in config.parties:
            fixed += expected_releases(config, p.name, epsilon=epsilon)
            if local_mrf:
                what = f"local PrivMRF of {p.name}"
                bounds.append(Release("bound", what, budget.rho_locmrf_party, 1, p.name))
        return fixed, bounds

    def model_cap(self, config: ProtocolConfig) -> float:
        """The server's model cap: GraphCom's limit on all cliques."""
        return config.paper_options().max_model_cells

    def memory_hint(self, config: ProtocolConfig, limit: float, peak: PeakFn) -> str:
        """What to change so that every role's peak fits ``limit`` bytes (``peak`` gives the
        largest with the domain's sizes replaced)."""
        return "lower the model caps"

    def summary(self, config: ProtocolConfig) -> str:
        """The config's size settings, in words (``vertimrf config``'s line)."""
        rows = f", max_rows {config.max_rows}" if config.max_rows else ""
        return f"pipeline {config.pipeline}{rows}"

    # ------------------------------------------------------------------ messages
    def cross_releases(
        self, config: ProtocolConfig, budget: ProtocolBudget, party: str, d: int
    ) -> list[Release]:
        """The cross-party release ``party`` (``d`` columns) charges with its message."""
        return []

    def message_hash(self, config: ProtocolConfig) -> str:
        """The hash name a message of this method carries."""
        return DEFAULT_HASH

    def sketch_rows(self, config: ProtocolConfig) -> int:
        """The number of sketch rows a message may hold."""
        return 0

    def payload_words(self, config: ProtocolConfig, d_p: int, rows: int | None) -> int:
        """Words of a party's cross release with ``d_p`` columns (for the memory plan)."""
        return 0


class SecureRules(Method):
    """Method "secure", the paper pipeline: local messages without a cross release, then
    the secure product of the binned cross pairs (one feature group per attribute)."""

    name = "secure"
    label = "secure/paper"
    party, server = "SecurePaperParty", "SecurePaperServer"
    equal_sets_only = "its local models and bins are not built for them; the select pipeline is"
    secure_product = True

    def secure_plan(
        self,
        config: ProtocolConfig,
        *,
        epsilon: float | None = None,
        sizes: Sequence[int] | None = None,
    ) -> SecurePlan | None:
        """The plan of ``config`` (which must give max_rows); ``epsilon`` and ``sizes`` (the
        domain's) replace the config's, to cost variants. cross_noise "auto" plans both
        noises and takes the one its rule picks (:mod:`~vertimrf.protocol.secure.noise_rule`)."""
        if config.cross_noise != "auto":
            return self._plan(config, epsilon, sizes, config.cross_noise, config.coin_weight)
        coins = self._plan(config, epsilon, sizes, "coins", 1.0)
        return choose(coins, lambda: self._plan(config, epsilon, sizes, "split", 1.0))

    def _plan(
        self,
        config: ProtocolConfig,
        epsilon: float | None,
        sizes: Sequence[int] | None,
        noise: str,
        weight: float,
    ) -> SecurePlan:
        """The plan of ``config`` with the cross noise ``noise`` at coin weight ``weight``."""
        if config.max_rows is None:
            raise ConfigError(
                "method='secure' needs max_rows: a public upper bound on the number of records. "
                "Every party pads its rows to it, so that message sizes reveal nothing about the "
                "true count (give e.g. max_rows=50000, or --max-rows on the command line)."
            )
        names = config.spec.names
        index = {c: i for i, c in enumerate(names)}
        bins = self.plan_bins(config)
        domain = config.spec.domain.sizes if sizes is None else sizes
        sizes = tuple(
            min(int(u), bins[c]) if c in bins else int(u)
            for c, u in zip(names, domain, strict=True)
        )
        attrs, groups, offsets, widths = [], [], [], []
        for p in config.parties:
            own = tuple(sorted(index[c] for c in p.columns))
            cells = [sizes[a] for a in own]
            attrs.append(own)
            groups.append(tuple((a,) for a in own))
            offsets.append(tuple(int(sum(cells[:j])) for j in range(len(own))))
            widths.append(int(sum(cells)))
        caps = self.plan_group_caps(config, tuple(widths), domain)
        buckets = check_buckets(getattr(config.options, "buckets", 1))
        capacity = bucket_capacity(int(config.max_rows), buckets)
        epsilon = config.epsilon if epsilon is None else epsilon
        parties, share = len(config.parties), config.region_share
        delta = release_delta(noise, config.delta)  # coins keep a share of delta
        rho, sets = config.sets.split(epsilon, delta, parties, share)
        buckets, capacity = sets.rows(buckets, capacity, int(config.max_rows))
        values, fine, quantile = self.plan_numeric(config, rho)
        rho -= math.fsum(r for *_, r in (*fine, *quantile))  # the plan's numeric_rho
        rho_count, rho_select, rho_measure, refine = self.plan_shares(config, epsilon, rho)
        return SecurePlan(
            names=tuple(p.name for p in config.parties),
            sizes=sizes,
            attrs=tuple(attrs),
            groups=tuple(groups),
            offsets=tuple(offsets),
            widths=tuple(widths),
            group_caps=caps,
            rows=buckets * capacity,
            max_rows=int(config.max_rows),
            count_party=config.count_party,
            rho=rho,
            rho_count=rho_count,
            rho_select=rho_select,
            rho_measure=rho_measure,
            refine_fraction=refine,
            select=self.selects,
            buckets=buckets,
            sets=sets,
            workload_first=self.plan_first(config),
            values=values,
            fine=fine,
            quantile=quantile,
            cross_noise=cross_noise(noise, weight, config.delta),
            coalitions=config.product in DEALER_FREE,
        )

    def plan_releases(
        self, config: ProtocolConfig, epsilon: float, plan: SecurePlan | None
    ) -> tuple[list[Release], list[Release]]:
        """The local messages' releases and bounds, then the secure product's release."""
        fixed, bounds = super().plan_releases(config, epsilon, plan)
        assert plan is not None  # secure_plan gives one
        fixed += plan.releases(SELECT, plan.first_release())
        return fixed, bounds

    def memory_hint(self, config: ProtocolConfig, limit: float, peak: PeakFn) -> str:
        return "lower max_rows or the feature width"

    def plan_bins(self, config: ProtocolConfig) -> dict[str, int]:
        """The secure product's bin count of each binned column: the local message's bins."""
        bins = config.paper_options().bins
        return {c: bins for c in config.binned_columns()}

    def plan_group_caps(
        self, config: ProtocolConfig, widths: tuple[int, ...], domain: Sequence[int]
    ) -> tuple[int, ...]:
        """Each party's cap on round-2 columns toward one peer (``widths`` its round-1
        widths, ``domain`` the domain's sizes): here none (one release of the pairs)."""
        return (0,) * len(widths)

    def plan_numeric(
        self, config: ProtocolConfig, rho: float
    ) -> tuple[str, NumericPlan, NumericPlan]:
        """Where a synthetic number lies inside its bin, the fine histograms (column,
        attribute, cells, rho) and the columns cut at DP quantiles (column, attribute,
        bins, rho), out of ``rho``: here the midpoint, none (the config refuses quantile
        columns outside the select pipeline)."""
        return "midpoint", (), ()

    def plan_first(self, config: ProtocolConfig) -> tuple[Marginal, ...] | None:
        """The first release's marginals when they are not every pair the pipeline
        measures: here None (every binned cross pair)."""
        return None

    def plan_shares(
        self, config: ProtocolConfig, epsilon: float, rho: float
    ) -> tuple[float, float, float, float]:
        """The secure product's rho of the count, the first release and the re-measurement,
        and the refine fraction: here only the first release, on the LocEnc share."""
        rho_select = ProtocolBudget.from_config(config, epsilon=epsilon).rho_locenc
        return 0.0, rho_select, 0.0, 0.0


class SecureSelectRules(SecureRules):
    """Method "secure", the select pipeline: no local messages at all; the secure product
    releases every 2-way marginal (with a workload, its first release) and the count, then
    re-measures what the server selects."""

    label = "secure/select"
    party, server = "", "SecureSelectServer"
    equal_sets_only = ""
    local_message = False
    selects = True

    def schedule(self, config: ProtocolConfig) -> str:
        """The select pipeline's schedule: with partial record sets, the tokens' too."""
        return config.sets.schedule(self.label)

    def plan_releases(
        self, config: ProtocolConfig, epsilon: float, plan: SecurePlan | None
    ) -> tuple[list[Release], list[Release]]:
        """The first release; the re-measurement's bound is its share, whatever the request."""
        assert plan is not None  # secure_plan gives one
        fixed = [
            *plan.quantile_releases(), *plan.releases(SELECT, plan.first_release()),
            *plan.fine_releases(),
        ]  # fmt: skip
        return fixed, [Release("bound", "re-measurement (any request)", plan.rho_measure)]

    def plan_numeric(
        self, config: ProtocolConfig, rho: float
    ) -> tuple[str, NumericPlan, NumericPlan]:
        """The options' ``values``; with "fine", a fine histogram of every numeric column
        of fewer bins than :data:`~vertimrf.privacy.numeric.FINE_CELLS` (so more than one
        sub-bin per bin); the DP quantile cuts of every column cut at quantiles. The
        options' ``numeric_share`` of ``rho`` is split evenly over the columns that
        release, and a column releasing both gives half to each."""
        options = config.secure_options()
        numeric = [(a, c) for a, c in enumerate(config.spec.columns) if c.kind == NUMERIC]
        fine = {a for a, c in numeric if options.values == "fine" and fine_cells(c) > 1}
        cut = {a for a, c in numeric if not c.resolved and c.bounds[2] > 1}
        if not fine | cut:
            return options.values, (), ()
        each = rho * options.numeric_share / len(fine | cut)
        part = {a: each / 2 if a in fine and a in cut else each for a in fine | cut}
        return (
            options.values,
            tuple(
                (c.name, a, c.bounds[2] * fine_cells(c), part[a]) for a, c in numeric if a in fine
            ),
            tuple((c.name, a, c.bounds[2], part[a]) for a, c in numeric if a in cut),
        )

    def model_cap(self, config: ProtocolConfig) -> float:
        """The select pipeline's ceiling on the model's cells (the union model's with
        partial record sets: :meth:`~vertimrf.protocol.record_sets.PartialSets.model_cap`)."""
        cap = config.secure_options().max_total_cells
        return config.sets.model_cap(cap)

    def smallest_model(self, config: ProtocolConfig) -> int:
        """The cells of the smallest model the server's selection falls back to, every
        attribute alone (over the union with partial record sets:
        :meth:`~vertimrf.protocol.record_sets.PartialSets.smallest_model`; the server
        builds it only when it models the union, so this bounds both cases)."""
        spec = config.spec
        held = [[spec[c].size for c in p.columns] for p in config.parties]
        return config.sets.smallest_model(spec.domain.sizes, held)

    def memory_hint(self, config: ProtocolConfig, limit: float, peak: PeakFn) -> str:
        """Bin the widest attribute when it alone sets the feature width and binning it fits."""
        sizes = tuple(int(u) for u in config.spec.domain.sizes)
        widest = max(range(len(sizes)), key=sizes.__getitem__)
        if feature_width(config) == sizes[widest] > 2:

            def fits(u: int) -> bool:
                return (
                    peak(tuple(min(s, u) if i == widest else s for i, s in enumerate(sizes)))
                    <= limit
                )

            lo, hi = 2, sizes[widest]  # fits(lo) is checked below; hi does not fit
            if fits(lo):
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    lo, hi = (mid, hi) if fits(mid) else (lo, mid)
                return (
                    f"attribute {config.spec.names[widest]!r} has {sizes[widest]:,} values and "
                    f"sets every party's feature width: bin it to at most {lo:,} values"
                )
        return super().memory_hint(config, limit, peak)

    def plan_bins(self, config: ProtocolConfig) -> dict[str, int]:
        return {}

    def plan_first(self, config: ProtocolConfig) -> tuple[Marginal, ...] | None:
        """With a workload, its first release
        (:meth:`vertimrf.workload.Workload.first_release`: the pairs its marginals hold,
        then 1-way marginals of the attributes in none); else None (every pair, as under
        the default workload). Public: from the config."""
        domain = config.spec.domain
        workload = Workload.given(domain, config.secure_options().workload)
        return None if workload is None else tuple(workload.first_release(len(domain)))

    def summary(self, config: ProtocolConfig) -> str:
        from vertimrf.protocol.secure.widths import feature_width

        options = config.secure_options()
        width = options.feature_width
        cap = f" ({feature_width(config)})" if width == "auto" else ""
        return (
            f"max_rows {config.max_rows}, feature width {width}{cap}, pipeline select, "
            f"binning {options.binning}, buckets {options.buckets}"
        )

    def plan_group_caps(
        self, config: ProtocolConfig, widths: tuple[int, ...], domain: Sequence[int]
    ) -> tuple[int, ...]:
        """What each party's singles leave of the feature width."""
        width = feature_width(config, domain)
        return tuple(group_width(width, k) for k in widths)

    def plan_shares(
        self, config: ProtocolConfig, epsilon: float, rho: float
    ) -> tuple[float, float, float, float]:
        """The options' shares of rho, and their refine fraction. Shares "auto": the count
        :data:`AUTO_COUNT_SHARE`, the first release the engine's adaptive share
        (:func:`first_share`, max_rows standing for the count), the re-measurement the rest:
        a pure function of the config, so every role derives the same split."""
        options = config.secure_options()
        s = options.shares
        if isinstance(s, str):  # "auto"
            sizes = config.spec.domain.sizes
            first = self.plan_first(config)
            select = first_share(sizes, rho, float(config.max_rows or 1), first)
            s = {"count": AUTO_COUNT_SHARE, "select": select}
            s["measure"] = 1.0 - AUTO_COUNT_SHARE - select
        return (
            rho * s["count"],
            rho * s["select"],
            rho * s["measure"],
            float(options.refine_fraction),
        )


class FORules(Method):
    """Method "fo": GRR rows of the binned columns, one row per noisy-count record."""

    name = label = "fo"
    party, server = "FOParty", "FOServer"
    equal_sets_only = "its randomized rows are joined by position"

    def cross_releases(
        self, config: ProtocolConfig, budget: ProtocolBudget, party: str, d: int
    ) -> list[Release]:
        return [
            pure_release(
                GRR_MECHANISM,
                budget.grr_epsilon,
                d,
                party,
                f"GRR of {d} attributes (eps-LDP per report; row count public)",
            )
        ]

    def payload_words(self, config: ProtocolConfig, d_p: int, rows: int | None) -> int:
        return d_p * (rows or 0)


class FMRules(Method):
    """Method "fm": the paper's FM sketches, t per attribute (NOT DP)."""

    name = label = "fm"
    party, server = "FMParty", "FMServer"

    def cross_releases(
        self, config: ProtocolConfig, budget: ProtocolBudget, party: str, d: int
    ) -> list[Release]:
        options = config.options
        assert isinstance(options, FMOptions)
        noise = fm_noise(budget.eps_prime, options.gamma)
        return [
            pure_release(
                FM_MECHANISM,
                budget.eps_prime,
                options.t * d,
                party,
                f"FM sketches of {d} attributes x {options.t} keys (NOT DP: shared randomness)",
                gamma=options.gamma,
                k_p=noise.k_p,
                alpha_min=noise.alpha_min,
            )
        ]

    def message_hash(self, config: ProtocolConfig) -> str:
        assert isinstance(config.options, FMOptions)
        return config.options.hash

    def sketch_rows(self, config: ProtocolConfig) -> int:
        assert isinstance(config.options, FMOptions)
        return config.options.t

    def summary(self, config: ProtocolConfig) -> str:
        return f"t {self.sketch_rows(config)}"

    def payload_words(self, config: ProtocolConfig, d_p: int, rows: int | None) -> int:
        return d_p * self.sketch_rows(config)


METHODS: dict[type, Method] = {
    SecureOptions: SecureSelectRules(),
    SecurePaperOptions: SecureRules(),
    FOOptions: FORules(),
    FMOptions: FMRules(),
}


def rules(config: ProtocolConfig) -> Method:
    """The protocol rules of ``config``'s method."""
    return METHODS[type(config.options)]


def secure_plan(
    config: ProtocolConfig,
    *,
    epsilon: float | None = None,
    sizes: Sequence[int] | None = None,
) -> SecurePlan:
    """The secure product's public plan of ``config`` (:class:`SecurePlan`); ConfigError
    unless its method is "secure". ``epsilon`` and ``sizes`` (the domain's) replace the
    config's, to cost variants."""
    plan = rules(config).secure_plan(config, epsilon=epsilon, sizes=sizes)
    if plan is None:
        raise ConfigError(f"a secure plan needs method='secure'; got {config.method!r}.")
    check_product(config.product)
    return plan


# Mechanism names of a party's releases outside its local PrivMRF.
COUNT_MECHANISM = "discrete_laplace"
BINNING_MECHANISM = "discrete_laplace_hist"


def expected_releases(
    config: ProtocolConfig, party: str, *, epsilon: float | None = None
) -> list[Release]:
    """Every release ``party`` makes outside its local PrivMRF, with config-derived parameters.

    For method="secure" (the paper pipeline) the cross-party release is the secure
    product's, charged by :meth:`vertimrf.protocol.secure.plan.SecurePlan.releases`, not here.

    The local PrivMRF's releases are data-dependent in number; their total is
    ``ProtocolBudget.rho_locmrf_party`` (see :func:`party_rho`). ``epsilon`` overrides the
    config's (to cost a variant).
    """
    budget = ProtocolBudget.from_config(config, epsilon=epsilon)
    columns = config.party(party).columns
    out = []
    if party == config.count_party:
        eps = budget.count_epsilon
        out.append(
            pure_release(
                COUNT_MECHANISM, eps, 1, party, "noisy record count", sensitivity=1, scale=1 / eps
            )
        )
    binned = set(config.binned_columns())
    for c in columns:
        if c in binned:
            eps = budget.binning_epsilon
            out.append(
                pure_release(
                    BINNING_MECHANISM,
                    eps,
                    1,
                    party,
                    f"value counts of {c} (for its bin map)",
                    sensitivity=1,
                    scale=1 / eps,
                    cells=config.spec[c].size,
                )
            )
    out += rules(config).cross_releases(config, budget, party, len(columns))
    return out


def party_rho(config: ProtocolConfig, party: str) -> float:
    """The whole zCDP allowance of ``party``: its releases plus its local PrivMRF."""
    local = ProtocolBudget.from_config(config).rho_locmrf_party
    if not config.paper_options().local_mrf:
        local = 0.0
    return math.fsum([local, *(r.rho for r in expected_releases(config, party))])


def strategy(base: type[T], name: str, attr: str = "__name__") -> type[T]:
    """The subclass of ``base`` whose ``attr`` is ``name``: a schedule, or a party's or a
    server's strategy, as a :class:`Method` names it (ConfigError for none)."""
    todo = list(base.__subclasses__())
    while todo:
        cls = todo.pop()
        if getattr(cls, attr) == name:
            return cls
        todo += cls.__subclasses__()
    raise ConfigError(f"no {base.__name__} {name!r}: a method names one of its subclasses.")


def rules_of(method: object, pipeline: object = None) -> Method:
    """The protocol rules of ``method`` (and, for "secure", ``pipeline``), by name."""
    return METHODS[options_class(method, pipeline)]


def fm_options(config: ProtocolConfig, what: str) -> FMOptions:
    """The options of ``config``, of method "fm"; ConfigError for another method
    (``what`` names the setting asked for)."""
    options = config.options
    if not isinstance(options, FMOptions):
        raise ConfigError(f"{what} of method 'fm'; the config's method is {config.method!r}.")
    return options
