"""Each method's settings: one frozen, typed options object per method, holding
what it reads; design notes in docs/design/protocol.md."""

from __future__ import annotations

import difflib
import functools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from vertimrf.errors import ConfigError
from vertimrf.privacy.calibration import ACCOUNTING_MODES, sketch_epsilon
from vertimrf.protocol.buckets import check_buckets
from vertimrf.within import PLACEMENTS
from vertimrf.workload import workload_entries

if TYPE_CHECKING:
    from vertimrf.domain import DomainSpec

# The `default` preset names every setting that changes a run's output (in the flat names),
# and the options' defaults are read from it, so presets are the only source of defaults.
# Our tuning, measured on NLTCS at eps 0.8 / 3.2 (mean 3-way TVD of 2 seeds): paper preset
# 0.025 / 0.025; t=16000 alone 0.019 at 3.2; plus more cross edges and cross marginals
# 0.012 / 0.0085. Cross-party estimates are post-processing, so using more of them is free
# in privacy; t costs encoding time (seconds at this size). Adult at eps 1.6: a 1e6-cell
# model gives the same 3-way TVD as 4e6 (0.065) in a third of the server time (35 s instead
# of 114 s). The local PrivMRF caps are the reference LocMRF's, which keep the local model,
# and so the message, small.
DEFAULTS: dict[str, Any] = {
    "shares": {"locmrf": 0.4, "locenc": 0.36, "count": 0.04, "binning": 0.2},
    "t": 16000,
    "gamma": 1.0,
    "hash": "siphash24",
    "bins": 4,
    "binned": None,
    "tau": 2e6,
    "max_model_cells": 1e6,
    "cross_edge_fraction": 0.5,
    "cross_weight": 1.0,
    "cross_marginals": 64,
    "method": "secure",
    "carest": "containment",
    "accounting": "zcdp",
    "recovery": "hisrec",
    "consistency": True,
    "local_mrf": True,
    "server_iters": 100,
    "local_max_clique_cells": 1e5,
    "local_max_total_cells": 3e5,
    # method="secure": the count, the cheap first release of every 2-way marginal (for the
    # server's selection) and the re-measurement of the chosen marginals, as fractions of rho
    # ("auto": AUTO_COUNT_SHARE for the count, the first release's share adapted to the
    # public config, vertimrf.privacy.split.first_share); and how many marginals beyond the
    # initial set the server re-measures (times d).
    "secure_shares": "auto",
    "secure_refine_fraction": 1.6,
    # "auto": min(576, 2^26 / max_rows as a power of two), at least the widest attribute
    # (vertimrf.protocol.secure.widths.feature_width): 576 up to max_rows 65536, 64 at 2^20.
    "secure_feature_width": "auto",
    "secure_iters": 1000,
    # The ceilings of the server's model caps, which grow with the measurements' precision
    # (EnginePlan.model_caps; by max_total_cells / 364 cells per unit,
    # vertimrf.synth.engine.plan.cells_per_precision): the engine's (EngineOptions). On Adult
    # (seeds 0..2) they lowered the secure method's 3-way TVD by 8% at epsilon 1.6 and 3.2
    # against 2e5 and 1e6, for 2.4x and 4.4x the time (benchmarks/results/secure_caps_vs.md).
    "secure_max_clique_cells": 8e5,
    "secure_max_total_cells": 4e6,
    # "select": one budget and PrivMRF's selection over the whole table (SecureOptions);
    # "paper": the paper's LocMRF -> GraphCom -> InitMRF -> OptMRF on secure estimates of
    # every binned cross-party 2-way marginal (SecurePaperOptions), to compare the two.
    "secure_pipeline": "select",
    # "auto": the select pipeline's server re-measures a 2-way marginal on bins of its large
    # attributes where its estimated error is lower than at the full domain, and fits the
    # bin sums as linear queries (vertimrf.server.binning); on Adult with merged columns
    # (domains up to 656 values) it beat "off" at every epsilon (bench_secure_binning.md).
    # "off": every marginal at its full domain.
    "secure_binning": "auto",
    # PRF buckets of the secure rows (a power of two; vertimrf.protocol.buckets): each holds
    # about max_rows / buckets records, so a party on Dask works bucket by bucket.
    "secure_buckets": 1,
    # The marginals the synthetic table should answer, weighted ([[columns], weight] or
    # [columns]); None: every 3-way marginal, weight 1 (vertimrf.workload).
    "secure_workload": None,
    # Where a synthetic number lies inside its bin (vertimrf.within): "fine" (each party
    # releases a noisy fine histogram of its numeric columns, FINE_CELLS sub-bins each, at
    # secure_numeric_share of rho in all), "uniform" or "midpoint" (nothing released).
    "secure_values": "fine",
    "secure_numeric_share": 0.05,
}
PRESETS: dict[str, dict[str, Any]] = {
    "default": DEFAULTS,
    # The paper's Section 7.1: 40% LocMRF, 40% LocEnc of which 10% for n, 20% binning; its
    # t, and the reference's cross-party edges, cross marginals (int(0.8 d)) and model cap.
    "paper": {
        **DEFAULTS,
        "method": "fo",
        "t": 2000,
        "cross_edge_fraction": 0.2,
        "cross_marginals": None,
        "max_model_cells": 4e6,
    },
}
METHODS = ("fo", "fm", "secure")
SECURE_PIPELINES = ("select", "paper")
SECURE_BINNING = ("auto", "off")
CAREST_METHODS = ("containment", "harmonic", "algorithm4")
HASHES = ("siphash24", "xxh64")
RECOVERY = ("hisrec", "unisam")
# What the choice of method reads: these two flat names pick the options class.
SELECTORS = ("method", "secure_pipeline")

T = TypeVar("T")


def close_names(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'a' or 'b'?)`` for the names of ``known`` close to ``name``."""
    close = difflib.get_close_matches(str(name), list(known), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def unknown_fields(what: str, names: Iterable[str], known: Iterable[str], hint: str = "") -> None:
    """Raise ConfigError for the first of ``names`` not in ``known``, with the close names."""
    known = list(known)
    for name in names:
        if name not in known:
            raise ConfigError(
                f"{what} has no field {name!r}{close_names(name, known)}{hint}; its fields "
                f"are {', '.join(known)}."
            )


def strict_fields(hint: Callable[[str], str] | None = None) -> Callable[[type[T]], type[T]]:
    """Class decorator (outside ``@dataclass``): the constructor raises ConfigError, not
    TypeError, for an unknown keyword (``hint(name)`` may add how to pass it)."""

    def wrap(cls: type[T]) -> type[T]:
        init = cls.__init__
        known = [f.name for f in fields(cls) if f.init]  # type: ignore[arg-type]

        @functools.wraps(init)
        def checked(self: Any, *args: Any, **kwargs: Any) -> None:
            extra = [k for k in kwargs if k not in known]
            if extra:
                unknown_fields(cls.__name__, extra, known, hint(extra[0]) if hint else "")
            if len(args) > len(known):
                raise ConfigError(f"{cls.__name__} takes at most {len(known)} values.")
            init(self, *args, **kwargs)

        cls.__init__ = checked  # type: ignore[method-assign]
        return cls

    return wrap


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def is_number(value: object) -> bool:
    """Whether ``value`` is an int or a float (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_int(value: object, at_least: int) -> bool:
    """Whether ``value`` is an int (not a bool) of at least ``at_least``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= at_least


def _positive(owner: object, *names: str) -> None:
    for name in names:
        value = getattr(owner, name)
        _require(
            is_number(value) and 0 < value < math.inf,
            f"{name} must be a positive finite number; got {value!r}.",
        )


def _choice(value: object, allowed: tuple[str, ...], what: str) -> None:
    _require(value in allowed, f"{what} must be one of {allowed}; got {value!r}.")


# The count's share of rho under secure_shares="auto" (the engine's default count share).
AUTO_COUNT_SHARE = 0.001


def _frozen_shares(owner: object, name: str, need: set[str], positive: set[str]) -> None:
    """Check the share mapping ``name`` and replace it by a read-only copy."""
    shares = getattr(owner, name)
    _require(
        isinstance(shares, Mapping) and set(shares) == need,
        f"{name} must name exactly {sorted(need)}; got {shares!r}.",
    )
    values = {str(k): shares[k] for k in shares}
    for k, v in values.items():
        _require(is_number(v), f"{name}[{k!r}] must be a number; got {v!r}.")
    _require(
        all(v >= 0 for v in values.values()) and math.fsum(values.values()) <= 1 + 1e-12,
        f"{name} must be >= 0 and sum to at most 1; got {values}.",
    )
    bad = sorted(k for k in positive if values[k] <= 0)
    _require(not bad, f"{name} {bad} must be positive; got {values}.")
    object.__setattr__(owner, name, MappingProxyType(values))


def _json(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, tuple):
        return list(value)
    return value


class _Options:
    """What every options class has: its method's names and the JSON form."""

    METHOD: ClassVar[str]
    PIPELINE: ClassVar[str]
    DP: ClassVar[bool] = True
    LATER: ClassVar[frozenset[str]] = frozenset()
    # The config's record_sets when it gives none (docs/protocol.md, "Parties whose record
    # sets differ").
    RECORD_SETS: ClassVar[str] = "equal"
    # The flat selector values that choose this class.
    SELECT: ClassVar[Mapping[str, str]]
    # flat name (the first config format) -> field
    FLAT: ClassVar[Mapping[str, str]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, tagged with the class name. A field added later is left out at
        its default (``LATER``), so a config made before it keeps its hash."""
        out = {
            f.name: _json(getattr(self, f.name))
            for f in fields(self)  # type: ignore[arg-type]
            if not (f.name in self.LATER and getattr(self, f.name) == f.default)
        }
        return {"type": type(self).__name__, **out}

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle (and copy) through the JSON form: read-only mappings do not pickle."""
        return (options_from_dict, (self.to_dict(),))

    def flat(self) -> dict[str, Any]:
        """The fields under their flat names, with the selectors of the method."""
        return {**self.SELECT, **{name: getattr(self, f) for name, f in self.FLAT.items()}}

    def check_rows(self, max_rows: int | None) -> None:
        """Refuse a config's ``max_rows`` this method cannot run with (here: none)."""


class _PaddedRows:
    """A secure method's: every party pads its rows to the config's public max_rows."""

    def check_rows(self, max_rows: int | None) -> None:
        """Refuse a config without max_rows."""
        if max_rows is None:
            raise ConfigError(
                "method='secure' needs max_rows: a public upper bound on the number of records, "
                "to which every party pads its rows so that message sizes reveal nothing about "
                "the true count (give e.g. max_rows=50000, or --max-rows on the command line)."
            )


@dataclass(frozen=True)
class PaperOptions(_Options):
    """The paper's pipeline: local PrivMRF, bin maps, a cross-party release, then the
    server's GraphCom, InitMRF and OptMRF (shared by :class:`FOOptions`, :class:`FMOptions`
    and :class:`SecurePaperOptions`).

    Attributes:
        shares: the budget split, fractions of rho: ``locmrf`` (split evenly over the
            parties), ``locenc`` (the cross-party release), ``count`` (the noisy record
            count), ``binning`` (the noisy value counts of the binned attributes; to
            ``locenc`` when none is binned).
        bins, binned: b, and the binned columns (None: every column with more than b values).
        tau, max_model_cells: GraphCom's limits on the largest clique and on all cliques.
        cross_edge_fraction: GraphCom adds at most this fraction of the cross-party pairs.
        cross_marginals: OptMRF fits this many cross-party 2-way marginals (None: the
            reference's int(0.8 d)); cross_weight scales their weight against the local
            measurements' median weight.
        recovery: "hisrec" or "unisam"; consistency: enforce it.
        local_mrf: run LocMRF (False is the ablation: its share goes to LocEnc).
        server_iters: mirror-descent iteration cap of each OptMRF round (the last gets 3x).
        local_max_clique_cells, local_max_total_cells: the local PrivMRF's model caps.
    """

    PIPELINE: ClassVar[str] = "paper"

    shares: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULTS["shares"]))
    bins: int = DEFAULTS["bins"]
    binned: tuple[str, ...] | None = DEFAULTS["binned"]
    tau: float = DEFAULTS["tau"]
    max_model_cells: float = DEFAULTS["max_model_cells"]
    cross_edge_fraction: float = DEFAULTS["cross_edge_fraction"]
    cross_weight: float = DEFAULTS["cross_weight"]
    cross_marginals: int | None = DEFAULTS["cross_marginals"]
    recovery: str = DEFAULTS["recovery"]
    consistency: bool = DEFAULTS["consistency"]
    local_mrf: bool = DEFAULTS["local_mrf"]
    server_iters: int = DEFAULTS["server_iters"]
    local_max_clique_cells: float = DEFAULTS["local_max_clique_cells"]
    local_max_total_cells: float = DEFAULTS["local_max_total_cells"]

    def __post_init__(self) -> None:
        _frozen_shares(self, "shares", {"locmrf", "locenc", "count", "binning"}, set())
        _require(
            self.shares["count"] > 0 and self.shares["locenc"] > 0,
            "the count and locenc shares must be positive.",
        )
        _require(
            not self.local_mrf or self.shares["locmrf"] > 0,
            "local_mrf needs a positive locmrf share.",
        )
        _require(is_int(self.bins, 2), f"bins must be an integer >= 2; got {self.bins!r}.")
        if self.binned is not None:
            _require(
                isinstance(self.binned, list | tuple)
                and all(isinstance(c, str) for c in self.binned),
                f"binned must be None or a list of column names; got {self.binned!r}.",
            )
            object.__setattr__(self, "binned", tuple(self.binned))
        _positive(
            self,
            "tau",
            "max_model_cells",
            "cross_weight",
            "local_max_clique_cells",
            "local_max_total_cells",
        )
        _require(
            isinstance(self.cross_edge_fraction, int | float)
            and 0 <= self.cross_edge_fraction <= 1,
            f"cross_edge_fraction must be in [0, 1]; got {self.cross_edge_fraction!r}.",
        )
        _require(
            self.cross_marginals is None or is_int(self.cross_marginals, 0),
            f"cross_marginals must be None or an integer >= 0; got {self.cross_marginals!r}.",
        )
        _choice(self.recovery, RECOVERY, "recovery")
        for name in ("consistency", "local_mrf"):
            _require(
                isinstance(getattr(self, name), bool),
                f"{name} must be True or False; got {getattr(self, name)!r}.",
            )
        _require(
            is_int(self.server_iters, 1),
            f"server_iters must be an integer >= 1; got {self.server_iters!r}.",
        )

    def eps_prime(
        self, t: int | None, d: int, delta: float, locenc: float, epsilon: float, rho_enc: float
    ) -> float:
        """The sketch epsilon' of ``t`` repetitions over ``d`` attributes (0 for a method
        without sketches)."""
        return 0.0

    def paper(self) -> PaperOptions:
        """These settings (the paper pipeline's)."""
        return self

    def secure(self) -> SecureOptions:
        """ConfigError: only the secure select pipeline has SecureOptions."""
        raise ConfigError(
            "only the secure select pipeline has SecureOptions (feature width, iterations, "
            f"model caps, binning); this config's method is {self.METHOD!r}."
        )

    def binned_columns(self, spec: DomainSpec) -> tuple[str, ...]:
        """The explicit list, or every column of ``spec`` with more than b codes."""
        if self.binned is not None:
            return self.binned
        return tuple(c.name for c in spec.columns if c.size > self.bins)


_PAPER_FLAT = {f.name: f.name for f in fields(PaperOptions)}


@strict_fields()
@dataclass(frozen=True)
class FOOptions(PaperOptions):
    """Method "fo": the paper's pipeline with GRR rows as the cross-party release (DP)."""

    METHOD: ClassVar[str] = "fo"
    SELECT: ClassVar[Mapping[str, str]] = MappingProxyType({"method": "fo"})
    FLAT: ClassVar[Mapping[str, str]] = MappingProxyType(_PAPER_FLAT)


@strict_fields()
@dataclass(frozen=True)
class FMOptions(PaperOptions):
    """Method "fm": the paper's FM sketches as the cross-party release, NOT differentially
    private (a config refuses it without ``allow_non_dp``).

    Attributes (beyond :class:`PaperOptions`'):
        t, gamma, hash: sketch repetitions (an integer; ``t="auto"`` is resolved by
            :func:`~vertimrf.protocol.factory.from_preset`), the geometric base 1 + gamma, and the
            keyed hash ("siphash24", or "xxh64", not a PRF).
        carest: the sketch estimator; accounting: "zcdp" or "theorem2" (the paper's
            Theorem 2 for the sketches' epsilon').
    """

    METHOD: ClassVar[str] = "fm"
    SELECT: ClassVar[Mapping[str, str]] = MappingProxyType({"method": "fm"})
    DP: ClassVar[bool] = False
    FLAT: ClassVar[Mapping[str, str]] = MappingProxyType(
        {**_PAPER_FLAT, **{k: k for k in ("t", "gamma", "hash", "carest", "accounting")}}
    )

    t: int = DEFAULTS["t"]
    gamma: float = DEFAULTS["gamma"]
    hash: str = DEFAULTS["hash"]
    carest: str = DEFAULTS["carest"]
    accounting: str = DEFAULTS["accounting"]

    def __post_init__(self) -> None:
        super().__post_init__()
        _require(
            self.t != "auto",
            "t='auto' is resolved when the config is made, from a public max_rows "
            "(from_preset(..., t='auto', max_rows=N)).",
        )
        _require(is_int(self.t, 1), f"t must be a positive integer; got {self.t!r}.")
        _require(
            isinstance(self.gamma, int | float) and 0 < self.gamma <= 1,
            f"gamma must be in (0, 1]; got {self.gamma!r}.",
        )
        _choice(self.hash, HASHES, "hash")
        _choice(self.carest, CAREST_METHODS, "carest")
        _choice(self.accounting, ACCOUNTING_MODES, "accounting")

    def eps_prime(
        self, t: int | None, d: int, delta: float, locenc: float, epsilon: float, rho_enc: float
    ) -> float:
        t = self.t if t is None else t
        if self.accounting == "theorem2":
            # The paper's Theorem 2 on an (epsilon, delta) share of the same fraction.
            return sketch_epsilon(
                t, d, epsilon=locenc * epsilon, delta=delta, accounting="theorem2"
            )
        return sketch_epsilon(t, d, rho=rho_enc)


@strict_fields()
@dataclass(frozen=True)
class SecurePaperOptions(_PaddedRows, PaperOptions):
    """Method "secure", the paper pipeline: local models, then secure estimates of every
    binned cross-party 2-way marginal (paid by the ``locenc`` share) in place of FO's GRR
    rows. Needs ``local_mrf``: the secure release measures only the cross-party pairs."""

    METHOD: ClassVar[str] = "secure"
    SELECT: ClassVar[Mapping[str, str]] = MappingProxyType(
        {"method": "secure", "secure_pipeline": "paper"}
    )
    FLAT: ClassVar[Mapping[str, str]] = MappingProxyType(_PAPER_FLAT)

    def __post_init__(self) -> None:
        super().__post_init__()
        _require(
            self.local_mrf,
            "secure_pipeline='paper' needs local_mrf=True: its secure release measures only "
            "the cross-party pairs, the local models cover the rest.",
        )


@strict_fields()
@dataclass(frozen=True)
class SecureOptions(_PaddedRows, _Options):
    """Method "secure", the select pipeline (the default): one budget over the whole table.

    Attributes:
        shares: fractions of rho for the ``count``, the cheap first release of every 2-way
            marginal (``select``, for the server's selection) and the re-measurement of the
            chosen marginals (``measure``); or "auto" (the default): the count
            :data:`AUTO_COUNT_SHARE`, the first release 0.5 or 0.2 of rho by
            :func:`vertimrf.privacy.split.first_share` (the engine's rule, with max_rows
            standing for the count: public), the re-measurement the rest.
        refine_fraction: the most re-measured pairs beyond the initial set (times d); fewer
            while the first release is imprecise (``EnginePlan.extras``).
        feature_width: the cap on each party's one-hot width (attribute pairs and triples are
            added within it, so that cross marginals of higher order can be measured): an
            integer, or "auto", min(576, 2^26 / max_rows rounded down to a power of two),
            never below the widest attribute's domain, so that a party's work (max_rows x
            width words) stays bounded (:func:`vertimrf.protocol.secure.widths.feature_width`).
        iters: the cap of each of the server's two mirror-descent fits.
        max_clique_cells, max_total_cells: the ceilings of the server's model caps (its
            graph search; the caps grow with the precision).
        binning: "auto" (the server re-measures a 2-way marginal on bins of its large
            attributes where its estimated error is lower than at the full domain, and fits
            the bin sums as linear queries) or "off" (every marginal at its full domain).
        buckets: the PRF buckets of the aligned rows, a power of two
            (:mod:`vertimrf.protocol.buckets`): a party on Dask aligns and streams its rows
            bucket by bucket. The padded rows grow from max_rows to buckets x capacity.
        workload: the marginals the synthetic table should answer, each a list of column
            names alone (weight 1) or ``[columns, weight]``; the server's selection weighs
            each pair of attributes by the workload marginals holding it
            (:meth:`vertimrf.workload.Workload.pair_weights`). None (the default): every
            3-way marginal, weight 1, and the config's bytes are those of a config made
            before this setting.
        values: where a synthetic number lies inside its bin: "fine" (the default: each
            party releases a noisy fine 1-way histogram of each of its numeric columns, and
            values are drawn by it; :mod:`vertimrf.within`), "uniform" or "midpoint"
            (nothing released for them).
        numeric_share: with values "fine" and a numeric column: the fraction of rho the
            fine histograms take in all, split evenly over the numeric columns.
    """

    METHOD: ClassVar[str] = "secure"
    PIPELINE: ClassVar[str] = "select"
    binned: ClassVar[None] = None  # no binned columns (the paper pipeline's setting)
    RECORD_SETS: ClassVar[str] = "partial"
    LATER: ClassVar[frozenset[str]] = frozenset({"buckets", "workload", "values", "numeric_share"})
    SELECT: ClassVar[Mapping[str, str]] = MappingProxyType(
        {"method": "secure", "secure_pipeline": "select"}
    )
    # FLAT (each field under "secure_" + its name) is set below the class, from its fields.

    shares: Mapping[str, float] | str = DEFAULTS["secure_shares"]
    refine_fraction: float = DEFAULTS["secure_refine_fraction"]
    feature_width: int | str = DEFAULTS["secure_feature_width"]
    iters: int = DEFAULTS["secure_iters"]
    max_clique_cells: float = DEFAULTS["secure_max_clique_cells"]
    max_total_cells: float = DEFAULTS["secure_max_total_cells"]
    binning: str = DEFAULTS["secure_binning"]
    buckets: int = DEFAULTS["secure_buckets"]
    workload: tuple[tuple[tuple[str, ...], float], ...] | None = DEFAULTS["secure_workload"]
    values: str = DEFAULTS["secure_values"]
    numeric_share: float = DEFAULTS["secure_numeric_share"]

    def __post_init__(self) -> None:
        if self.workload is not None:
            entries = workload_entries(self.workload)
            _require(
                all(isinstance(c, str) for columns, _ in entries for c in columns),
                f"a config's workload names columns by name; got {self.workload!r:.80}.",
            )
            object.__setattr__(self, "workload", entries)
        if isinstance(self.shares, str):
            _require(
                self.shares == "auto",
                f"shares must be 'auto' or name count, select and measure; got {self.shares!r}.",
            )
        else:
            need = {"count", "select", "measure"}
            _frozen_shares(self, "shares", need, need)
        _require(
            is_number(self.refine_fraction) and 0 <= self.refine_fraction < math.inf,
            f"refine_fraction must be a finite number >= 0; got {self.refine_fraction!r}.",
        )
        _require(
            self.feature_width == "auto" or is_int(self.feature_width, 1),
            f"feature_width must be 'auto' or an integer >= 1; got {self.feature_width!r}.",
        )
        _require(is_int(self.iters, 1), f"iters must be an integer >= 1; got {self.iters!r}.")
        _positive(self, "max_clique_cells", "max_total_cells")
        _choice(self.binning, SECURE_BINNING, "binning")
        check_buckets(self.buckets)
        _choice(self.values, PLACEMENTS, "values")
        _require(
            is_number(self.numeric_share) and 0 < self.numeric_share < 1,
            f"numeric_share must lie in (0, 1); got {self.numeric_share!r}.",
        )

    def paper(self) -> PaperOptions:
        """ConfigError: the select pipeline has none of the paper pipeline's settings."""
        raise ConfigError(
            "the secure select pipeline has no local models, bins or budget shares of the "
            "paper pipeline (its settings are SecureOptions')."
        )

    def secure(self) -> SecureOptions:
        """These settings."""
        return self

    def binned_columns(self, spec: DomainSpec) -> tuple[str, ...]:
        """None: the select pipeline bins no column up front."""
        return ()


SecureOptions.FLAT = MappingProxyType({f"secure_{f.name}": f.name for f in fields(SecureOptions)})

Options = SecureOptions | SecurePaperOptions | FOOptions | FMOptions
OPTION_TYPES: dict[str, type[Options]] = {
    cls.__name__: cls for cls in (SecureOptions, SecurePaperOptions, FOOptions, FMOptions)
}
FLAT_NAMES = sorted({name for cls in OPTION_TYPES.values() for name in cls.FLAT} | set(SELECTORS))


def options_class(method: object, pipeline: object = None) -> type[Options]:
    """The options class of ``method`` (and, for "secure", ``pipeline``; None: the default)."""
    _choice(method, METHODS, "method")
    if pipeline is not None:
        _choice(pipeline, SECURE_PIPELINES, "secure_pipeline")
    want = {"method": method, "secure_pipeline": pipeline or DEFAULTS["secure_pipeline"]}
    (cls,) = [c for c in OPTION_TYPES.values() if all(want[k] == v for k, v in c.SELECT.items())]
    if pipeline is not None and "secure_pipeline" not in cls.SELECT:
        raise ConfigError(f"secure_pipeline is an option of method 'secure', not {method!r}.")
    return cls


def describe(cls: type[Options]) -> str:
    """The method's name in messages."""
    return " ".join(f"{k} {v!r}" for k, v in cls.SELECT.items())


def from_flat(
    base: Mapping[str, Any], changes: Mapping[str, Any], *, where: str = "the config"
) -> Options:
    """Options from flat names: ``base`` (a preset, an old config file, or the current
    options) gives what the chosen method reads and the rest is dropped; every name in
    ``changes`` must be one the method reads (ConfigError otherwise)."""
    unknown_fields(where, [k for k in changes if k not in FLAT_NAMES], FLAT_NAMES)
    method = changes.get("method", base.get("method", DEFAULTS["method"]))
    cls = options_class(method, changes.get("secure_pipeline"))
    if "secure_pipeline" not in changes and "secure_pipeline" in cls.SELECT:
        cls = options_class(method, base.get("secure_pipeline"))
    for name in changes:
        if name not in SELECTORS and name not in cls.FLAT:
            raise ConfigError(
                f"{name} is not a setting of {describe(cls)}; its settings are "
                f"{', '.join(cls.FLAT)}{close_names(name, cls.FLAT)}."
            )
    merged = {**base, **changes}
    values = {cls.FLAT[k]: v for k, v in merged.items() if k in cls.FLAT}
    return cls(**values)


def options_from_dict(data: object) -> Options:
    """Inverse of ``to_dict`` of an options object."""
    if not isinstance(data, Mapping) or data.get("type") not in OPTION_TYPES:
        raise ConfigError(
            f"options must be a JSON object whose type is one of {sorted(OPTION_TYPES)}; "
            f"got {data!r:.80}."
        )
    values = {k: v for k, v in data.items() if k != "type"}
    return OPTION_TYPES[data["type"]](**values)
