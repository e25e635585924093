"""The server's selection, post-processing of the first release: from every 2-way
marginal (summed, with the server's noise) PrivMRF's selection on the whole table: the record
count pooled from the noisy count and every table's sum, noisy pairwise scores against
pooled 1-way marginals, the greedy graph search under model caps that grow with the
measurements' precision, the initial marginal set per clique (split into measurable parts:
within one party, or 2-way cross), plus the highest-scoring pairs inside the cliques whose
first release is still noisy. It returns the request for re-measurement, in which a 2-way
marginal is binned where its estimated error is lower binned than at its full domain
(``secure_binning="auto"``, :mod:`vertimrf.server.binning`). What select found is kept
between processes in the server's private state file (:meth:`Selection.save_state`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import TypeVar

import numpy as np

from vertimrf.container import read_container, write_container
from vertimrf.crypto.keys import KeyPair
from vertimrf.errors import ConfigError, MessageError
from vertimrf.mrf.junction_tree import JunctionTree
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.methods import rules
from vertimrf.protocol.secure import MEASURE, SELECT, Marginal, Request
from vertimrf.protocol.securemsg import SecureRelease
from vertimrf.server.binning import BinChoice, choose_bins
from vertimrf.server.secure.dealer import Dealer
from vertimrf.server.secure.state import Tables
from vertimrf.synth.privmrf.graph_search import greedy_graph_search
from vertimrf.synth.privmrf.initial_set import initial_marginals
from vertimrf.synth.privmrf.usefulness import graph_phase_max_cells
from vertimrf.synth.union import UnionDomain, union_cells

STATE_KIND = "vertimrf-secure-server-state"
S = TypeVar("S", bound="Selection")
# A 2-way marginal is re-measured only if its first release's noise is above 1/100 of the
# mean count per cell, i.e. cells > n_hat / (EXTRA_PRECISION * sigma_select).
EXTRA_PRECISION = 100.0
# The server's model caps (see SecureServer.model_caps).
MODEL_CELLS_PER_PRECISION = 2750.0
MIN_TOTAL_CELLS = 2.5e5
MIN_CLIQUE_CELLS = 1e5
# Partial record sets: a selection whose union model (links and fill-in included) exceeds
# the fit's cap is made again with UNION_SHRINK times the cells, at most UNION_SHRINKS times.
UNION_SHRINK = 0.7
UNION_SHRINKS = 12


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


def pair_scores(
    tables: Tables,
    sizes: Sequence[int],
    n_hat: float,
    populations: Mapping[Marginal, float] | None = None,
) -> np.ndarray:
    """Noisy normalised TVDs from independence, debiased for the noise: for a table T with
    noise scale s over a population of N records, 1/2 sum |T - N p_a p_b| minus the noise's
    expected contribution 1/2 * cells * s * sqrt(2 / pi), floored at 0 and divided by N.
    N is ``n_hat``, or the table's own in ``populations`` (partial record sets: a pair's
    table counts only the records its owners both hold, and measured against n_hat every
    pair of parties would look dependent). The independence table uses the pooled 1-way
    marginals (:func:`one_way`), not T's own noisy sums, whose error made wide tables (e.g.
    Adult's 41-value country) score far above their TVD."""
    d = len(sizes)
    out = np.zeros((d, d))
    ones = one_way(tables, sizes)
    probs = [v / v.sum() if v.sum() > 0 else np.full(v.size, 1.0 / v.size) for v in ones]
    for (i, j), flat in tables.values.items():
        t = flat.reshape(sizes[i], sizes[j])
        n = n_hat if populations is None else max(populations[i, j], 1.0)
        indep = np.outer(probs[i], probs[j]) * n
        bias = 0.5 * t.size * tables.scale[i, j] * math.sqrt(2.0 / math.pi)
        out[i, j] = out[j, i] = max(0.0, 0.5 * float(np.abs(t - indep).sum()) - bias) / n
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


class Selection(Dealer):
    """The server's first-release step: :meth:`select` (or the paper pipeline's
    :meth:`cross_tables`), and its state between processes."""

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
        sigma = plan.sigma(MEASURE, marginals)  # before binning, which lowers it
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

    def _pair_populations(self) -> dict[Marginal, float] | None:
        """Partial record sets with a model over the union: each pair's population, the
        records both its owners hold, summed from the published region counts (a
        post-processing); None otherwise (every table is over the same records)."""
        if not self.models_union:
            return None
        assert self._regions is not None  # the union is modelled after the deal
        owner = self.plan.owner
        return {
            (i, j): float(
                sum(r for t, r in self._regions.items() if t >> owner[i] & 1 and t >> owner[j] & 1)
            )
            for i, j in self.plan.all_pairs()
        }

    def _union_fits(self, cliques: Sequence[Sequence[int]]) -> bool:
        """Partial record sets: whether the union model over ``cliques`` (with each party's
        links and the representatives' group) fits the fit's cap on cells."""
        space = UnionDomain(self.config.spec.domain, self.plan.owner)
        return union_cells(space, cliques) <= rules(self.config).model_cap(self.config)

    def _choose(self, first: Tables, rng: np.random.Generator) -> list[Marginal]:
        plan, opts = self.plan, self.options
        sizes, d = plan.sizes, len(plan.sizes)
        scores = pair_scores(first, sizes, self.n_hat, self._pair_populations())
        max_clique, max_total = self.model_caps()
        # partial record sets: the model is over the union, one more value ("absent") each
        cells = tuple(u + 1 for u in sizes) if self.models_union else sizes
        for _ in range(UNION_SHRINKS):
            found = greedy_graph_search(
                scores,
                cells,
                max_clique_cells=max_clique,
                max_total_cells=max_total,
                size_penalty=opts.size_penalty,
                rng=rng,
            )
            if not self.models_union or self._union_fits(found.cliques):
                break
            max_total *= UNION_SHRINK  # the links and the fill-in grew it past the fit's cap
            max_clique = min(max_clique, max_total)
        else:
            raise ConfigError(
                "the model over the union of the parties' records would not fit the server's "
                "cap on model cells even with the smallest cliques: raise "
                "secure_max_total_cells in a new config, or bin the widest attributes."
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
        sigma1 = plan.sigma(SELECT, plan.all_pairs())
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
        regions = self.kept_regions()  # partial record sets: the region counts and slots
        if regions is not None:
            meta["regions"] = regions
        arrays = {f"t{i}": self._first.values[m] for i, m in enumerate(keys)}
        write_container(path, STATE_KIND, meta, arrays)

    @classmethod
    def load_state(
        cls: type[S],
        config: ProtocolConfig,
        path: str | os.PathLike,
        *,
        seed: int | None = None,
        keypair: KeyPair | None = None,
    ) -> S:
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
        if "regions" in meta:  # partial record sets: the deal's region counts and slots
            server.restore_regions(meta["regions"])
        server._bins = server._binning(first, marginals)  # deterministic: as select chose them
        server._request = plan.check_request(
            marginals, {m: c.maps for m, c in server._bins.items()}
        )
        for r in plan.releases(SELECT, plan.all_pairs()):
            server.ledger.charge(r)
        return server
