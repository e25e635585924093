"""The server's session in a secure run, fixed when it is built: the config and plan, its
key pair and own secret, the record-set strategy, its ledger and its seed; and the steps'
shared reading of the parties' releases: checked, and summed (the two padded shares of each
cross block added, the pads cancel) with the server's own N_Z(0, sigma^2 / 2), drawn from
the noise each step derives from the session (:func:`randomness`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from hashlib import sha256

import numpy as np

from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import DomainSpec
from vertimrf.errors import DomainError, MessageError
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import KeyedSampler, NoiseSampler
from vertimrf.privacy.samplers import randomness as seeded_randomness
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.secure.marginals import BinMaps, Marginal
from vertimrf.protocol.secure.plan import MEASURE, SecurePlan
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.protocol.seeds import SERVER, role_seed, seeded_stream
from vertimrf.protocol.setup import RunSetup, secure_setup
from vertimrf.server.methods import server_strategy
from vertimrf.server.secure.record_sets import RecordSets, record_sets
from vertimrf.synth.engine.tables import Tables
from vertimrf.synth.privmrf.options import PrivMRFOptions


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
    s = sigma / math.sqrt(2.0)
    for p, q in plan.pairs():
        key = plan.pair_name(p, q)
        blocks = plan.cross_blocks(marginals, p, q)
        if not blocks:
            continue
        parts = [by_party[plan.names[i]].cross[key] for i in (p, q)]
        summed = plan.signed(parts[0] + parts[1])
        noisy = summed + noise.discrete_gaussian(s, summed.shape)
        start = 0
        for m in blocks:
            size = plan.cells(m, bins.get(m))
            values[m] = noisy[start : start + size].astype(np.float64)
            scale[m] = sigma * math.sqrt(1.5)
            start += size
    return Tables(values, scale)
