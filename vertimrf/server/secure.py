"""The server's side of method="secure": dealing, summing the shares, one-budget selection.

1. :meth:`SecureServer.deal`: seeds for every party's mask U_p and every pair's W, and
   Z_pq = U_p^T U_q - W_pq, each sealed to its party. The server never sees X - U.
2. :meth:`SecureServer.select`: from the first releases (every 2-way marginal, cheap), add
   the two padded shares of each cross block (the pads cancel), add the server's own
   N_Z(0, sigma^2 / 2), and run PrivMRF's selection on the whole table as post-processing:
   the record count pooled from the noisy count and every table's sum, noisy pairwise
   scores against pooled 1-way marginals, the greedy graph search under model caps that
   grow with the measurements' precision, the initial marginal set per clique (split into
   measurable parts: within one party, or 2-way cross), plus the highest-scoring pairs
   inside the cliques whose first release is still noisy. It returns the request for
   re-measurement, in which a 2-way marginal is binned where its estimated error is lower
   binned than at its full domain (``secure_binning="auto"``, :mod:`vertimrf.server.binning`).
3. :meth:`SecureServer.synthesize`: every measurement (the re-measured ones, the binned ones
   as linear queries on their bin sums, and the first release's pairs inside the cliques,
   each weighted 1 / its noise scale) fits the MRF by mirror descent, and n rows are
   sampled.

Every noise scale is re-derived from the config (:class:`SecurePlan`); the ledger holds the
plan's releases, so the report's (epsilon, delta) does not depend on what parties declare.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from hashlib import sha256
from itertools import combinations

import numpy as np
import pandas as pd

from vertimrf.container import read_container, write_container
from vertimrf.domain import TableEncoder
from vertimrf.errors import ConfigError, MessageError
from vertimrf.kernels.secure import matmul_tn_u64
from vertimrf.mrf.estimation import Measurement, mirror_descent, theoretic_loss
from vertimrf.mrf.junction_tree import JunctionTree
from vertimrf.mrf.model import MarkovRandomField
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import KeyedSampler, NoiseSampler, derive_key, randomness
from vertimrf.protocol.channels import KeyPair, PublicKey, expand
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.report import ProtocolReport
from vertimrf.protocol.secure import (
    MASK_BLOCK_WORDS,
    MEASURE,
    SELECT,
    BinMaps,
    Layout,
    Marginal,
    Request,
    SecurePlan,
)
from vertimrf.protocol.securemsg import Deal, GroupDeal, SecureRelease, commit_set_digest
from vertimrf.protocol.seeds import SERVER, role_seed
from vertimrf.server.binning import BinChoice, choose_bins
from vertimrf.server.methods import server_strategy
from vertimrf.synth.privmrf.graph_search import greedy_graph_search
from vertimrf.synth.privmrf.initial_set import initial_marginals
from vertimrf.synth.privmrf.usefulness import graph_phase_max_cells

STATE_KIND = "vertimrf-secure-server-state"
# A 2-way marginal is re-measured only if its first release's noise is above 1/100 of the
# mean count per cell, i.e. cells > n_hat / (EXTRA_PRECISION * sigma_select).
EXTRA_PRECISION = 100.0
# The server's model caps (see SecureServer.model_caps).
MODEL_CELLS_PER_PRECISION = 2750.0
MIN_TOTAL_CELLS = 2.5e5
MIN_CLIQUE_CELLS = 1e5


@dataclass(frozen=True)
class Tables:
    """Noisy marginals of one release: counts (float), and each one's noise scale."""

    values: dict[Marginal, np.ndarray]
    scale: dict[Marginal, float]


DEAL_BLOCK_WORDS = MASK_BLOCK_WORDS  # mask words of all parties expanded at once (deal_matrices)


def _masks(
    plan: SecurePlan, seeds: Sequence[bytes], labels: Sequence[bytes], widths: Sequence[int]
) -> Iterator[list[np.ndarray]]:
    """Row blocks of the masks expanded from ``seeds`` under ``labels`` (each block: every
    mask's next rows, of its ``widths`` columns), about DEAL_BLOCK_WORDS words at a time."""
    step = max(1, DEAL_BLOCK_WORDS // max(1, sum(widths)))
    for r0 in range(0, plan.rows, step):
        r1 = min(plan.rows, r0 + step)
        yield [
            expand(s, label, (r1 - r0) * w, start=r0 * w, word=plan.word).reshape(r1 - r0, w)
            for s, label, w in zip(seeds, labels, widths, strict=True)
        ]


def deal_matrices(plan: SecurePlan, seeds_u: Sequence[bytes], seeds_w: dict) -> dict:
    """Z_pq = U_p^T U_q - W_pq for every pair (p, q) (the server's one dense product each).

    The masks are expanded block by block of rows (each block of every party's AES-CTR
    stream once, about DEAL_BLOCK_WORDS words in all) and the products summed over the
    blocks, which is exact in the ring: memory stays at one block, not rows x sum(k_p)."""
    out = {
        (p, q): -expand(seeds_w[p, q], b"W", plan.widths[p] * plan.widths[q]).reshape(
            plan.widths[p], plan.widths[q]
        )
        for p, q in plan.pairs()
    }
    for masks in _masks(plan, seeds_u, [b"U"] * len(seeds_u), plan.widths):
        for p, q in plan.pairs():
            out[p, q] += matmul_tn_u64(masks[p], masks[q])
    return out


def group_matrices(
    plan: SecurePlan, layout: Layout, seeds_u: Sequence[bytes], seeds_u2: dict, seeds_w2: dict
) -> dict:
    """For each pair p < q that grows in ``layout``: Z_A = U2_pq^T [U_q | U2_qp] - W_A and
    Z_B = U_p^T U2_qp - W_B (U2: the round-2 masks, from ``seeds_u2[p, q]``; W from
    ``seeds_w2[p, q]``), the masks expanded block by block of rows as in deal_matrices."""
    pairs = [(p, q) for p, q in plan.pairs() if layout.grows(p, q)]
    out = {}
    for p, q in pairs:
        a, b = layout.width(p, q), layout.width(q, p)
        wa = expand(seeds_w2[p, q], b"WA", a * (plan.widths[q] + b))
        wb = expand(seeds_w2[p, q], b"WB", plan.widths[p] * b)
        out[p, q] = (-wa.reshape(a, plan.widths[q] + b), -wb.reshape(plan.widths[p], b))
    if not pairs:
        return out
    seeds = list(seeds_u) + [seeds_u2[key] for p, q in pairs for key in ((p, q), (q, p))]
    m = len(plan.names)
    widths = list(plan.widths) + [layout.width(*key) for p, q in pairs for key in ((p, q), (q, p))]
    labels = [b"U"] * m + [b"U2"] * (2 * len(pairs))
    for masks in _masks(plan, seeds, labels, widths):
        for i, (p, q) in enumerate(pairs):
            g_p, g_q = masks[m + 2 * i], masks[m + 2 * i + 1]
            out[p, q][0][...] += matmul_tn_u64(g_p, np.hstack((masks[q], g_q)))
            out[p, q][1][...] += matmul_tn_u64(masks[p], g_q)
    return out


def _pooled(tables: Tables, sizes: Sequence[int]) -> tuple[list[np.ndarray], list[float]]:
    """Inverse-variance sums of every attribute's row or column sums (a sum over k cells of
    noise scale s has variance k s^2): the weighted numerators and the total weights."""
    num = [np.zeros(int(k)) for k in sizes]
    den = [0.0] * len(sizes)
    for (i, j), flat in tables.values.items():
        t = flat.reshape(sizes[i], sizes[j])
        s2 = tables.scale[i, j] ** 2
        for a, sums, k in ((i, t.sum(1), sizes[j]), (j, t.sum(0), sizes[i])):
            num[a] += sums / (k * s2)
            den[a] += 1.0 / (k * s2)
    return num, den


def pooled_one_way(tables: Tables, sizes: Sequence[int]) -> tuple[list[np.ndarray], list[float]]:
    """Every attribute's 1-way counts, pooled over the row or column sums of every 2-way
    table holding it (inverse-variance weighted), floored at 0, and the variance of each
    pooled count (1 / its total weight). Far less noisy than one table's sums, whose noise
    grows with its width."""
    num, den = _pooled(tables, sizes)
    counts = [np.maximum(num[a] / den[a], 0.0) if den[a] else num[a] for a in range(len(sizes))]
    return counts, [1.0 / d if d else math.inf for d in den]


def one_way(tables: Tables, sizes: Sequence[int]) -> list[np.ndarray]:
    """The pooled 1-way counts of :func:`pooled_one_way`."""
    return pooled_one_way(tables, sizes)[0]


def pair_scores(tables: Tables, sizes: Sequence[int], n_hat: float) -> np.ndarray:
    """Noisy normalised TVDs from independence, debiased for the noise: for a table T with
    noise scale s, 1/2 sum |T - n_hat p_a p_b| minus the noise's expected contribution
    1/2 * cells * s * sqrt(2 / pi), floored at 0 and divided by n_hat. The independence
    table uses the pooled 1-way marginals (:func:`one_way`), not T's own noisy sums, whose
    error made wide tables (e.g. Adult's 41-value country) score far above their TVD."""
    d = len(sizes)
    out = np.zeros((d, d))
    ones = one_way(tables, sizes)
    probs = [v / v.sum() if v.sum() > 0 else np.full(v.size, 1.0 / v.size) for v in ones]
    for (i, j), flat in tables.values.items():
        t = flat.reshape(sizes[i], sizes[j])
        indep = np.outer(probs[i], probs[j]) * n_hat
        bias = 0.5 * t.size * tables.scale[i, j] * math.sqrt(2.0 / math.pi)
        out[i, j] = out[j, i] = max(0.0, 0.5 * float(np.abs(t - indep).sum()) - bias) / n_hat
    return out


def record_total(count: float, epsilon: float, *releases: Tables) -> float:
    """The record count from the noisy count and every noisy table's sum (each sums to the
    true count plus its noise): the inverse-variance weighted mean, floored at 1. The count
    has a tiny budget share (discrete Laplace, variance 2 e^-eps / (1 - e^-eps)^2); the
    tables' sums are far more accurate, so this is post-processing that fixes n_hat's
    percent-level error at low epsilon."""
    weights = [(1.0 - math.exp(-epsilon)) ** 2 / (2.0 * math.exp(-epsilon))]
    values = [float(count)]
    for tables in releases:
        for m, v in tables.values.items():
            weights.append(1.0 / (v.size * tables.scale[m] ** 2))
            values.append(float(v.sum()))
    return max(1.0, float(np.dot(weights, values) / np.sum(weights)))


class SecureServer:
    """The untrusted server of a secure run: deals, relays, sums and synthesizes."""

    def __init__(
        self,
        config: ProtocolConfig,
        *,
        seed: int | None = None,
        keypair: KeyPair | None = None,
    ) -> None:
        self.config = config
        # The server's own secret: its deal and its noise derive from it (see _randomness).
        self._secret = os.urandom(32) if keypair is None else keypair.local_secret()
        self.plan = secure_plan(config)
        self.options = server_strategy(config).search_options(config)
        self.ledger = PrivacyLedger(rho=self.plan.rho, delta=config.delta)
        self.seed = seed
        self._first: Tables | None = None
        self._request: Request | None = None
        self._bins: dict[Marginal, BinChoice] = {}
        self._seeded_parties: tuple[str, ...] = ()
        self._public_keys: dict[str, PublicKey] | None = None
        self._commit_set: bytes | None = None  # the deal's commitments (see _dealer)

    def _dealer(self, public_keys: Mapping[str, PublicKey]) -> Callable[..., bytes]:
        """The server's deal keys for this run, these parties' keys and their data
        commitments: 32 bytes per label, derived from its own secret (a re-run on the same
        commitments deals the same bytes; a party whose data changed commits anew, and
        every mask changes with it, so no mask is used on two different tables)."""
        missing = sorted(set(self.plan.names) - set(public_keys))
        if missing:
            raise MessageError(f"the server needs the public keys of {missing} to deal.")
        if self._commit_set is None:
            raise MessageError("the server deals only on every party's data commitment.")
        keys = sha256()
        for name in self.plan.names:
            keys.update(name.encode() + b"\0" + public_keys[name].raw)
        label = (self.config.config_hash(), keys.hexdigest(), self._commit_set.hex())

        def derived(*what: str) -> bytes:
            return derive_key(self._secret, "server-deal", *label, *what)

        return derived

    def deal(
        self, public_keys: Mapping[str, PublicKey], commitments: Mapping[str, bytes]
    ) -> dict[str, bytes]:
        """Step 0: one sealed deal per party, made for every party's data ``commitments``
        (each party's commit message, :func:`~vertimrf.protocol.securemsg.read_commit`)."""
        plan, ctx = self.plan, self.config.run_context()
        missing = sorted(set(plan.names) - set(commitments))
        if missing:
            raise MessageError(f"the server needs the data commitments of {missing} to deal.")
        self._commit_set = commit_set_digest(dict(commitments), plan.names)
        derived = self._dealer(public_keys)
        self._public_keys = dict(public_keys)
        seeds_u = [derived("U", name) for name in plan.names]
        seeds_w = {(p, q): derived("W", plan.names[p], plan.names[q]) for p, q in plan.pairs()}
        z = deal_matrices(plan, seeds_u, seeds_w)
        deals = {}
        for p, name in enumerate(plan.names):
            deal = Deal(
                seeds_u[p],
                {plan.names[q]: seeds_w[p, q] for (a, q) in plan.pairs() if a == p},
                {plan.names[a]: z[a, q] for (a, q) in plan.pairs() if q == p},
                self._commit_set,
                bytes(commitments[name]),
            )
            deals[name] = deal.seal(public_keys[name], ctx, randomness=derived("seal", name))
        return deals

    def group_deals(self, public_keys: Mapping[str, PublicKey] | None = None) -> dict[str, bytes]:
        """Step 2, after :meth:`select`: one sealed round-2 deal per party, for the groups
        of the request (fresh masks, bound to the request and to the commitments the
        first deal was made for); ``public_keys`` default to those :meth:`deal` used."""
        if self._request is None:
            raise MessageError("run select(first releases) before group_deals.")
        if public_keys is None:
            if self._public_keys is None:
                raise MessageError("group_deals needs every party's public key.")
            public_keys = self._public_keys
        plan, ctx, names = self.plan, self.config.run_context(), self.plan.names
        derived = self._dealer(public_keys)
        digest = self._request.digest()
        layout = plan.layout(self._request.marginals)
        seeds_u = [derived("U", name) for name in names]
        ends = [(p, q) for p in range(len(names)) for q in range(len(names)) if p != q]
        seeds_u2 = {(p, q): derived("U2", names[p], names[q], digest) for p, q in ends}
        seeds_w2 = {(p, q): derived("W2", names[p], names[q], digest) for p, q in plan.pairs()}
        z = group_matrices(plan, layout, seeds_u, seeds_u2, seeds_w2)
        deals = {}
        for p, name in enumerate(names):
            deal = GroupDeal(
                {names[q]: seeds_u2[p, q] for q in range(len(names)) if q != p},
                {names[q]: seeds_w2[p, q] for (a, q) in z if a == p},
                {names[a]: z[a, q][0] for (a, q) in z if q == p},
                {names[a]: z[a, q][1] for (a, q) in z if q == p},
            )
            seal = derived("seal2", name, digest)
            deals[name] = deal.seal(public_keys[name], ctx, digest, randomness=seal)
        return deals

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

    def select(self, releases: Sequence[SecureRelease]) -> Request:
        """Step 2: sum the first releases and choose the marginals to re-measure (and the
        ones to measure on bins). Every input is checked before anything is charged; a
        failed call changes nothing."""
        if self._first is not None:
            raise MessageError("this server already ran select; each run selects once.")
        marginals = self.plan.all_pairs()
        self._check_releases(SELECT, marginals, releases)
        self._check_commit_set(releases)
        count = [r.count for r in releases if r.party == self.plan.count_party]
        if count[0] is None:
            raise MessageError(
                f"the first release of the count party {self.plan.count_party!r} holds no "
                "noisy count."
            )
        noise, rng = self._randomness(SELECT, releases)
        with self._atomic():
            self._note_seeded(releases)
            for r in self.plan.releases(SELECT, marginals):
                self.ledger.charge(r)
            first = self._first = self._tables(SELECT, marginals, releases, noise)
            self.n_hat = record_total(count[0], self.plan.count_epsilon, first)
            chosen = self._choose(first, rng)
            self._bins = self._binning(first, chosen)
            bins = {m: c.maps for m, c in self._bins.items()}
            self._request = self.plan.check_request(chosen, bins)  # canonical order
        return self._request

    def _check_commit_set(self, releases: Sequence[SecureRelease]) -> None:
        """Every first release names the commitments its deal was made for, all the same
        (and this server's, if it dealt in this process); they bind the round-2 deals."""
        sets = {r.commit_set for r in releases}
        mine = None if self._commit_set is None else self._commit_set.hex()
        if len(sets) != 1 or (mine is not None and sets != {mine}):
            raise MessageError(
                "the first releases were made with deals of other data commitments: every "
                "party must release with the deal the server made in this run."
            )
        try:
            self._commit_set = bytes.fromhex(sets.pop())
        except ValueError:
            raise MessageError("a first release names a malformed commit set.") from None

    def _binning(self, first: Tables, marginals: Sequence[Marginal]) -> dict[Marginal, BinChoice]:
        """The 2-way marginals of the request to measure on bins, with their estimated
        errors: post-processing of the ``first`` release (:func:`choose_bins`)."""
        if self.config.secure_options().binning == "off":
            return {}
        plan = self.plan
        ones, ones_var = pooled_one_way(first, plan.sizes)
        sigma = plan.sigma(MEASURE, len(marginals))
        out: dict[Marginal, BinChoice] = {}
        for m in marginals:
            if len(m) != 2 or m not in first.values:
                continue
            scale = sigma * (math.sqrt(1.5) if plan.kind(m) == "cross" else 1.0)
            shaped = first.values[m].reshape(plan.shape(m))
            choice = choose_bins(shaped, first.scale[m], scale, ones, ones_var, m)
            if choice is not None:
                out[m] = choice
        return out

    def cross_tables(self, releases: Sequence[SecureRelease]) -> dict[Marginal, np.ndarray]:
        """The paper pipeline's one release (every binned cross-party pair): the summed
        shares plus the server's noise, charged to this server's ledger; each table in the
        attribute order of its canonical marginal."""
        if self.plan.select or self._first is not None:
            raise MessageError("cross_tables is the paper pipeline's one step, run once.")
        marginals = self.plan.all_pairs()
        self._check_releases(SELECT, marginals, releases)
        noise, _ = self._randomness(SELECT, releases)
        with self._atomic():
            self._note_seeded(releases)
            for r in self.plan.releases(SELECT, marginals):
                self.ledger.charge(r)
            self._first = self._tables(SELECT, marginals, releases, noise)
        sizes = self.plan.sizes
        return {m: v.reshape([sizes[a] for a in m]) for m, v in self._first.values.items()}

    def save_state(self, path: str | os.PathLike) -> None:
        """Write what :meth:`synthesize` needs after :meth:`select` (server-private: the
        noisy first release with the server's noise, n_hat, the cliques, the request and the
        parties whose releases said they were seeded)."""
        if self._first is None or self._request is None:
            raise MessageError("run select(first releases) before save_state.")
        keys = list(self._first.values)
        meta = {
            "config_hash": self.config.config_hash(),
            "n_hat": self.n_hat,
            "request": [list(m) for m in self._request.marginals],
            "cliques": [list(c) for c in self.tree.cliques],
            "tables": [list(m) for m in keys],
            "scales": [self._first.scale[m] for m in keys],
            "seeded_parties": list(self._seeded_parties),
        }
        arrays = {f"t{i}": self._first.values[m] for i, m in enumerate(keys)}
        write_container(path, STATE_KIND, meta, arrays)

    @classmethod
    def load_state(
        cls,
        config: ProtocolConfig,
        path: str | os.PathLike,
        *,
        seed: int | None = None,
        keypair: KeyPair | None = None,
    ) -> SecureServer:
        """A server ready to :meth:`synthesize`, from :meth:`save_state`'s file."""
        server = cls(config, seed=seed, keypair=keypair)
        plan = server.plan
        cells = max(plan.cells(m) for m in plan.all_pairs())
        meta, arrays = read_container(path, STATE_KIND, array_bytes=lambda name: 8 * cells)
        if meta.get("config_hash") != config.config_hash():
            raise MessageError(f"{path}: the server state belongs to another run.")
        try:
            keys = [tuple(int(a) for a in m) for m in meta["tables"]]
            first = server._first = Tables(
                {m: arrays[f"t{i}"] for i, m in enumerate(keys)},
                dict(zip(keys, (float(x) for x in meta["scales"]), strict=True)),
            )
            marginals = [tuple(m) for m in meta["request"]]
            server.n_hat = float(meta["n_hat"])
            seeded = meta["seeded_parties"]
            if not isinstance(seeded, list) or not set(seeded) <= set(plan.names):
                raise ValueError("seeded_parties")
            server._seeded_parties = tuple(n for n in plan.names if n in seeded)
            server.tree = JunctionTree.build(
                config.spec.domain,
                [tuple(c) for c in meta["cliques"]],
                heuristic="min_fill",
                max_cells=int(server.options.max_total_cells),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise MessageError(f"{path}: malformed server state ({exc!r}).") from None
        server._bins = server._binning(first, marginals)  # deterministic: as select chose them
        server._request = plan.check_request(
            marginals, {m: c.maps for m, c in server._bins.items()}
        )
        for r in plan.releases(SELECT, plan.all_pairs()):
            server.ledger.charge(r)
        return server

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
        sigma = plan.sigma(release, len(marginals))
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

    def model_caps(self) -> tuple[float, float]:
        """The graph search's (clique, total) cell caps: the total grows with the planned
        measurements' precision n_hat / sigma^2 (MODEL_CELLS_PER_PRECISION cells per unit),
        between MIN_TOTAL_CELLS and the config's cap; the clique cap is 0.4 of it, between
        MIN_CLIQUE_CELLS and the config's. Small models fit several times faster and are as
        accurate while the noise is large; at high epsilon a larger model pays."""
        plan, cfg = self.plan, self.config
        d = len(plan.sizes)
        sigma2 = d * (1.0 + plan.refine_fraction) / (2.0 * plan.rho_measure)
        total = MODEL_CELLS_PER_PRECISION * self.n_hat / sigma2
        options = cfg.secure_options()
        total = min(options.max_total_cells, max(MIN_TOTAL_CELLS, total))
        clique = min(options.max_clique_cells, max(MIN_CLIQUE_CELLS, 0.4 * total))
        return clique, total

    def _choose(self, first: Tables, rng: np.random.Generator) -> list[Marginal]:
        plan, opts = self.plan, self.options
        sizes, d = plan.sizes, len(plan.sizes)
        scores = pair_scores(first, sizes, self.n_hat)
        max_clique, max_total = self.model_caps()
        found = greedy_graph_search(
            scores,
            sizes,
            max_clique_cells=max_clique,
            max_total_cells=max_total,
            size_penalty=opts.size_penalty,
            rng=rng,
        )
        self.tree = JunctionTree.build(
            self.config.spec.domain,
            found.cliques,
            heuristic="min_fill",
            max_cells=int(max_total),
        )
        # A pair whose first release already has little noise per record of a cell gains
        # little from a re-measurement (its budget goes to the others instead).
        cliques = [set(c) for c in self.tree.cliques]
        sigma1 = plan.sigma(SELECT, len(plan.all_pairs()))
        limit = self.n_hat / (EXTRA_PRECISION * sigma1)
        eligible = [
            m
            for m in plan.all_pairs()
            if any(set(m) <= c for c in cliques) and plan.cells(m) > limit
        ]
        planned = d * (1.0 + plan.refine_fraction)
        sigma_est = math.sqrt(planned / (2.0 * plan.rho_measure))
        init = initial_marginals(
            self.tree.cliques,
            sizes,
            graph_phase_max_cells(self.n_hat, sigma_est, opts.theta),
            scores,
            rng,
        )
        edges = {tuple(sorted(e)) for e in found.edges}
        chosen: list[Marginal] = []
        extra: dict[tuple[int, int], set[Marginal]] = {}
        for m in init:
            chosen += self._measurable(m, edges, extra)
        chosen = list(dict.fromkeys(plan.canonical(m) for m in chosen))
        chosen = [m for m in chosen if not any(set(m) < set(o) for o in chosen)]
        extra_pairs = [m for m in eligible if not any(set(m) <= set(o) for o in chosen)]
        extra_pairs.sort(key=lambda m: -scores[m])
        return chosen + extra_pairs[: int(plan.refine_fraction * d)]

    def _fits(
        self, extra: dict[tuple[int, int], set[Marginal]], p: int, q: int, g: Marginal
    ) -> bool:
        """True when party p's round-2 groups toward q, with ``g``, stay within its cap."""
        plan = self.plan
        if len(g) == 1 or g in extra.get((p, q), ()):
            return True
        used = sum(plan.cells(h) for h in extra.get((p, q), ()))
        return used + plan.cells(g) <= plan.group_caps[p]

    def _measurable(
        self, m: Marginal, edges: set, extra: dict[tuple[int, int], set[Marginal]]
    ) -> list[Marginal]:
        """``m`` if one party owns it, or two do and each side's part fits its round-2 cap
        (``extra``: the groups taken so far, by (party, peer); updated). Else its per-party
        parts plus cross blocks of singles or groups that fit, chosen greedily (most newly
        covered pairs first, then fewest cells) until they cover every cross pair of ``m``
        that is a graph edge (every cross pair if none is)."""
        plan = self.plan
        owner = plan.owner
        parts = [tuple(a for a in m if owner[a] == p) for p in sorted({owner[a] for a in m})]
        if len(parts) == 1:
            return [m]
        if len(parts) == 2:
            (p, g), (q, h) = ((owner[part[0]], part) for part in parts)
            if self._fits(extra, p, q, g) and self._fits(extra, q, p, h):
                for side, peer, part in ((p, q, g), (q, p, h)):
                    if len(part) > 1:
                        extra.setdefault((side, peer), set()).add(part)
                return [m]
        cross = [(a, b) for a in m for b in m if a < b and owner[a] != owner[b]]
        todo = {c for c in cross if c in edges} or set(cross)
        blocks = []
        for gp, gq in combinations(parts, 2):
            p, q = owner[gp[0]], owner[gq[0]]
            sides: list[list[Marginal]] = [
                [(a,) for a in gp] + [g for g in extra.get((p, q), ()) if set(g) <= set(gp)],
                [(a,) for a in gq] + [h for h in extra.get((q, p), ()) if set(h) <= set(gq)],
            ]
            for known, (who, peer, part) in zip(sides, ((p, q, gp), (q, p, gq)), strict=True):
                if len(part) > 1 and part not in known and self._fits(extra, who, peer, part):
                    known.append(part)
            need = {c for c in todo if {owner[c[0]], owner[c[1]]} == {p, q}}
            while need:
                options = [  # singles always fit; two new groups may not fit together
                    (g, h)
                    for g in sides[0]
                    for h in sides[1]
                    if self._fits(extra, p, q, g) and self._fits(extra, q, p, h)
                ]
                g, h = max(
                    options,
                    key=lambda gh: (
                        len(need & {tuple(sorted((a, b))) for a in gh[0] for b in gh[1]}),
                        -plan.cells(gh[0] + gh[1]),
                    ),
                )
                need -= {tuple(sorted((a, b))) for a in g for b in h}
                for side, peer, part in ((p, q, g), (q, p, h)):
                    if len(part) > 1 and self._fits(extra, side, peer, part):
                        extra.setdefault((side, peer), set()).add(part)
                blocks.append(g + h)
        return parts + blocks

    def synthesize(
        self,
        releases: Sequence[SecureRelease],
        rows: int | None = None,
        *,
        sample_seed: int | None = None,
    ) -> pd.DataFrame:
        """Step 4: :meth:`fit` on every measurement and sample ``rows`` rows (default n_hat).

        ``sample_seed`` seeds only the sampling of the synthetic rows (post-processing; it
        does not touch the DP noise). By default the sampling uses the seeded run's stream,
        or fresh OS entropy in an unseeded run."""
        if rows is not None and not (isinstance(rows, int | np.integer) and rows >= 0):
            raise ConfigError(f"rows must be a non-negative integer; got {rows!r}.")
        rng = self.fit(releases)
        if sample_seed is not None:
            rng = np.random.default_rng(sample_seed)
        n = round(self.n_hat) if rows is None else int(rows)
        return TableEncoder(self.config.spec).decode(self.model.sample(n, rng))

    def fit(self, releases: Sequence[SecureRelease]) -> np.random.Generator:
        """Step 4 without sampling: charge the re-measurement and fit the MRF on every
        measurement (``self.model``). Returns the generator the run's sampling draws from:
        the seeded run's stream, or fresh OS entropy in an unseeded run."""
        if self._first is None or self._request is None:
            raise MessageError("run select(first releases) before synthesize(releases).")
        request = self._request
        self._check_releases(MEASURE, request.marginals, releases, request.bins)
        noise, rng = self._randomness(MEASURE, releases)
        if self.seed is None:
            rng = np.random.default_rng()
        with self._atomic():
            self._note_seeded(releases)
            for r in self.plan.releases(MEASURE, request.marginals, request.bins):
                self.ledger.charge(r)
            self._fit_model(releases, self._first, request, noise)
        return rng

    def _fit_model(
        self,
        releases: Sequence[SecureRelease],
        first_release: Tables,
        request: Request,
        noise: NoiseSampler,
    ) -> None:
        second = self._tables(MEASURE, request.marginals, releases, noise, request.bins)
        cliques = [set(c) for c in self.tree.cliques]
        measurements = [
            Measurement(
                m, v, 1.0 / second.scale[m], bins=request.maps(m) if m in request.bins else None
            )
            for m, v in second.values.items()
        ]
        measurements += [
            Measurement(m, v, 1.0 / first_release.scale[m])
            for m, v in first_release.values.items()
            if any(set(m) <= c for c in cliques)
        ]
        model = MarkovRandomField(self.config.spec.domain, self.tree, total=self.n_hat)
        # Warm start: the cheap first release (every 2-way marginal in a clique) first, then
        # everything; on Adult at eps 1.6 this fits in a third of the iterations of one cold
        # fit at an equal or lower 3-way TVD.
        first = measurements[len(second.values) :]
        cap = self.config.secure_options().iters
        self.iterations = [
            self._fit(model, first, self.options.convergence_ratio, cap),
            self._fit(model, measurements, self.options.final_convergence_ratio, cap),
        ]
        self.model = model

    def _fit(self, model: MarkovRandomField, ms: list[Measurement], ratio: float, cap: int) -> int:
        """Mirror descent (warm-started from the model) until the loss is ``ratio`` times
        the noise's expected loss; returns the iterations."""
        opts = self.options
        result = mirror_descent(
            model,
            ms,
            iters=cap,
            tol=opts.tol,
            target_loss=ratio * theoretic_loss(ms, self.config.spec.domain),
            min_iters=0,
            check_every=opts.check_every,
        )
        return int(result.iterations)

    def report(
        self,
        *,
        seconds: dict[str, float] | None = None,
        message_bytes: dict[str, int] | None = None,
    ) -> ProtocolReport:
        """The run's report: the ledger (the plan's releases) and what was measured, with
        the caller's ``seconds`` per phase and ``message_bytes`` per party, if given."""
        if self._request is None:
            raise MessageError("run select and synthesize before report.")
        names = self.config.spec.names
        marginals = self._request.marginals
        cross = [m for m in marginals if self.plan.kind(m) == "cross"]
        return ProtocolReport(
            epsilon=self.config.epsilon,
            delta=self.config.delta,
            method="secure",
            ledger=self.ledger,
            fm_bound=None,
            seeded_roles=self.seeded_roles,
            n_hat=round(self.n_hat),
            model=str(self.tree.size),
            cross_edges=(),
            cross_measured=tuple(tuple(names[a] for a in m) for m in cross),
            n_local_measurements=len(marginals) - len(cross),
            binned=tuple(tuple(names[a] for a in m) for m in self._bins),
            iterations=tuple(self.iterations),
            viewers=self.plan.viewer_rho(list(self.ledger.releases)),
            seconds={} if seconds is None else seconds,
            message_bytes={} if message_bytes is None else message_bytes,
        )
