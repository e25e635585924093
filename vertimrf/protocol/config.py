"""ProtocolConfig: the public settings every role of the vertical protocol agrees on.

Budget shares are fractions of the zCDP budget rho of (epsilon, delta) and must sum to at
most 1. ``locmrf`` is split evenly over the parties (each party's local model sees every
individual), ``locenc`` pays for all t*d sketches (or the GRR reports), ``count`` for the one
noisy record count, ``binning`` for the noisy value counts of the binned attributes. When no
attribute is binned, the binning share goes to ``locenc``.

A config pins one run: ``run_nonce`` is fresh random for every new config, and the hash keys
and the FO row order are derived from (shared secret, config hash), so a retry under a new
config never reuses a person's hash values. ``t="auto"`` is resolved once, when the config
is made, from the public ``max_rows`` only.

``method="fm"`` (the paper's sketches) and ``hash="xxh64"`` (not a PRF) are NOT
differentially private (``docs/fm-privacy-gap.md``); a config with either is refused with a
:class:`~vertimrf.errors.PrivacyError` unless ``allow_non_dp=True``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import secrets
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from vertimrf.domain import DomainSpec
from vertimrf.errors import ConfigError, PrivacyError, VertimrfError
from vertimrf.io import atomic_write_text, read_json
from vertimrf.privacy.calibration import ACCOUNTING_MODES
from vertimrf.protocol.seeds import SERVER

if TYPE_CHECKING:
    from vertimrf.protocol.plan import RunPlan

_PARTY_NAME = re.compile(r"[A-Za-z0-9_.-]+")

# The `default` preset names every setting that changes a run's output, and the dataclass's
# defaults are read from it, so presets are the only source of defaults. Our tuning, measured
# on NLTCS at eps 0.8 / 3.2 (mean 3-way TVD of 2 seeds): paper preset 0.025 / 0.025; t=16000
# alone 0.019 at 3.2; plus more cross edges and cross marginals 0.012 / 0.0085. Cross-party
# estimates are post-processing, so using more of them is free in privacy; t costs encoding
# time (seconds at this size). Adult at eps 1.6: a 1e6-cell model gives the same 3-way TVD
# as 4e6 (0.065) in a third of the server time (35 s instead of 114 s). The local PrivMRF caps
# are the reference LocMRF's, which keep the local model, and so the message, small.
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
    # server's selection) and the re-measurement of the chosen marginals, as fractions of rho;
    # and how many marginals beyond the initial set the server re-measures (times d).
    "secure_shares": {"count": 0.001, "select": 0.5, "measure": 0.499},
    "secure_refine_fraction": 1.6,
    # "auto": min(576, 2^26 / max_rows as a power of two), at least the widest attribute
    # (vertimrf.protocol.secure.feature_width): 576 up to max_rows 65536, 64 at 2^20.
    "secure_feature_width": "auto",
    "secure_iters": 1000,
    # The ceilings of the server's model caps, which grow with the measurements' precision
    # (SecureServer.model_caps).
    "secure_max_clique_cells": 2e5,
    "secure_max_total_cells": 1e6,
    # "select": one budget and PrivMRF's selection over the whole table (docs/protocol.md);
    # "paper": the paper's LocMRF -> GraphCom -> InitMRF -> OptMRF on secure estimates of
    # every binned cross-party 2-way marginal (the "locenc" share), to compare the two.
    "secure_pipeline": "select",
    # "auto": the select pipeline's server re-measures a 2-way marginal on bins of its large
    # attributes where its estimated error is lower than at the full domain, and fits the
    # bin sums as linear queries (vertimrf.server.binning); on Adult with merged columns
    # (domains up to 656 values) it beat "off" at every epsilon (bench_secure_binning.md).
    # "off": every marginal at its full domain.
    "secure_binning": "auto",
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
NON_DP_REASON = (
    "the paper's FM sketches are not differentially private: one record's geometric hash value "
    "enters a register of every one of its attributes under the same key, so the registers "
    "share randomness and the paper's composition (Theorem 2) fails; for a record that is the "
    "only holder of its values in two or more columns the privacy loss is unbounded (bundled "
    "Adult demo: worst-case delta >= 6.4e-4 for two such columns and 0.76 for all 15, against "
    "a claimed 2.2e-5)"
)
NONCE_HEX_CHARS = 32
POSITIVE_FIELDS = (
    "tau",
    "max_model_cells",
    "cross_weight",
    "local_max_clique_cells",
    "local_max_total_cells",
    "secure_max_clique_cells",
    "secure_max_total_cells",
)


def _is_int(value: object, at_least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= at_least


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


HASHES = ("siphash24", "xxh64")
RECOVERY = ("hisrec", "unisam")


@dataclass(frozen=True)
class PartySpec:
    """A party's public name and the columns it owns."""

    name: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class ProtocolConfig:
    """Public protocol settings; identical at every party and the server (checked by hash).

    Attributes:
        epsilon, delta: the budget of the whole protocol (all parties together).
        spec: the public domain of every column; parties: who owns which columns.
        count_party: the one party that releases the noisy record count (default: first).
        preset, shares: the budget split (fractions of the zCDP rho; see the module doc).
        t, gamma, hash: sketch repetitions (an integer; "auto" is resolved by from_preset), the
            geometric base 1 + gamma, and the keyed hash ("siphash24" or "xxh64").
        bins, binned: b, and the binned columns (default: every column with more than b
            values).
        tau, max_model_cells: GraphCom's limits on the largest clique and on all cliques.
        cross_edge_fraction: GraphCom adds at most this fraction of the cross-party pairs.
        cross_marginals: OptMRF fits this many cross-party 2-way marginals (None: the
            reference's int(0.8 d)); cross_weight scales their weight against the local
            measurements' median weight.
        method: "secure" (the secure product of cross counts, DP), "fo" (GRR) or "fm"
            (sketches, NOT DP); carest: the sketch estimator; accounting:
            "zcdp" or "theorem2" (the paper's Theorem 2 for the sketches' epsilon').
        recovery: "hisrec" or "unisam"; consistency: enforce it; local_mrf: run LocMRF
            (False is the ablation: its share goes to LocEnc).
        server_iters: mirror-descent iteration cap of each OptMRF round (the last gets 3x).
        local_max_clique_cells, local_max_total_cells: the local PrivMRF's model caps.
        secure_shares, secure_refine_fraction: method="secure"'s split of rho (count, the
            first release for selection, the re-measurement) and its number of re-measured
            marginals beyond the initial set (times d); secure_feature_width caps each party's
            one-hot width (attribute pairs and triples are added within it, so that cross
            marginals of higher order can be measured): an integer, or "auto" (the default),
            min(576, 2^26 / max_rows rounded down to a power of two), never below the
            widest attribute's domain, so that a party's work (max_rows x width words) stays
            bounded at any size (:func:`vertimrf.protocol.secure.feature_width`);
            secure_iters caps each of the server's two mirror-descent fits;
            secure_max_clique_cells and secure_max_total_cells are the ceilings of the
            server's model caps (its graph search; the caps grow with the precision).
            secure_pipeline: "select" (one budget, the server's selection over the whole
            table) or "paper" (local models, then secure estimates of every binned cross
            pair in place of FO's GRR rows, with the FO budget split ``shares``).
            secure_binning: "auto" (the default: the select pipeline's server re-measures a
            2-way marginal on bins of its large attributes where its estimated error is lower
            than at the full domain, and fits the bin sums as linear queries) or "off"
            (every marginal at its full domain).
        allow_non_dp: accept a method that is NOT differentially private (FM sketches, the
            xxh64 hash); without it such a config raises PrivacyError.
        max_rows: a public upper bound on the number of records (never the true count);
            ``t="auto"`` needs it.
        max_memory_gb: the memory (GB, 10^9 bytes) any one role may need; a config whose
            estimated peak (:meth:`plan`) is larger is refused. None: 16 GB. Written to
            the config file only when set, so that configs without it keep their hash.
        run_nonce: fresh random hex per config (made when empty); binds keys to the run.
    """

    epsilon: float
    delta: float
    spec: DomainSpec
    parties: tuple[PartySpec, ...]
    count_party: str = ""
    preset: str = "default"
    shares: dict[str, float] = field(default_factory=lambda: dict(DEFAULTS["shares"]))
    t: int | str = DEFAULTS["t"]
    gamma: float = DEFAULTS["gamma"]
    hash: str = DEFAULTS["hash"]
    bins: int = DEFAULTS["bins"]
    binned: tuple[str, ...] | None = DEFAULTS["binned"]
    tau: float = DEFAULTS["tau"]
    max_model_cells: float = DEFAULTS["max_model_cells"]
    cross_edge_fraction: float = DEFAULTS["cross_edge_fraction"]
    cross_weight: float = DEFAULTS["cross_weight"]
    cross_marginals: int | None = DEFAULTS["cross_marginals"]
    method: str = DEFAULTS["method"]
    carest: str = DEFAULTS["carest"]
    accounting: str = DEFAULTS["accounting"]
    recovery: str = DEFAULTS["recovery"]
    consistency: bool = DEFAULTS["consistency"]
    local_mrf: bool = DEFAULTS["local_mrf"]
    server_iters: int = DEFAULTS["server_iters"]
    local_max_clique_cells: float = DEFAULTS["local_max_clique_cells"]
    local_max_total_cells: float = DEFAULTS["local_max_total_cells"]
    secure_shares: dict[str, float] = field(default_factory=lambda: dict(DEFAULTS["secure_shares"]))
    secure_refine_fraction: float = DEFAULTS["secure_refine_fraction"]
    secure_feature_width: int | str = DEFAULTS["secure_feature_width"]
    secure_iters: int = DEFAULTS["secure_iters"]
    secure_max_clique_cells: float = DEFAULTS["secure_max_clique_cells"]
    secure_max_total_cells: float = DEFAULTS["secure_max_total_cells"]
    secure_pipeline: str = DEFAULTS["secure_pipeline"]
    secure_binning: str = DEFAULTS["secure_binning"]
    allow_non_dp: bool = False
    max_rows: int | None = None
    max_memory_gb: float | None = None
    run_nonce: str = ""

    @classmethod
    def from_preset(
        cls,
        preset: str,
        *,
        epsilon: float,
        delta: float,
        spec: DomainSpec,
        parties: list[tuple[str, list[str]]] | list[list[str]],
        **overrides: object,
    ) -> ProtocolConfig:
        """A config from a named preset; ``parties`` are (name, columns) pairs or column lists.

        ``t="auto"`` is resolved here, once, from the public ``max_rows`` (see
        :func:`vertimrf.protocol.autot.choose_t`).
        """
        if preset not in PRESETS:
            raise ConfigError(f"unknown preset {preset!r}; use one of {sorted(PRESETS)}.")
        specs = []
        for i, p in enumerate(parties):
            name, cols = p if isinstance(p, tuple) else (f"party{i}", p)
            specs.append(PartySpec(str(name), tuple(str(c) for c in cols)))
        base = {
            **PRESETS[preset],
            "shares": dict(PRESETS[preset]["shares"]),
            "secure_shares": dict(PRESETS[preset]["secure_shares"]),
        }
        base.update(overrides)
        auto = base.get("t") == "auto"
        if auto:
            if base.get("max_rows") is None:
                raise ConfigError(
                    "t='auto' needs max_rows, a public upper bound on the number of records "
                    "(never the true count), to choose t from public information only."
                )
            base["t"] = PRESETS["paper"]["t"]
        cfg = cls(
            epsilon=epsilon, delta=delta, spec=spec, parties=tuple(specs), preset=preset, **base
        )
        if auto:
            from vertimrf.protocol.autot import choose_t

            cfg = cfg.with_changes(t=choose_t(cfg, cfg.max_rows))
        return cfg

    def __post_init__(self) -> None:
        numbers = all(
            isinstance(x, int | float) and not isinstance(x, bool)
            for x in (self.epsilon, self.delta)
        )
        if not numbers or not (0 < self.epsilon < math.inf) or not (0 < self.delta < 1):
            raise ConfigError(
                f"need a finite epsilon > 0 and 0 < delta < 1; got {self.epsilon!r}, "
                f"{self.delta!r}."
            )
        if len(self.parties) < 2:
            raise ConfigError("the vertical protocol needs at least two parties.")
        owned = [c for p in self.parties for c in p.columns]
        if sorted(owned) != sorted(self.spec.names):
            dup = sorted({c for c in owned if owned.count(c) > 1})
            missing = sorted(set(self.spec.names) - set(owned))
            extra = sorted(set(owned) - set(self.spec.names))
            raise ConfigError(
                "every column must belong to exactly one party: "
                f"owned twice {dup}, unowned {missing}, not in the spec {extra}."
            )
        names = [p.name for p in self.parties]
        bad = [n for n in names if not _PARTY_NAME.fullmatch(n) or n == SERVER]
        if bad:
            raise ConfigError(
                f"party names {bad} are not allowed: use letters, digits, '_', '.' or '-' "
                f"(no '+', which joins pair names), and not {SERVER!r}."
            )
        if len(set(names)) != len(names):
            raise ConfigError(f"party names must be unique; got {names}.")
        if not self.count_party:
            object.__setattr__(self, "count_party", names[0])
        elif self.count_party not in names:
            raise ConfigError(f"count_party {self.count_party!r} is not one of {names}.")
        if not self.run_nonce:
            object.__setattr__(self, "run_nonce", secrets.token_hex(NONCE_HEX_CHARS // 2))
        self._check_choices()
        self._check_run()
        self._check_numbers()
        self._check_shares()
        self._check_privacy()
        self._check_finite()
        from vertimrf.protocol.plan import check_plan

        check_plan(self)

    def _check_choices(self) -> None:
        for value, allowed, what in (
            (self.method, METHODS, "method"),
            (self.hash, HASHES, "hash"),
            (self.accounting, ACCOUNTING_MODES, "accounting"),
            (self.recovery, RECOVERY, "recovery"),
            (self.carest, CAREST_METHODS, "carest"),
        ):
            if value not in allowed:
                raise ConfigError(f"{what} must be one of {allowed}; got {value!r}.")
        if self.binned is not None:
            unknown = sorted(set(self.binned) - set(self.spec.names))
            if unknown:
                raise ConfigError(f"binned columns {unknown} are not in the spec.")

    def _check_run(self) -> None:
        if self.t == "auto":
            raise ConfigError(
                "t='auto' is resolved when the config is made: use ProtocolConfig.from_preset("
                "..., t='auto', max_rows=N) with a public upper bound N on the record count."
            )
        _require(_is_int(self.t, 1), f"t must be a positive integer; got {self.t!r}.")
        _require(
            self.max_rows is None or _is_int(self.max_rows, 1),
            f"max_rows must be None or an integer >= 1; got {self.max_rows!r}.",
        )
        _require(
            self.method != "secure" or self.max_rows is not None,
            "method='secure' needs max_rows: a public upper bound on the number of records, "
            "to which every party pads its rows so that message sizes reveal nothing about the "
            "true count (give e.g. max_rows=50000, or --max-rows on the command line).",
        )
        nonce = self.run_nonce
        _require(
            isinstance(nonce, str)
            and len(nonce) >= NONCE_HEX_CHARS
            and all(ch in "0123456789abcdef" for ch in nonce),
            f"run_nonce must be at least {NONCE_HEX_CHARS} lowercase hex characters; leave it "
            "empty to draw a fresh one.",
        )

    def _check_numbers(self) -> None:
        _require(0 < self.gamma <= 1, f"gamma must be in (0, 1]; got {self.gamma}.")
        _require(
            _is_int(self.server_iters, 1),
            f"server_iters must be an integer >= 1; got {self.server_iters!r}.",
        )
        for name in POSITIVE_FIELDS:
            value = getattr(self, name)
            _require(
                isinstance(value, int | float) and 0 < value < float("inf"),
                f"{name} must be a positive number; got {value!r}.",
            )
        _require(
            self.cross_marginals is None or _is_int(self.cross_marginals, 0),
            f"cross_marginals must be None or an integer >= 0; got {self.cross_marginals!r}.",
        )
        _require(
            0 <= self.cross_edge_fraction <= 1,
            f"cross_edge_fraction must be in [0, 1]; got {self.cross_edge_fraction!r}.",
        )
        _require(self.bins >= 2, f"bins must be >= 2; got {self.bins}.")
        _require(
            self.max_memory_gb is None
            or (
                isinstance(self.max_memory_gb, int | float)
                and not isinstance(self.max_memory_gb, bool)
                and 0 < self.max_memory_gb < math.inf
            ),
            f"max_memory_gb must be None or a positive number; got {self.max_memory_gb!r}.",
        )

    def _check_shares(self) -> None:
        need = {"locmrf", "locenc", "count", "binning"}
        if set(self.shares) != need:
            raise ConfigError(
                f"shares must name exactly {sorted(need)}; got {sorted(self.shares)}."
            )
        if any(not (v >= 0) for v in self.shares.values()) or sum(self.shares.values()) > 1 + 1e-12:
            raise ConfigError(f"shares must be >= 0 and sum to at most 1; got {self.shares}.")
        if self.shares["count"] <= 0 or self.shares["locenc"] <= 0:
            raise ConfigError("the count and locenc shares must be positive.")
        if self.local_mrf and self.shares["locmrf"] <= 0:
            raise ConfigError("local_mrf needs a positive locmrf share.")
        secure = self.secure_shares
        need = {"count", "select", "measure"}
        if not isinstance(secure, dict) or set(secure) != need:
            raise ConfigError(f"secure_shares must name exactly {sorted(need)}; got {secure!r}.")
        if any(not (v > 0) for v in secure.values()) or sum(secure.values()) > 1 + 1e-12:
            raise ConfigError(f"secure_shares must be positive and sum to at most 1; got {secure}.")
        _require(
            isinstance(self.secure_refine_fraction, int | float)
            and 0 <= self.secure_refine_fraction < float("inf"),
            f"secure_refine_fraction must be >= 0; got {self.secure_refine_fraction!r}.",
        )
        _require(
            self.secure_pipeline in SECURE_PIPELINES,
            f"secure_pipeline must be one of {SECURE_PIPELINES}; got {self.secure_pipeline!r}.",
        )
        _require(
            self.secure_binning in SECURE_BINNING,
            f"secure_binning must be one of {SECURE_BINNING}; got {self.secure_binning!r}.",
        )
        _require(
            self.secure_pipeline != "paper" or self.local_mrf,
            "secure_pipeline='paper' needs local_mrf=True: its secure release measures only "
            "the cross-party pairs, the local models cover the rest.",
        )
        _require(
            _is_int(self.secure_iters, 1),
            f"secure_iters must be an integer >= 1; got {self.secure_iters!r}.",
        )
        _require(
            self.secure_feature_width == "auto" or _is_int(self.secure_feature_width, 1),
            "secure_feature_width must be 'auto' or an integer >= 1; got "
            f"{self.secure_feature_width!r}.",
        )

    def _check_privacy(self) -> None:
        if self.allow_non_dp is not True and self.allow_non_dp is not False:
            raise ConfigError(f"allow_non_dp must be True or False; got {self.allow_non_dp!r}.")
        if self.allow_non_dp:
            return
        if self.method == "fm":
            raise PrivacyError(
                f"method='fm' refused: {NON_DP_REASON}. Use method='fo' (DP), or set "
                "allow_non_dp=True (--allow-non-dp on the command line) to run the paper's method "
                "for reproduction; its report will say it is NOT differentially private."
            )
        if self.hash == "xxh64":
            raise PrivacyError(
                "hash='xxh64' refused: xxh64 is not a keyed pseudorandom function, so hash values "
                "can leak which records hold which values. Use hash='siphash24', or set "
                "allow_non_dp=True to accept a run that is NOT differentially private."
            )

    def _check_finite(self) -> None:
        """Every number of the config is finite (its file is standard JSON)."""
        for name, value in self.to_dict().items():
            inner = value.items() if isinstance(value, dict) else [("", value)]
            for key, v in inner:
                if isinstance(v, float) and not math.isfinite(v):
                    where = f"{name}[{key!r}]" if key else name
                    raise ConfigError(f"{where} must be a finite number; got {v!r}.")

    def plan(self) -> RunPlan:
        """What this config's run costs: every release, the worst-case ledger total, and each
        role's bytes and estimated peak memory (:mod:`vertimrf.protocol.plan`)."""
        from vertimrf.protocol.plan import run_plan

        return run_plan(self)

    @property
    def dp_guarantee(self) -> bool:
        """True when every mechanism of this config is differentially private (the hash is
        used only by the FM sketches, so FM is the one non-DP path)."""
        return self.method != "fm"

    def run_context(self) -> bytes:
        """Bytes that bind derived keys to this run: the config hash (which covers the nonce)."""
        return b"vertimrf/run/" + self.config_hash().encode("ascii")

    def party(self, name: str) -> PartySpec:
        """The party called ``name``."""
        for p in self.parties:
            if p.name == name:
                return p
        raise ConfigError(f"no party {name!r}; parties are {[p.name for p in self.parties]}.")

    def binned_columns(self) -> tuple[str, ...]:
        """Columns that are binned: the explicit list, or every column with more than b codes."""
        if self.binned is not None:
            return self.binned
        return tuple(c.name for c in self.spec.columns if c.size > self.bins)

    def with_changes(self, **changes: object) -> ProtocolConfig:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def to_dict(self) -> dict:
        """JSON-ready form."""
        d = asdict(self)
        d["spec"] = self.spec.to_dict()
        d["parties"] = [{"name": p.name, "columns": list(p.columns)} for p in self.parties]
        d["binned"] = None if self.binned is None else list(self.binned)
        if self.max_memory_gb is None:
            del d["max_memory_gb"]
        return d

    @classmethod
    def from_dict(cls, data: dict) -> ProtocolConfig:
        """Inverse of :meth:`to_dict`."""
        if not isinstance(data, dict):
            raise ConfigError(f"a protocol config is a JSON object; got {type(data).__name__}.")
        d = dict(data)
        try:
            d["spec"] = DomainSpec.from_dict(d["spec"])
            d["parties"] = tuple(
                PartySpec(str(p["name"]), tuple(str(c) for c in p["columns"])) for p in d["parties"]
            )
            if d.get("binned") is not None:
                d["binned"] = tuple(d["binned"])
            return cls(**d)
        except VertimrfError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"invalid protocol config: {exc!r}.") from None

    def config_hash(self) -> str:
        """SHA-256 of the canonical JSON form; every message carries it."""
        blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def save(self, path: str | os.PathLike) -> None:
        """Write the config as JSON (atomically)."""
        atomic_write_text(path, json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: str | os.PathLike) -> ProtocolConfig:
        """Read a config written by :meth:`save`."""
        data = read_json(path, ConfigError, "config file")
        return cls.from_dict(data)
