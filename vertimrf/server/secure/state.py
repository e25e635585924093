"""The server's state in a secure run, what each of its steps reads: the config and
plan, its ledger, its own secret and the noise each step derives from it, the seeded roles,
and the parties' releases checked and summed: the two padded shares of each cross block
added (the pads cancel), with the server's own N_Z(0, sigma^2 / 2). What it keeps between
processes is what select found (:mod:`vertimrf.server.secure.selection`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from hashlib import sha256
from pathlib import Path

import numpy as np

from vertimrf.crypto.keys import KeyPair, PublicKey
from vertimrf.domain import DomainSpec
from vertimrf.errors import DomainError, MessageError
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import KeyedSampler, NoiseSampler, randomness
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.secure.commit import Admit
from vertimrf.protocol.secure.marginals import BinMaps, Marginal, Request
from vertimrf.protocol.secure.plan import MEASURE
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.protocol.seeds import SERVER, role_seed, seeded_stream
from vertimrf.protocol.setup import RunSetup, secure_setup
from vertimrf.server.binning import BinChoice
from vertimrf.server.methods import server_strategy
from vertimrf.server.secure.dealer import Dealer
from vertimrf.server.secure.record_sets import RecordSets, record_sets
from vertimrf.server.slots import TokenSource
from vertimrf.synth.engine.tables import Tables
from vertimrf.synth.union import UnionModel


class ServerState:
    """The server's state in a secure run: what every step of
    :class:`~vertimrf.server.secure.SecureServer` reads."""

    def __init__(
        self,
        config: ProtocolConfig | RunSetup,
        *,
        seed: int | None = None,
        keypair: KeyPair | None = None,
    ) -> None:
        config, self.plan = secure_setup(config)  # a setup's plan, derived once
        self.config = config
        # The server's key pair (the parties seal their tokens to it) and its own secret:
        # its deal and its noise derive from it (see _randomness).
        self._keypair = KeyPair.generate(SERVER) if keypair is None else keypair
        self._secret = self._keypair.local_secret()
        self.options = server_strategy(config).search_options(config)
        self.record_sets: RecordSets = record_sets(self.plan)  # partial: region counts too
        rho = self.plan.rho + self.plan.numeric_rho + self.record_sets.rho
        self.ledger = PrivacyLedger(rho=rho, delta=config.delta)
        self.seed = seed
        # The server deals unless the run's dealer is a role of its own: it then holds none.
        self.dealer: Dealer | None = None
        if config.dealer_role == SERVER:
            secret = self._stream_secret()
            self.dealer = Dealer(config, self.plan, self._keypair, secret, self.record_sets)
        self._commit_set: bytes | None = None  # an own dealer's: read off the releases
        self._first: Tables | None = None
        self._request: Request | None = None
        self._bins: dict[Marginal, BinChoice] = {}
        self._seeded_parties: tuple[str, ...] = ()
        self.skipped = 0  # partial sets: marginals the union fit could not read
        self.refits: list[str] = []  # each fit again with a smaller model, in words
        self.max_model_cells: int | None = None  # a refit's cap on the fitted model's cells
        self.union: UnionModel | None = None  # partial sets: the fitted model over the union
        self.fine: dict[str, np.ndarray] = {}  # the fitted releases' fine histograms, by column
        self.spec = config.spec  # with the parties' DP quantile cuts once select reads them

    @property
    def regions_released(self) -> dict[int, int] | None:
        """Partial record sets, after the deal: the published noisy region counts, by
        region bit mask (:mod:`vertimrf.protocol.regions`); None before or otherwise."""
        return self.record_sets.released

    @property
    def models_union(self) -> bool:
        """Whether the model covers the union of the records
        (:attr:`~vertimrf.server.secure.record_sets.PartialSets.models_union`)."""
        return self.record_sets.models_union

    def kept_regions(self) -> dict[str, object] | None:
        """Partial record sets, after the deal: what a server in a new process needs of it,
        JSON-ready (the published region counts, and the slot assignment's digest); None
        before or otherwise."""
        return self.record_sets.kept()

    def restore_regions(self, kept: object) -> None:
        """Partial record sets: what :meth:`kept_regions` gave after this run's deal;
        MessageError (one line) unless it holds the slot assignment's digest and a count of
        every region."""
        self.record_sets.restore(kept)

    def admit(
        self, commitments: Mapping[str, bytes], public_keys: Mapping[str, PublicKey]
    ) -> Admit:
        """The admit digest (:meth:`Dealer.admit`)."""
        return self._dealing().admit(commitments, public_keys)

    def deal(
        self,
        public_keys: Mapping[str, PublicKey],
        commitments: Mapping[str, bytes],
        tokens: Mapping[str, TokenSource | np.ndarray] | None = None,
    ) -> dict[str, bytes]:
        """Step 0: one sealed deal per party (:meth:`Dealer.deal`)."""
        return self._dealing().deal(public_keys, commitments, tokens)

    @property
    def slot_maps(self) -> dict[str, Path]:
        """Partial record sets, after :meth:`deal`: each party's slot map, a file (kept
        while this server is; empty otherwise)."""
        return self._dealing().slot_maps

    def group_deals(self, public_keys: Mapping[str, PublicKey] | None = None) -> dict[str, bytes]:
        """Step 2, after select: one sealed round-2 deal per party for the request
        (:meth:`Dealer.group_deals`); ``public_keys`` default to those :meth:`deal` used."""
        if self._request is None:
            raise MessageError("run select(first releases) before group_deals.")
        return self._dealing().group_deals(self._request, public_keys)

    @property
    def commit_set(self) -> bytes | None:
        """The digest of the commitments the run's deals were made for: this server's
        deal's, or (an own dealer's deals) the one the first releases name."""
        return self._commit_set if self.dealer is None else self.dealer.commit_set

    @commit_set.setter
    def commit_set(self, digest: bytes) -> None:
        if self.dealer is None:
            self._commit_set = digest
        else:
            self.dealer.commit_set = digest

    def _dealing(self) -> Dealer:
        """The server's dealer (MessageError when the run's dealer is a role of its own)."""
        if self.dealer is None:
            raise MessageError(
                "this run's dealer is a role of its own (config dealer 'own'): the server "
                "deals nothing; run `vertimrf dealer run`."
            )
        return self.dealer

    def _stream_secret(self) -> bytes:
        """The secret of the server's keyed streams: its own, or one made from the seed
        (experiments: anyone who knows the seed can replay them)."""
        if self.seed is None:
            return self._secret
        return seeded_stream(self.seed, SERVER)

    @property
    def seeded(self) -> bool:
        """True for a seeded (reproducible, not for release) run."""
        return self.seed is not None

    @property
    def seeded_roles(self) -> tuple[str, ...]:
        """The roles whose noise came from a seed: the parties whose releases said so (in
        the plan's order), then the server if it is seeded."""
        return self._seeded_parties + ((SERVER,) if self.seeded else ())

    def _note_seeded(self, releases: Sequence[SecureRelease]) -> None:
        """Add the parties whose ``releases`` say their noise came from a seed."""
        seeded = set(self._seeded_parties) | {r.party for r in releases if r.seeded}
        self._seeded_parties = tuple(n for n in self.plan.names if n in seeded)

    def _randomness(
        self, step: str, releases: Sequence[SecureRelease]
    ) -> tuple[NoiseSampler, np.random.Generator]:
        """The server's noise and generator of one step. Unseeded: exact samplers on a
        keystream derived from the server's secret, the run, the step and the releases it
        sums, so a re-run on the same releases adds the same noise and spends nothing new.
        Seeded (experiments): its own stream per step."""
        if self.seed is not None:
            return randomness(role_seed(self.seed, f"{SERVER}/{step}"))
        digest = sha256("".join(sorted(r.fingerprint() for r in releases)).encode()).hexdigest()
        noise = KeyedSampler(self._secret, "server-noise", self.config.config_hash(), step, digest)
        return noise, noise.generator()

    @contextmanager
    def _atomic(self) -> Iterator[None]:
        """A step that fails leaves the server, and its ledger, as they were."""
        before = dict(self.__dict__)
        try:
            with self.ledger.transaction():
                yield
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    def _check_releases(
        self,
        release: str,
        marginals: Sequence[Marginal],
        releases: Sequence[SecureRelease],
        bins: Mapping[Marginal, BinMaps] | None = None,
    ) -> None:
        """MessageError unless ``releases`` are exactly one ``release`` message of this run
        from each party, holding every marginal and share of ``marginals`` at its size."""
        plan, bins = self.plan, bins or {}
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
        expected = self.config.config_hash()
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
            self._cut_spec({c: v for r in releases for c, v in r.cuts.items()})
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

    def _cut_spec(self, cuts: Mapping[str, Sequence[float]]) -> DomainSpec:
        """The config's spec with ``cuts`` (the first release's): MessageError unless they
        are the plan's quantile columns', each a valid set of cut points."""
        want = sorted(c for c, *_ in self.plan.quantile)
        if sorted(cuts) != want:
            raise MessageError(
                f"the first release holds quantile cuts of {sorted(cuts)}, not of {want}."
            )
        spec = self.config.spec
        try:
            columns = [c.with_cuts(cuts[c.name]) if c.name in cuts else c for c in spec.columns]
        except (DomainError, TypeError, ValueError):
            raise MessageError("the first release holds malformed quantile cuts.") from None
        return DomainSpec(columns, spec.ignored)

    def _tables(
        self,
        release: str,
        marginals: Sequence[Marginal],
        releases: Sequence[SecureRelease],
        noise: NoiseSampler,
        bins: Mapping[Marginal, BinMaps] | None = None,
    ) -> Tables:
        """The summed, noisy tables of one release (the binned ones at their bins' cells);
        the releases were checked by :meth:`_check_releases`."""
        plan, bins = self.plan, bins or {}
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
