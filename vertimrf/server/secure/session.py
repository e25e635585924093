"""The server's session in a secure run and its step data; design notes in docs/design/server.md."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from hashlib import sha256

import numpy as np

from vertimrf.container import read_container, write_container
from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import DomainSpec
from vertimrf.errors import DomainError, MessageError
from vertimrf.mrf.junction_tree import JunctionTree
from vertimrf.mrf.model import MarkovRandomField
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import KeyedSampler, NoiseSampler
from vertimrf.privacy.samplers import randomness as seeded_randomness
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.secure.marginals import BinMaps, Marginal, Request
from vertimrf.protocol.secure.plan import MEASURE, SecurePlan
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.protocol.seeds import SERVER, role_seed, seeded_stream
from vertimrf.protocol.setup import RunSetup, secure_setup
from vertimrf.server.methods import server_strategy
from vertimrf.server.secure.record_sets import RecordSets, record_sets
from vertimrf.synth.engine.tables import Tables
from vertimrf.synth.privmrf.options import PrivMRFOptions
from vertimrf.synth.union import UnionModel


@dataclass(frozen=True)
class ServerSession:
    """What every step of the server reads and none replaces (module doc): ``secret`` is the
    server's own (its noise derives from it), ``stream`` the secret of its keyed streams (its
    own, or one made from ``seed``: experiments, anyone who knows the seed can replay them)."""

    config: ProtocolConfig
    plan: SecurePlan
    keypair: KeyPair
    secret: bytes
    stream: bytes
    options: PrivMRFOptions
    record_sets: RecordSets
    ledger: PrivacyLedger
    seed: int | None

    @classmethod
    def build(
        cls,
        config: ProtocolConfig | RunSetup,
        seed: int | None = None,
        keypair: KeyPair | None = None,
    ) -> ServerSession:
        """The session of ``config`` (a setup's plan, derived once), under ``keypair`` (the
        parties seal their tokens to it; default a new one)."""
        config, plan = secure_setup(config)
        keypair = KeyPair.generate(SERVER) if keypair is None else keypair
        secret = keypair.local_secret()
        sets = record_sets(plan)  # partial: region counts too
        ledger = PrivacyLedger(rho=plan.rho + plan.numeric_rho + sets.rho, delta=config.delta)
        stream = secret if seed is None else seeded_stream(seed, SERVER)
        options = server_strategy(config).search_options(config)
        return cls(config, plan, keypair, secret, stream, options, sets, ledger, seed)


STATE_KIND = "vertimrf-secure-server-state"


@dataclass
class StepData:
    """What the server's steps have made (module doc); None or empty until the step that
    makes it."""

    spec: DomainSpec  # the config's, with the parties' DP quantile cuts once select reads them
    commit_set: bytes | None = None  # the digest of the commitments the deals were made for
    first: Tables | None = None
    request: Request | None = None
    seeded_parties: tuple[str, ...] = ()
    n_hat: float = 0.0
    tree: JunctionTree | None = None
    model: MarkovRandomField | None = None
    iterations: list[int] = field(default_factory=list)
    skipped: int = 0  # partial sets: marginals the union fit could not read
    refits: list[str] = field(default_factory=list)  # each fit again with a smaller model
    max_model_cells: int | None = None  # a refit's cap on the fitted model's cells
    union: UnionModel | None = None  # partial sets: the fitted model over the union
    fine: dict[str, np.ndarray] = field(default_factory=dict)  # the fitted fine histograms

    def selected(self, before: str) -> tuple[Tables, Request, JunctionTree]:
        """The first release, the request and the tree (MessageError, saying select must
        run ``before`` the caller, until select has run)."""
        if self.first is None or self.request is None or self.tree is None:
            raise MessageError(f"run select(first releases) before {before}.")
        return self.first, self.request, self.tree

    def note_seeded(self, plan: SecurePlan, releases: Sequence[SecureRelease]) -> None:
        """Add the parties whose ``releases`` say their noise came from a seed."""
        seeded = set(self.seeded_parties) | {r.party for r in releases if r.seeded}
        self.seeded_parties = tuple(n for n in plan.names if n in seeded)

    def save(self, session: ServerSession, path: str | os.PathLike) -> None:
        """Write what a later process needs after select to ``path`` (server-private: the
        noisy first release with the server's noise, n_hat, the cliques, the request, the
        parties whose releases said they were seeded, the quantile cuts, and with partial
        record sets the deal's region counts and slots)."""
        first, request, tree = self.selected("save_state")
        keys = list(first.values)
        meta = {
            "config_hash": session.config.config_hash(),
            "n_hat": self.n_hat,
            "request": [list(m) for m in request.marginals],
            "cliques": [list(c) for c in tree.cliques],
            "tables": [list(m) for m in keys],
            "scales": [first.scale[m] for m in keys],
            "seeded_parties": list(self.seeded_parties),
            "cuts": {c: list(self.spec[c].cuts or ()) for c, *_ in session.plan.quantile},
        }
        dealt = session.record_sets.kept()
        if dealt is not None:
            meta["regions"] = dealt
        arrays = {f"t{i}": first.values[m] for i, m in enumerate(keys)}
        write_container(path, STATE_KIND, meta, arrays)

    @classmethod
    def load(
        cls, session: ServerSession, path: str | os.PathLike
    ) -> tuple[StepData, list[Marginal]]:
        """The step data :meth:`save` wrote to ``path`` but the request, and the marginals
        requested; the region counts restored to the session."""
        plan, config = session.plan, session.config
        cells = max(plan.cells(m) for m in plan.first_release())
        meta, arrays = read_container(path, STATE_KIND, array_bytes=lambda name: 8 * cells)
        if meta.get("config_hash") != config.config_hash():
            raise MessageError(f"{path}: the server state belongs to another run.")
        try:
            keys = [tuple(int(a) for a in m) for m in meta["tables"]]
            first = Tables(
                {m: arrays[f"t{i}"] for i, m in enumerate(keys)},
                dict(zip(keys, (float(x) for x in meta["scales"]), strict=True)),
            )
            seeded = meta["seeded_parties"]
            if not isinstance(seeded, list) or not set(seeded) <= set(plan.names):
                raise ValueError("seeded_parties")
            data = cls(
                spec=cut_spec(session, meta.get("cuts", {})),
                first=first,
                seeded_parties=tuple(n for n in plan.names if n in seeded),
                n_hat=float(meta["n_hat"]),
                tree=JunctionTree.build(
                    config.spec.domain,
                    [tuple(c) for c in meta["cliques"]],
                    heuristic="min_fill",
                    max_cells=int(session.options.max_total_cells),
                ),
            )
            marginals = [tuple(m) for m in meta["request"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise MessageError(f"{path}: malformed server state ({exc!r}).") from None
        if "regions" in meta:  # partial record sets: the deal's region counts and slots
            session.record_sets.restore(meta["regions"])
        return data, marginals


def randomness(
    session: ServerSession, step: str, releases: Sequence[SecureRelease]
) -> tuple[NoiseSampler, np.random.Generator]:
    """The server's noise and generator of one step. Unseeded: exact samplers on a
    keystream derived from the server's secret, the run, the step and the releases it
    sums, so a re-run on the same releases adds the same noise and spends nothing new.
    Seeded (experiments): its own stream per step."""
    if session.seed is not None:
        return seeded_randomness(role_seed(session.seed, f"{SERVER}/{step}"))
    digest = sha256("".join(sorted(r.fingerprint() for r in releases)).encode()).hexdigest()
    config_hash = session.config.config_hash()
    noise = KeyedSampler(session.secret, "server-noise", config_hash, step, digest)
    return noise, noise.generator()


def check_releases(
    session: ServerSession,
    release: str,
    marginals: Sequence[Marginal],
    releases: Sequence[SecureRelease],
    bins: Mapping[Marginal, BinMaps] | None = None,
) -> None:
    """MessageError unless ``releases`` are exactly one ``release`` message of this run
    from each party, holding every marginal and share of ``marginals`` at its size."""
    plan, bins = session.plan, bins or {}
    seen: set[str] = set()
    for r in releases:
        if r.party in seen:
            raise MessageError(
                f"two releases from party {r.party}: give each party's {release} release once."
            )
        seen.add(r.party)
    if seen != set(plan.names):
        raise MessageError(
            f"the {release} release needs one message from each of {list(plan.names)}; got "
            f"{[r.party for r in releases]}."
        )
    expected = session.config.config_hash()
    for r in releases:
        if r.release != release or r.config_hash != expected:
            raise MessageError(
                f"{r.party!r}'s message is the {r.release!r} release of run "
                f"{r.config_hash[:12]}, not the {release!r} release of this run "
                f"({expected[:12]}): a replayed or foreign message."
            )
    by_party = {r.party: r for r in releases}
    for m in marginals:
        if plan.kind(m) == "within":
            v = by_party[plan.names[plan.owner[m[0]]]].within.get(m)
            if v is None or v.shape != (plan.cells(m, bins.get(m)),):
                raise MessageError(f"the {release} release lacks the marginal {m}.")
    for p, q in plan.pairs():
        key = plan.pair_name(p, q)
        blocks = plan.cross_blocks(marginals, p, q)
        if not blocks:
            continue
        total = sum(plan.cells(m, bins.get(m)) for m in blocks)
        parts = [by_party[plan.names[i]].cross.get(key) for i in (p, q)]
        if any(x is None or x.shape != (total,) for x in parts):
            raise MessageError(f"the {release} release lacks the shares of {key}.")
    if release != MEASURE:
        cut_spec(session, {c: v for r in releases for c, v in r.cuts.items()})
    elif any(r.cuts for r in releases):
        raise MessageError("a re-measurement holds quantile cuts; the first release has them.")
    for name in plan.names:
        fine = plan.fine_releases(name) if release == MEASURE else []
        want = {r.params["column"]: r.params["cells"] for r in fine}
        got = by_party[name].fine
        if set(got) != set(want) or any(got[c].shape != (k,) for c, k in want.items()):
            raise MessageError(
                f"{name!r}'s {release} release holds fine histograms of {sorted(got)}, not "
                f"of {sorted(want)} at the plan's cells."
            )


def cut_spec(session: ServerSession, cuts: Mapping[str, Sequence[float]]) -> DomainSpec:
    """The config's spec with ``cuts`` (the first release's): MessageError unless they
    are the plan's quantile columns', each a valid set of cut points."""
    want = sorted(c for c, *_ in session.plan.quantile)
    if sorted(cuts) != want:
        raise MessageError(
            f"the first release holds quantile cuts of {sorted(cuts)}, not of {want}."
        )
    spec = session.config.spec
    try:
        columns = [c.with_cuts(cuts[c.name]) if c.name in cuts else c for c in spec.columns]
    except (DomainError, TypeError, ValueError):
        raise MessageError("the first release holds malformed quantile cuts.") from None
    return DomainSpec(columns, spec.ignored)


def tables(
    session: ServerSession,
    release: str,
    marginals: Sequence[Marginal],
    releases: Sequence[SecureRelease],
    noise: NoiseSampler,
    bins: Mapping[Marginal, BinMaps] | None = None,
) -> Tables:
    """The summed, noisy tables of one release (the binned ones at their bins' cells);
    the releases were checked by :func:`check_releases`."""
    plan, bins = session.plan, bins or {}
    by_party = {r.party: r for r in releases}
    sigma = plan.sigma(release, marginals, bins)
    values, scale = {}, {}
    for m in marginals:
        if plan.kind(m) == "within":
            v = by_party[plan.names[plan.owner[m[0]]]].within[m]
            values[m], scale[m] = v.astype(np.float64), sigma
    s, scale_cross = plan.cross_noise.component(sigma), plan.cross_noise.release_scale(sigma)
    for p, q in plan.pairs():
        key = plan.pair_name(p, q)
        blocks = plan.cross_blocks(marginals, p, q)
        if not blocks:
            continue
        parts = [by_party[plan.names[i]].cross[key] for i in (p, q)]
        summed = plan.signed(parts[0] + parts[1])
        noisy = summed + noise.discrete_gaussian(s, summed.shape) if s else summed
        start = 0
        for m in blocks:
            size = plan.cells(m, bins.get(m))
            values[m] = noisy[start : start + size].astype(np.float64)
            scale[m] = scale_cross
            start += size
    return Tables(values, scale)
