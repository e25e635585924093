"""PartyMessage: everything one party sends to the server, and its file
format; design notes in docs/design/protocol.md."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from vertimrf.container import Target, read_container, source_name, write_container
from vertimrf.domain import Domain
from vertimrf.errors import ConfigError, MessageError
from vertimrf.privacy.fm import FMNoise
from vertimrf.privacy.ledger import PrivacyLedger, Release
from vertimrf.protocol.bins import BinMap
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.methods import (
    FMRules,
    FORules,
    Method,
    SecureRules,
    rules,
)
from vertimrf.protocol.schema import Fields, array_bounds
from vertimrf.protocol.sketchset import SketchSet

KIND = "party-message"


@dataclass(frozen=True)
class LocalModel:
    """A party's fitted local MRF, in the party's column names.

    ``potentials[k]`` is the log-potential table of ``cliques[k]`` (axes in the clique's
    order); ``targets[k]`` is the local model's marginal of ``measured[k]``, scaled to
    ``total``; ``weights[k]`` is that measurement's 1 / sigma.
    """

    chordal_edges: tuple[tuple[str, str], ...]
    cliques: tuple[tuple[str, ...], ...]
    potentials: tuple[np.ndarray, ...]
    measured: tuple[tuple[str, ...], ...]
    weights: tuple[float, ...]
    targets: tuple[np.ndarray, ...]
    total: float


@dataclass(frozen=True)
class PartyMessage:
    """One party's upload to the server (see the module docstring for what it may hold)."""

    party: str
    config_hash: str
    columns: tuple[str, ...]
    method: str
    hash: str
    key_fingerprint: str | None
    releases: tuple[Release, ...]
    bins: dict[str, BinMap] = field(default_factory=dict)
    sketch: SketchSet | None = None
    grr: np.ndarray | None = None
    grr_epsilon: float | None = None
    noisy_count: int | None = None
    local: LocalModel | None = None
    seeded: bool = False

    # ------------------------------------------------------------------------ checks
    def check(self, config: ProtocolConfig) -> None:
        """Raise MessageError unless this message fits ``config`` (hash, columns, shapes)."""
        where = f"message of party {self.party!r}"
        if self.config_hash != config.config_hash():
            raise MessageError(
                f"{where} was made under a different protocol config (hash "
                f"{self.config_hash[:12]}... vs {config.config_hash()[:12]}...); every party "
                "and the server must use the same config file."
            )
        spec = config.party(self.party)
        if tuple(self.columns) != spec.columns:
            raise MessageError(f"{where} has columns {self.columns}, the config {spec.columns}.")
        method = rules(config)
        want_hash = method.message_hash(config)
        if (self.method, self.hash) != (config.method, want_hash):
            raise MessageError(
                f"{where} used method {self.method!r} / hash {self.hash!r}; the config says "
                f"{config.method!r} / {want_hash!r}."
            )
        if (self.noisy_count is not None) != (self.party == config.count_party):
            raise MessageError(
                f"{where}: only the count party {config.count_party!r} releases the noisy count."
            )
        self._check_bins(config)
        if not method.local_message:
            raise MessageError(
                f"{where}: the secure select pipeline has no local messages (its parties send "
                "secure releases)."
            )
        CROSS_CHECKS[type(method)](self, config, where, self.bin_domain(config))
        if config.paper_options().local_mrf:
            self._check_local(config)

    def _check_bins(self, config: ProtocolConfig) -> None:
        binned = set(config.binned_columns())
        want = [c for c in self.columns if c in binned]
        if sorted(self.bins) != sorted(want):
            raise MessageError(
                f"message of party {self.party!r} bins {sorted(self.bins)}; the config "
                f"bins {want} of its columns."
            )
        for name, m in self.bins.items():
            u = config.spec[name].size
            if m.value_to_bin.shape != (u,) or m.noisy_counts.shape != (u,):
                raise MessageError(
                    f"message of party {self.party!r}, mechanism 'discrete_laplace_hist': the "
                    f"bin map and histogram of {name!r} must cover its {u} values; got "
                    f"{m.value_to_bin.shape} and {m.noisy_counts.shape}."
                )

    def _check_local(self, config: ProtocolConfig) -> None:
        loc = self.local
        where = f"message of party {self.party!r}"
        if loc is None:
            raise MessageError(f"{where} has no local model but the config asks for one.")
        sizes = {c: config.spec[c].size for c in self.columns}
        for attrs, table in zip(loc.cliques, loc.potentials, strict=True):
            _check_table(where, "potential", attrs, table, sizes)
        for attrs, table in zip(loc.measured, loc.targets, strict=True):
            _check_table(where, "target", attrs, table, sizes)
        if len(loc.weights) != len(loc.measured) or not all(w > 0 for w in loc.weights):
            raise MessageError(f"{where}: one positive weight per local measurement is needed.")

    def bin_domain(self, config: ProtocolConfig) -> Domain:
        """The domain the sketches / GRR rows are over (binned attributes have b values)."""
        sizes = [
            self.bins[c].n_bins if c in self.bins else config.spec[c].size for c in self.columns
        ]
        return Domain(tuple(self.columns), tuple(sizes))

    def ledger(self) -> PrivacyLedger:
        """The party's releases in a budget-free ledger."""
        led = PrivacyLedger()
        led.extend(self.releases)
        return led

    # ------------------------------------------------------------------------ file I/O
    def save(self, path: Target) -> None:
        """Write the message to ``path`` (atomically; a failed write leaves nothing), or into
        a binary file object."""
        meta: dict[str, object] = {
            "party": self.party,
            "config_hash": self.config_hash,
            "columns": list(self.columns),
            "method": self.method,
            "hash": self.hash,
            "key_fingerprint": self.key_fingerprint,
            "releases": [asdict(r) for r in self.releases],
            "bins": list(self.bins),
            "noisy_count": self.noisy_count,
            "grr_epsilon": self.grr_epsilon,
            "seeded": self.seeded,
            "sketch": None,
            "local": None,
        }
        arrays: dict[str, np.ndarray] = {}
        for i, m in enumerate(self.bins.values()):
            arrays[f"bin_map_{i}"] = m.value_to_bin
            arrays[f"bin_counts_{i}"] = m.noisy_counts
        if self.sketch is not None:
            s = self.sketch
            meta["sketch"] = {
                "names": list(s.domain.names),
                "sizes": list(s.domain.sizes),
                "noise": asdict(s.noise),
                "key_fingerprint": s.key_fingerprint,
            }
            arrays["sketch"] = s.values
        if self.grr is not None:
            arrays["grr"] = self.grr
        if self.local is not None:
            loc = self.local
            meta["local"] = {
                "chordal_edges": [list(e) for e in loc.chordal_edges],
                "cliques": [list(c) for c in loc.cliques],
                "measured": [list(m) for m in loc.measured],
                "weights": list(loc.weights),
                "total": loc.total,
            }
            for k, table in enumerate(loc.potentials):
                # float32 keeps ~7 significant digits of a log-potential (ample for the
                # server's warm start) at half the size.
                arrays[f"potential_{k}"] = table.astype(np.float32)
            for k, table in enumerate(loc.targets):
                arrays[f"target_{k}"] = table
        write_container(path, KIND, meta, arrays)

    @classmethod
    def load(cls, path: Target, config: ProtocolConfig) -> PartyMessage:
        """Read a message file made under ``config`` and check it against the config.

        Every array's size is bounded from the config before it is decompressed, and every
        malformed, oversized, tampered or mismatched file raises :class:`MessageError`.
        """
        if not isinstance(config, ProtocolConfig):
            raise ConfigError(f"config must be a ProtocolConfig; got {type(config).__name__}.")
        meta, arrays = read_container(path, KIND, array_bytes=array_bounds(config))
        where = source_name(path)
        message = cls._from_parts(Fields(meta, f"{where}: manifest meta"), arrays, where)
        message.check(config)
        return message

    @classmethod
    def _from_parts(cls, meta: Fields, arrays: dict[str, np.ndarray], path: str) -> PartyMessage:
        def array(name: str) -> np.ndarray:
            if name not in arrays:
                raise MessageError(f"{path}: the array {name!r} is missing.")
            return arrays[name]

        bins = {
            name: BinMap(array(f"bin_map_{i}"), array(f"bin_counts_{i}"))
            for i, name in enumerate(meta.texts("bins"))
        }
        sketch = None
        sm = meta.object("sketch", optional=True)
        if sm is not None:
            noise = sm.object("noise")
            names, sizes = sm.texts("names"), sm.numbers("sizes")
            if len(names) != len(sizes) or not all(u >= 1 and u == int(u) for u in sizes):
                raise MessageError(f"{path}: the sketch domain is malformed.")
            sketch = SketchSet(
                array("sketch"),
                Domain(names, tuple(int(u) for u in sizes)),
                FMNoise(
                    noise.number("eps_prime"),
                    noise.number("gamma"),
                    noise.integer("k_p"),
                    noise.integer("alpha_min"),
                ),
                sm.text("key_fingerprint"),
            )
        local = None
        lm = meta.object("local", optional=True)
        if lm is not None:
            cliques, measured = lm.text_lists("cliques"), lm.text_lists("measured")
            local = LocalModel(
                chordal_edges=_pairs(lm, "chordal_edges", path),
                cliques=cliques,
                potentials=tuple(
                    array(f"potential_{k}").astype(np.float64) for k in range(len(cliques))
                ),
                measured=measured,
                weights=lm.numbers("weights"),
                targets=tuple(array(f"target_{k}") for k in range(len(measured))),
                total=lm.number("total"),
            )
        return cls(
            party=meta.text("party"),
            config_hash=meta.text("config_hash"),
            columns=meta.texts("columns"),
            method=meta.text("method"),
            hash=meta.text("hash"),
            key_fingerprint=meta.text("key_fingerprint", optional=True),
            releases=tuple(_release(r) for r in meta.objects("releases")),
            bins=bins,
            sketch=sketch,
            grr=arrays.get("grr"),
            grr_epsilon=meta.number("grr_epsilon", optional=True),
            noisy_count=meta.integer("noisy_count", optional=True),
            local=local,
            seeded=meta.flag("seeded"),
        )


def _pairs(fields: Fields, key: str, path: str) -> tuple[tuple[str, str], ...]:
    pairs = fields.text_lists(key)
    if not all(len(p) == 2 for p in pairs):
        raise MessageError(f"{path}: every entry of {key!r} must be a pair of column names.")
    return tuple((a, b) for a, b in pairs)


def _release(fields: Fields) -> Release:
    count = fields.integer("count")
    rho = fields.number("rho")
    if count < 1 or rho < 0:
        raise MessageError(f"{fields.where}: a release needs count >= 1 and rho >= 0.")
    return Release(
        mechanism=fields.text("mechanism"),
        description=fields.text("description"),
        rho=rho,
        count=count,
        party=fields.text("party", optional=True),
        params=fields.raw_object("params"),
    )


def _check_table(
    where: str, what: str, attrs: tuple[str, ...], table: np.ndarray, sizes: dict[str, int]
) -> None:
    unknown = [a for a in attrs if a not in sizes]
    if unknown:
        raise MessageError(f"{where}: local {what} over columns {unknown} it does not own.")
    shape = tuple(sizes[a] for a in attrs)
    if table.shape != shape or not np.all(np.isfinite(table) | (table == -np.inf)):
        raise MessageError(
            f"{where}: local {what} over {attrs} has shape {table.shape} (needs {shape}) or "
            "NaN / +inf values."
        )


def _grr_rows(
    message: PartyMessage, config: ProtocolConfig, where: str, bin_domain: Domain
) -> None:
    grr = message.grr
    if grr is None or grr.ndim != 2 or grr.shape[1] != len(message.columns):
        raise MessageError(f"{where} has no GRR rows of shape (N, {len(message.columns)}).")
    if ((grr < 0) | (grr >= np.asarray(bin_domain.sizes))).any():
        raise MessageError(f"{where}, mechanism 'grr': GRR codes outside the binned domain.")


def _fm_sketches(
    message: PartyMessage, config: ProtocolConfig, where: str, bin_domain: Domain
) -> None:
    if message.sketch is None or message.key_fingerprint is None:
        raise MessageError(f"{where} has no FM sketches or no key fingerprint.")
    if message.sketch.domain != bin_domain:
        raise MessageError(
            f"{where}: sketch domain {message.sketch.domain.sizes} does not match the "
            f"binned domain {bin_domain.sizes}."
        )
    t = rules(config).sketch_rows(config)
    if message.sketch.t != t:
        raise MessageError(f"{where} has {message.sketch.t} sketch rows, config t={t}.")


def _no_cross_release(
    message: PartyMessage, config: ProtocolConfig, where: str, bin_domain: Domain
) -> None:
    """A secure run's local message: its cross-party release is the secure product's."""
    if message.grr is not None or message.sketch is not None:
        raise MessageError(
            f"{where}: a secure run's local message holds no GRR rows or sketches (its "
            "cross-party release is the secure product's)."
        )


# The cross-party release a local message must hold, by its method's rules (a method with
# local messages): MessageError unless it does.
CROSS_CHECKS: dict[type[Method], Callable[[PartyMessage, ProtocolConfig, str, Domain], None]] = {
    SecureRules: _no_cross_release,
    FORules: _grr_rows,
    FMRules: _fm_sketches,
}
