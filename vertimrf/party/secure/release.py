"""A party's releases: the first, cheap measurement of every 2-way marginal, or of a
workload's first release (:meth:`SecureParty.release`), and the re-measurement of the
server's request (:meth:`SecureParty.measure`).

Own marginals get N_Z(0, sigma^2); cross ones are released as share + N_Z(0, sigma^2 / 2)
+ R, where the pad R (from the pairwise key) is added by the lower party and subtracted by
the higher, so the server sees uniform words until it adds both. A marginal the request
bins is binned (summed over the bins, exact counts or shares mod 2^64) before its noise and
pad. Every release is charged, before its noise is drawn, to the party's ledger, capped at
the protocol's budget.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence

import numpy as np

from vertimrf.errors import ConfigError
from vertimrf.party.secure.shares import Shares
from vertimrf.party.secure.state import Blob
from vertimrf.privacy.mechanisms import discrete_laplace_count
from vertimrf.privacy.numeric import noisy_fine
from vertimrf.privacy.samplers import KeyedSampler, NoiseSampler, randomness
from vertimrf.protocol.bins import bin_axes
from vertimrf.protocol.masks import pad
from vertimrf.protocol.secure.marginals import Marginal, Request
from vertimrf.protocol.secure.plan import COUNT_MECHANISM, MEASURE, SELECT, Layout
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.protocol.seeds import role_seed


class SecureParty(Shares):
    """A data holder in a secure run: commit, features, release, groups, measure (the
    arguments: :class:`~vertimrf.party.secure.state.PartyState`)."""

    def release(self, blobs: Mapping[str, Blob]) -> SecureRelease:
        """Step 2: shares of every product, then the first release (the plan's
        :meth:`~vertimrf.protocol.secure.plan.SecurePlan.first_release`: every 2-way marginal,
        or a workload's) with the noisy count at the count party."""
        if self._step.deal is None:
            raise ConfigError("run features(deal) or open_deal(deal) before release(blobs).")
        shares = self._shares(blobs)  # checks every blob before anything is released
        self._check_step(SELECT)
        marginals = self.plan.first_release()
        noise = self._sampler(SELECT, Request(tuple(marginals)))
        with self.ledger.transaction():
            count = None
            if self.name == self.plan.count_party and self.plan.rho_count > 0:
                count = discrete_laplace_count(
                    self.aligned().n,
                    self.plan.count_epsilon,
                    noise=noise,
                    ledger=self.ledger,
                    party=self.name,
                )
            release = self._measure(SELECT, marginals, count, noise, shares=shares)
        cut = self.plan.quantile_columns(self.index)
        release = dataclasses.replace(
            release, cuts={c: list(self.spec[c].cuts or ()) for c in cut}
        )  # the cuts it drew before encoding its table
        self._step.shares = shares
        self._step.done.add(SELECT)
        return release

    def measure(
        self,
        request: Request | Sequence[Marginal],
        blobs: Mapping[str, Blob] | None = None,
        group_blobs: Mapping[str, Blob] | None = None,
    ) -> SecureRelease:
        """Step 4: the re-measurement of the server's requested marginals (a :class:`Request`,
        whose bin maps are applied to the exact counts and shares before the noise; a plain
        list means no bins), with the fine histograms of this party's numeric columns when
        the plan has them, from the shares kept by :meth:`release` (or read by
        :meth:`load_state` in a new process), or recomputed from the peers' ``blobs`` after
        :meth:`open_deal` with the same deal. A pair whose layout grows (round-2 groups)
        needs the peer's round-1 ``blobs`` and its ``group_blobs``, after :meth:`groups`
        (or :meth:`open_group_deal`) with this request."""
        shares = self._step.shares
        if shares is None:
            if blobs is None or self._step.deal is None:
                raise ConfigError(
                    "measure(request) needs the shares: run release(blobs) first, or "
                    "load_state(path) with the state release saved, or open_deal(deal) and "
                    "pass the peers' blobs."
                )
            shares = self._shares(blobs)
        request = self._request(request)
        self._check_step(MEASURE)
        layout = self.plan.layout(request.marginals)
        grown = self._grow(shares, layout, request, blobs, group_blobs)
        exact = self.exact_fine()  # read before anything is charged
        noise = self._sampler(MEASURE, request)
        with self.ledger.transaction():
            release = self._measure(MEASURE, request.marginals, None, noise, request, grown, layout)
            fine = {
                r.params["column"]: noisy_fine(r, exact[r.params["column"]], noise, self.ledger)
                for r in self.plan.fine_releases(self.name)
            }
        release = dataclasses.replace(release, fine=fine)
        self._step.shares = shares
        self._step.done.add(MEASURE)
        return release

    def _sampler(self, step: str, request: Request) -> NoiseSampler:
        """The noise of one step. Unseeded: exact samplers on a keystream derived from this
        party's local secret, the run, the step, the request (canonical) and the digest of
        every input the step used (:meth:`_inputs`: its data, the deal and the commitments
        it was made for, every peer blob read, the round-2 deal and blobs), so a re-run of
        the step on the same inputs draws the same noise and spends nothing new, and a
        changed statistic never gets the same noise. Seeded (experiments): its own stream
        per step, so that the steps give the same output in one process or in separate
        commands."""
        if self._seed is None:
            inputs = json.dumps(self._inputs(), sort_keys=True)
            bound = self._bound(step, request.digest(), inputs)
            return KeyedSampler(self._local, "party-noise", *bound)
        return randomness(role_seed(self._seed, f"{self.name}/{step}"))[0]

    def _pad_binding(self, peer: str, request: Request, grown: bool) -> str:
        """What the pad of this party's shares with ``peer`` is keyed by, the same at both
        ends: the request (canonical) and the nonces of the pair's blobs in both directions
        (round 1, and round 2 where the pair grows). Each nonce is a PRF of its sender's
        data, deal and (round 2) round-2 deal and request, so a share that changes gets a
        fresh pad."""
        inputs, q = self._inputs(), self.plan.names.index(peer)
        h = hashlib.sha256(request.digest().encode())
        for round_, kind in ((1, "blob"), (2, "group-blob"))[: 1 + grown]:
            mine, theirs = self._nonce(peer, round_).hex(), inputs[f"{kind}-nonce/{peer}"]
            h.update((f"/{mine}/{theirs}" if self.index < q else f"/{theirs}/{mine}").encode())
        return h.hexdigest()

    def _measure(
        self,
        release: str,
        marginals: Sequence[Marginal],
        count: int | None,
        noise: NoiseSampler,
        request: Request | None = None,
        shares: Mapping[str, np.ndarray] | None = None,
        layout: Layout | None = None,
    ) -> SecureRelease:
        plan, p = self.plan, self.index
        shares = self._step.shares if shares is None else shares
        if shares is None:
            raise ConfigError("the release needs the shares: run release(blobs) first.")
        request = request or Request(tuple(marginals))
        layout = layout or plan.layout()
        for r in plan.releases(release, marginals, request.bins):
            if r.mechanism == COUNT_MECHANISM:
                continue  # charged by discrete_laplace_count as it was drawn
            if r.party == self.name or self.name in (r.party or "").split("+"):
                self.ledger.charge(r)
        sigma = plan.sigma(release, marginals, request.bins)
        local = {a: j for j, a in enumerate(plan.attrs[p])}
        own = [m for m in marginals if plan.kind(m) == "within" and plan.owner[m[0]] == p]
        counts = self.aligned().histograms(
            [tuple(local[a] for a in m) for m in own], tuple(self.spec.domain.sizes)
        )
        within = {}
        for m, h in zip(own, counts, strict=True):
            exact = bin_axes(h, request.maps(m)).ravel()
            within[m] = exact + noise.discrete_gaussian(sigma, exact.shape)
        cross = {}
        s = sigma / np.sqrt(2.0)
        for a, b in plan.pairs():
            if p not in (a, b):
                continue
            key = plan.pair_name(a, b)
            blocks = plan.cross_blocks(marginals, a, b)
            if not blocks:
                continue
            peer = plan.names[b if p == a else a]
            shape = layout.shape(a, b)
            binding = self._pad_binding(peer, request, layout.grows(a, b))
            pads = pad(self._keys[peer], release, plan.names[a], plan.names[b], binding, shape)
            share = shares[key]
            parts = []
            for m in blocks:
                r0, r1, c0, c1 = layout.block(m)
                block = share[r0:r1, c0:c1].reshape(plan.shape(m))
                cells = bin_axes(block, request.maps(m)).ravel()
                eta = noise.discrete_gaussian(s, cells.shape).astype(np.uint64)
                padded = pads[r0:r1, c0:c1].ravel()[: cells.size]  # the block's own pad words
                out = cells + eta + padded if p == a else cells + eta - padded
                parts.append(out & plan.ring_mask)  # uniform in the ring, nothing above it
            cross[key] = np.concatenate(parts)
        return SecureRelease(
            self.name,
            release,
            self.config.config_hash(),
            self._step.digest.hex(),
            within,
            cross,
            count,
            self._inputs().get("commit-set", ""),
            seeded=self._seed is not None,
        )
