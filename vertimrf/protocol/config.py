"""ProtocolConfig: the public settings every role of the vertical protocol
agrees on; design notes in docs/design/protocol.md."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from vertimrf.crypto.identity import REMAKE, Identity
from vertimrf.crypto.keys import KeyPair, PublicKey
from vertimrf.domain import DomainSpec
from vertimrf.errors import ConfigError, KeyMaterialError, PrivacyError, VertimrfError
from vertimrf.io import atomic_write_text
from vertimrf.protocol.options import (
    DEFAULTS,
    FLAT_NAMES,
    OPTION_TYPES,
    PRESETS,
    Options,
    PaperOptions,
    SecureOptions,
    close_names,
    from_flat,
    is_int,
    is_number,
    options_from_dict,
    strict_fields,
    unknown_fields,
)
from vertimrf.protocol.record_sets import POPULATIONS, RECORD_SETS, REGION_SHARE, RecordSets
from vertimrf.protocol.seeds import DEALER, SERVER
from vertimrf.workload import Workload

__all__ = ["DEFAULTS", "PRESETS", "PartySpec", "ProtocolConfig"]

# Who deals the masks, by the config's ``dealer``: the server, or a role of its own.
DEALER_ROLES = {"server": SERVER, "own": DEALER}
_PARTY_NAME = re.compile(r"[A-Za-z0-9_.-]+")
NON_DP_REASON = (
    "the paper's FM sketches are not differentially private: one record's geometric hash value "
    "enters a register of every one of its attributes under the same key, so the registers "
    "share randomness and the paper's composition (Theorem 2) fails; for a record that is the "
    "only holder of its values in two or more columns the privacy loss is unbounded (bundled "
    "Adult demo: worst-case delta >= 6.4e-4 for two such columns and 0.76 for all 15, against "
    "a claimed 2.2e-5)"
)
NONCE_HEX_CHARS = 32
# The config file's format: 1 (no "format" key) is the flat one of vertimrf 0.1.0.
CONFIG_FORMAT = 2
ID_TYPES = ("integer", "text")  # a declared record-ID type (id_type)
# cross_noise: chosen by the plan's public values (the default), or set
CROSS_NOISE_NAMES = ("auto", "split", "coins")


def _flat_hint(name: str) -> str:
    if name in FLAT_NAMES:
        return (
            f" ({name!r} is a method setting: pass options=..., e.g. SecureOptions(...), or "
            f"use from_preset or ProtocolConfig.with_changes, which take {name}=...)"
        )
    return ""


@dataclass(frozen=True)
class PartySpec:
    """A party's public name and the columns it owns."""

    name: str
    columns: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(self.columns))


@strict_fields(_flat_hint)
@dataclass(frozen=True)
class ProtocolConfig:
    """Public protocol settings; identical at every party and the server (checked by hash).

    Attributes:
        epsilon, delta: the budget of the whole protocol (all parties together).
        spec: the public domain of every column; parties: who owns which columns.
        options: the method and its settings (:class:`SecureOptions`, the default;
            :class:`SecurePaperOptions`, :class:`FOOptions` or :class:`FMOptions`).
        count_party: the one party that releases the noisy record count (default: first).
        preset: the preset the config was made from (a label).
        allow_non_dp: accept a method that is NOT differentially private (FM sketches, the
            xxh64 hash); without it such a config raises PrivacyError.
        max_rows: a public upper bound on the number of records (never the true count);
            method "secure" pads to it, and FM's ``t="auto"`` needs it.
        max_memory_gb: the memory (GB, 10^9 bytes) any one role may need; a config whose
            estimated peak (:func:`~vertimrf.protocol.plan.run_plan`) is larger is refused.
            None: 16 GB.
        run_nonce: fresh random hex per config (made when empty); binds keys to the run.
        identities: every role's pinned identity (its X25519 public key and TLS
            certificate; :class:`~vertimrf.crypto.identity.Identity`), by name: every
            party and "server" (see :meth:`with_identities`). None: not pinned (omitted from
            the file and the hash).
        record_sets: "equal" (every party holds the same record IDs; checked) or "partial"
            (the parties' records differ; see docs/protocol.md). "" (the default): the
            method's, "partial" for the secure select pipeline and "equal" for the others.
            "partial", with ``population`` and ``region_share``, is written to the file and
            the hash; "equal" is not, so an equal-set config keeps its bytes (and a file
            without it reads as "equal").
        population: "partial" only: the synthetic table's rows, "intersection" (the records
            every party holds) or "union" (every record, empty where a party holds none).
        region_share: "partial" only: the fraction of the zCDP budget spent on the noisy
            region counts the server sees (:mod:`vertimrf.protocol.regions`).
        id_type: every party's record-ID column, "integer" (7, 7.0 and "007" are the ID 7)
            or "text" (taken as written), checked on every row as a party reads its table;
            "" (the default): each party's IDs as its table gives them, all integers or all
            text. Written to the file and the hash only when declared.
        expected_shared: "partial" only, a public guess: the fraction of all records that
            every party holds. When the noisy count of those records is under a quarter of
            it, the server warns that the parties' IDs likely differ in type or format.
            None: no guess (not in the file or the hash).
        product: method "secure" only: the cross product's backend by name
            (:data:`~vertimrf.protocol.secure.product.PRODUCTS`; checked with the plan).
            "dealer" (the default, the server deals the masks) is not written to the file
            or the hash.
        cross_noise: method "secure" only: a cross-party count's noise, "auto" (the
            default, not written to the file or the hash: coins where the plan bounds
            their bytes from public values, :mod:`vertimrf.protocol.secure.noise_rule`), "split"
            (three discrete Gaussians) or "coins" (``coin_weight`` of its variance in coins
            that no viewer knows, :mod:`vertimrf.protocol.secure.cross_noise`).
        coin_weight: "coins" only: the fraction in (0, 1] of sigma^2 the coins carry (1,
            the default, is not written to the file or the hash).
        dealer: method "secure" only: who deals the masks, "server" (the default, not
            written to the file or the hash) or "own" (a role of its own, ``dealer``, with
            its own key pair and steps, :data:`DEALER_ROLES`).
    """

    epsilon: float
    delta: float
    spec: DomainSpec
    parties: tuple[PartySpec, ...]
    options: Options = field(default_factory=SecureOptions)
    count_party: str = ""
    preset: str = "default"
    allow_non_dp: bool = False
    max_rows: int | None = None
    max_memory_gb: float | None = None
    run_nonce: str = ""
    identities: Mapping[str, Identity] | None = None
    record_sets: str = ""
    population: str = "intersection"
    region_share: float = REGION_SHARE
    id_type: str = ""
    expected_shared: float | None = None
    product: str = "dealer"
    dealer: str = "server"
    cross_noise: str = "auto"
    coin_weight: float = 1.0
    if TYPE_CHECKING:  # set once in __post_init__; not a field (not in the file or the hash)
        _hash: ClassVar[str]

    def __post_init__(self) -> None:
        numbers = all(map(is_number, (self.epsilon, self.delta)))
        if not numbers or not (0 < self.epsilon < math.inf) or not (0 < self.delta < 1):
            raise ConfigError(
                f"need a finite epsilon > 0 and 0 < delta < 1; got {self.epsilon!r}, "
                f"{self.delta!r}."
            )
        if not isinstance(self.spec, DomainSpec):
            raise ConfigError(f"spec must be a DomainSpec; got {type(self.spec).__name__}.")
        if type(self.options) not in OPTION_TYPES.values():
            raise ConfigError(
                "options must be SecureOptions, SecurePaperOptions, FOOptions or FMOptions; "
                f"got {type(self.options).__name__}."
            )
        parties = tuple(self.parties)
        if not all(isinstance(p, PartySpec) for p in parties):
            raise ConfigError("parties must be PartySpec objects (or use from_preset).")
        object.__setattr__(self, "parties", parties)
        if len(parties) < 2:
            raise ConfigError("the vertical protocol needs at least two parties.")
        owned = [c for p in parties for c in p.columns]
        if sorted(owned) != sorted(self.spec.names):
            dup = sorted({c for c in owned if owned.count(c) > 1})
            missing = sorted(set(self.spec.names) - set(owned))
            extra = sorted(set(owned) - set(self.spec.names))
            raise ConfigError(
                "every column must belong to exactly one party: "
                f"owned twice {dup}, unowned {missing}, not in the spec {extra}."
            )
        names = [p.name for p in parties]
        roles = dict.fromkeys((SERVER, DEALER_ROLES.get(self.dealer, SERVER)))  # an own dealer
        bad = [n for n in names if not _PARTY_NAME.fullmatch(n) or n in roles]
        if bad:
            raise ConfigError(
                f"party names {bad} are not allowed: use letters, digits, '_', '.' or '-' "
                f"(no '+', which joins pair names), and not {' nor '.join(map(repr, roles))}."
            )
        if len(set(names)) != len(names):
            raise ConfigError(f"party names must be unique; got {names}.")
        if not self.count_party:
            object.__setattr__(self, "count_party", names[0])
        elif self.count_party not in names:
            raise ConfigError(f"count_party {self.count_party!r} is not one of {names}.")
        if not self.run_nonce:
            object.__setattr__(self, "run_nonce", secrets.token_hex(NONCE_HEX_CHARS // 2))
        self._check_run()
        object.__setattr__(self, "record_sets", self.record_sets or self.options.RECORD_SETS)
        self._check_record_sets()
        if not isinstance(self.product, str) or not self.product:
            raise ConfigError(f"product must be a backend's name; got {self.product!r}.")
        secure = self.method == "secure"
        if self.product != "dealer" and not secure:
            raise ConfigError(
                f"product is a setting of method 'secure'; drop it for {self.method!r}."
            )
        if self.dealer not in DEALER_ROLES or (self.dealer != "server" and not secure):
            raise ConfigError(
                f"dealer must be one of {sorted(DEALER_ROLES)}, and 'own' only for method "
                f"'secure'; got {self.dealer!r} for {self.method!r}."
            )
        self._check_cross_noise(secure)
        self._check_ids()
        self._check_identities(names)
        self._check_privacy()
        self._check_finite()
        object.__setattr__(self, "_hash", _digest(self.to_dict()))

    def __hash__(self) -> int:
        return hash(self._hash)

    def _check_run(self) -> None:
        unmeasured = [c.name for c in self.spec.columns if not c.resolved]
        if unmeasured and self.pipeline != "select":
            raise ConfigError(
                f"columns {unmeasured} are cut at DP quantiles, which only method secure's "
                "select pipeline measures in a vertical run: use it, or give their cut points "
                "(scale 'cuts'), or scale 'equal' or 'log'."
            )
        binned = self.options.binned
        if binned is not None:
            unknown = sorted(set(binned) - set(self.spec.names))
            if unknown:
                raise ConfigError(f"binned columns {unknown} are not in the spec.")
        workload = getattr(self.options, "workload", None)
        if workload is not None:
            Workload.of(self.spec.domain, workload)  # every column is the spec's
        if not (self.max_rows is None or is_int(self.max_rows, 1)):
            raise ConfigError(f"max_rows must be None or an integer >= 1; got {self.max_rows!r}.")
        self.options.check_rows(self.max_rows)
        nonce = self.run_nonce
        if not (
            isinstance(nonce, str)
            and len(nonce) >= NONCE_HEX_CHARS
            and all(ch in "0123456789abcdef" for ch in nonce)
        ):
            raise ConfigError(
                f"run_nonce must be at least {NONCE_HEX_CHARS} lowercase hex characters; leave "
                "it empty to draw a fresh one."
            )
        gb = self.max_memory_gb
        if not (gb is None or (is_number(gb) and 0 < gb < math.inf)):
            raise ConfigError(f"max_memory_gb must be None or a positive number; got {gb!r}.")

    def _check_cross_noise(self, secure: bool) -> None:
        """ConfigError unless cross_noise and coin_weight are valid for the method."""
        if self.cross_noise not in CROSS_NOISE_NAMES:
            raise ConfigError(
                f"cross_noise must be 'auto', 'split' or 'coins'; got {self.cross_noise!r}."
            )
        weight = self.coin_weight
        if not (is_number(weight) and 0 < weight <= 1):
            raise ConfigError(f"coin_weight must be a number in (0, 1]; got {weight!r}.")
        if (self.cross_noise != "auto" or weight != 1.0) and not secure:
            raise ConfigError(
                f"cross_noise and coin_weight are settings of method 'secure'; drop them for "
                f"{self.method!r}."
            )
        if weight != 1.0 and self.cross_noise != "coins":
            raise ConfigError("coin_weight applies to cross_noise 'coins' only: set both.")

    def _check_ids(self) -> None:
        """``id_type`` is declared or not, and ``expected_shared`` a fraction of partial sets."""
        if self.id_type not in ("", *ID_TYPES):
            raise ConfigError(
                f"id_type must be one of {list(ID_TYPES)} (or '' for each party's own); got "
                f"{self.id_type!r}."
            )
        shared = self.expected_shared
        if shared is not None and not (is_number(shared) and 0 < shared <= 1):
            raise ConfigError(f"expected_shared must be a fraction in (0, 1]; got {shared!r}.")
        self.sets.check(self.population, self.region_share, shared)

    def _check_record_sets(self) -> None:
        """``record_sets``, ``population`` and ``region_share`` are known values, the last
        two left at their defaults with equal record sets (whether the method runs them is
        its rules' check, :func:`~vertimrf.protocol.plan.check_plan`)."""
        if self.record_sets not in RECORD_SETS:
            raise ConfigError(
                f"record_sets must be one of {list(RECORD_SETS)}; got {self.record_sets!r}."
            )
        if self.population not in POPULATIONS:
            raise ConfigError(
                f"population must be one of {list(POPULATIONS)}; got {self.population!r}."
            )
        share = self.region_share
        if not (is_number(share) and 0 < share < 1):
            raise ConfigError(f"region_share must lie in (0, 1); got {share!r}.")

    @property
    def dealer_role(self) -> str:
        """The role that deals the masks: the server, or an own dealer's role."""
        return DEALER_ROLES[self.dealer]

    @property
    def sets(self) -> type[RecordSets]:
        """The record sets' strategy (:mod:`vertimrf.protocol.record_sets`): its class,
        whose methods need no plan (the plan holds an instance, with its noise)."""
        return RECORD_SETS[self.record_sets]

    def _check_identities(self, names: list[str]) -> None:
        """The identities, if any, name every party and the server, once each."""
        if self.identities is None:
            return
        if not isinstance(self.identities, Mapping) or not all(
            isinstance(v, Identity) for v in self.identities.values()
        ):
            raise ConfigError("identities must map role names to Identity objects.")
        want = [*names, *sorted({SERVER, self.dealer_role})]
        if sorted(self.identities) != sorted(want):
            raise ConfigError(
                f"the identities name {sorted(self.identities)}, not every role {want}: pin "
                "every party's, the server's (and an own dealer's) public key file."
            )
        publics = [i.public for i in self.identities.values()]
        certs = [i.fingerprint for i in self.identities.values()]
        if len(set(publics)) != len(publics) or len(set(certs)) != len(certs):
            raise ConfigError("two roles have the same pinned key: each role makes its own keys.")
        ordered = {n: self.identities[n] for n in want}
        object.__setattr__(self, "identities", MappingProxyType(ordered))

    def with_identities(self, keys: Iterable[PublicKey]) -> ProtocolConfig:
        """A copy that pins ``keys`` (every party's and the server's public key, each with
        its TLS certificate) as the roles' identities (a new config hash)."""
        pinned: dict[str, Identity] = {}
        for key in keys:
            if key.certificate is None:
                raise ConfigError(
                    f"the public key of {key.name!r} has no TLS certificate; {REMAKE}."
                )
            if key.name in pinned:
                raise ConfigError(f"a second public key of {key.name!r}; give one each.")
            pinned[key.name] = Identity(key.raw.hex(), key.certificate)
        return replace(self, identities=pinned)

    def public_keys(self) -> dict[str, PublicKey]:
        """Every pinned role's public key (with its certificate), by name; ConfigError when
        the config pins none."""
        if self.identities is None:
            raise ConfigError(
                "this config pins no identities: pin every role's public key file into it "
                "(`vertimrf config --pin`)."
            )
        return {
            n: PublicKey(n, bytes.fromhex(i.public), i.certificate)
            for n, i in self.identities.items()
        }

    def check_keypair(self, keypair: KeyPair) -> None:
        """KeyMaterialError unless ``keypair`` (with its TLS identity) is the one the config
        pins for its role."""
        pinned = self.public_keys().get(keypair.name)
        if pinned is None:
            raise KeyMaterialError(
                f"the key pair is {keypair.name!r}'s, a role this config does not name."
            )
        if pinned.raw != keypair.public_bytes or pinned.certificate != keypair.tls_certificate:
            raise KeyMaterialError(
                f"{keypair.name!r}'s key pair is not the one this config pins for it: use "
                "that key file, or pin this key's public file into the config again."
            )

    def _check_privacy(self) -> None:
        if self.allow_non_dp is not True and self.allow_non_dp is not False:
            raise ConfigError(f"allow_non_dp must be True or False; got {self.allow_non_dp!r}.")
        if self.allow_non_dp:
            return
        if not self.options.DP:
            raise PrivacyError(
                f"method={self.method!r} refused: {NON_DP_REASON}. Use method='fo' (DP), or set "
                "allow_non_dp=True (--allow-non-dp on the command line) to run the paper's method "
                "for reproduction; its report will say it is NOT differentially private."
            )

    def _check_finite(self) -> None:
        """Every number of the config is finite (its file is standard JSON)."""
        for name, value in self.options.to_dict().items():
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"{name} must be a finite number; got {value!r}.")

    # ------------------------------------------------------------------ derived
    @property
    def method(self) -> str:
        """The method's name: "secure", "fo" or "fm" (read off the options' type)."""
        return self.options.METHOD

    @property
    def pipeline(self) -> str:
        """ "select" (the secure select pipeline) or "paper" (every other method)."""
        return self.options.PIPELINE

    @property
    def dp_guarantee(self) -> bool:
        """True when every mechanism of this config is differentially private (FM is the
        one non-DP method; the hash is used only by its sketches)."""
        return self.options.DP

    def run_context(self) -> bytes:
        """Bytes that bind derived keys to this run: the config hash (which covers the nonce)."""
        return b"vertimrf/run/" + self.config_hash().encode("ascii")

    def party(self, name: str) -> PartySpec:
        """The party called ``name``."""
        for p in self.parties:
            if p.name == name:
                return p
        raise ConfigError(f"no party {name!r}; parties are {[p.name for p in self.parties]}.")

    def paper_options(self) -> PaperOptions:
        """The paper pipeline's settings (methods "fo", "fm" and the secure paper pipeline);
        ConfigError for the secure select pipeline, which has none."""
        return self.options.paper()

    def secure_options(self) -> SecureOptions:
        """The secure select pipeline's settings; ConfigError for every other method."""
        return self.options.secure()

    def binned_columns(self) -> tuple[str, ...]:
        """Columns that are binned (paper-pipeline methods): the explicit list, or every
        column with more than b codes; none for the secure select pipeline."""
        return self.options.binned_columns(self.spec)

    def new_run(self) -> ProtocolConfig:
        """The same settings as a new run: a fresh run nonce, so new keys, masks, pads and
        noise. A new run spends a new budget: the two runs together are charged twice."""
        return replace(self, run_nonce=secrets.token_hex(NONCE_HEX_CHARS // 2))

    def with_changes(self, **changes: Any) -> ProtocolConfig:
        """A copy with some fields changed (validated again; the roles check its plan): shared
        fields, ``options``, or the method's settings under their flat names (``method="fo"``
        switches the method, keeping the settings both read, the rest from the config's
        preset). A switch to a method whose default is equal record sets, with no
        ``record_sets`` given, makes partial sets equal (and population, region share and
        expected shared their defaults)."""
        shared, settings = split_settings(changes, "ProtocolConfig.with_changes")
        if settings:
            if "options" in shared:
                raise ConfigError("give options=... or flat method settings, not both.")
            preset = PRESETS.get(self.preset, DEFAULTS)  # what the old method did not read
            base = {**preset, **self.options.flat()}
            shared["options"] = from_flat(base, settings, where="ProtocolConfig.with_changes")
        options = shared.get("options", self.options)
        if "record_sets" not in shared:
            shared.update(self.sets.reverted(options.RECORD_SETS))
        return replace(self, **shared)

    # ------------------------------------------------------------------ files
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        d: dict[str, Any] = {
            "format": CONFIG_FORMAT,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "spec": self.spec.to_dict(),
            "parties": [{"name": p.name, "columns": list(p.columns)} for p in self.parties],
            "count_party": self.count_party,
            "preset": self.preset,
            "method": self.method,
            "options": self.options.to_dict(),
            "allow_non_dp": self.allow_non_dp,
            "max_rows": self.max_rows,
            "run_nonce": self.run_nonce,
        }
        if self.max_memory_gb is not None:
            d["max_memory_gb"] = self.max_memory_gb
        d.update(self.sets.fields(self.population, self.region_share))
        if self.id_type:
            d["id_type"] = self.id_type
        if self.expected_shared is not None:
            d["expected_shared"] = self.expected_shared
        if self.product != "dealer":
            d["product"] = self.product
        if self.dealer != "server":
            d["dealer"] = self.dealer
        if self.cross_noise != "auto":
            d["cross_noise"] = self.cross_noise
        if self.coin_weight != 1.0:
            d["coin_weight"] = self.coin_weight
        if self.identities is not None:
            d["identities"] = {n: i.to_dict() for n, i in self.identities.items()}
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProtocolConfig:
        """Inverse of :meth:`to_dict`; a config of the first (flat) format is converted. Its
        plan is not checked here (:func:`~vertimrf.protocol.factory.load_config` does)."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"a protocol config is a JSON object; got {type(data).__name__}.")
        d = dict(data)
        try:
            if "format" not in d and "options" not in d:
                d = _from_flat_format(d)
            elif d.pop("format", None) != CONFIG_FORMAT:
                raise ConfigError(
                    f"this config file has format {data.get('format')!r}; this vertimrf reads "
                    f"format {CONFIG_FORMAT} (and converts format 1): make it again with "
                    "`vertimrf config`."
                )
            else:
                d["options"] = options_from_dict(d.get("options"))
                if d.pop("method", None) != d["options"].METHOD:
                    raise ConfigError(
                        f"invalid protocol config: its method {data.get('method')!r} is not its "
                        f"options' ({d['options'].METHOD!r})."
                    )
            unknown_fields("a protocol config", d, [f.name for f in fields(cls)])
            d.setdefault("record_sets", "equal")  # a file without it was made for equal sets
            d["spec"] = DomainSpec.from_dict(d["spec"])
            if d.get("identities") is not None:
                d["identities"] = {n: Identity.from_dict(i) for n, i in d["identities"].items()}
            d["parties"] = tuple(
                PartySpec(str(p["name"]), tuple(str(c) for c in p["columns"])) for p in d["parties"]
            )
            return cls(**d)
        except VertimrfError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"invalid protocol config: {exc!r}.") from None

    def config_hash(self) -> str:
        """SHA-256 of the canonical JSON form, computed once when the config was made; every
        message carries it."""
        return self._hash

    def save(self, path: str | os.PathLike) -> None:
        """Write the config as JSON (atomically)."""
        atomic_write_text(path, json.dumps(self.to_dict(), indent=1))


_SHARED = [f.name for f in fields(ProtocolConfig)]


def _digest(data: dict[str, Any]) -> str:
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def split_settings(values: Mapping[str, Any], where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(shared fields, flat method settings) of ``values``; ConfigError for anything else."""
    shared, settings = {}, {}
    for name, value in values.items():
        if name in _SHARED:
            shared[name] = value
        elif name in FLAT_NAMES:
            settings[name] = value
        else:
            raise ConfigError(
                f"{where}: unknown setting {name!r}{close_names(name, [*_SHARED, *FLAT_NAMES])}."
            )
    return shared, settings


def _from_flat_format(d: dict[str, Any]) -> dict[str, Any]:
    """A config of the first format (vertimrf 0.1.0: every method's settings side by side)
    in the current one: the settings its method reads become its options."""
    flat = {k: v for k, v in d.items() if k in FLAT_NAMES}
    rest = {k: v for k, v in d.items() if k not in FLAT_NAMES}
    unknown_fields("a protocol config (format 1)", rest, _SHARED)
    if "method" not in flat:
        raise ConfigError("invalid protocol config: no 'method' and no 'options'.")
    method = {"method": flat.pop("method")}  # the pipeline is read only if it applies
    rest["options"] = from_flat(flat, method, where="a protocol config (format 1)")
    return rest
