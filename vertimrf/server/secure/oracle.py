"""The secure protocol as the engine's measurement oracle (:mod:`vertimrf.synth.engine`):
what the secure product can measure. A marginal of one party, or of two whose round-2 groups
toward each other stay within their caps; anything else is split into its per-party parts
and cross blocks that fit. Partial record sets modelled over the union count each attribute
with one more value ("absent"), each pair over the records both its owners hold, and the
union model must fit the fit's cap. The measurements themselves come from the protocol's
rounds."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import combinations

from vertimrf.protocol.secure.marginals import Marginal
from vertimrf.protocol.secure.plan import SecurePlan

TOO_LARGE = (
    "the model over the union of the parties' records would not fit the server's "
    "cap on model cells even with the smallest cliques: raise "
    "secure_max_total_cells in a new config, or bin the widest attributes."
)


class SecureOracle:
    """The constraints of the secure product of ``plan``; with partial record sets modelled
    over the union, each pair's ``populations`` and the union model's check ``union_fits``."""

    too_large = TOO_LARGE

    def __init__(
        self,
        plan: SecurePlan,
        *,
        populations: Mapping[Marginal, float] | None = None,
        union_fits: Callable[[Sequence[Sequence[int]]], bool] | None = None,
    ) -> None:
        self.plan = plan
        self._populations = populations
        self._union_fits = union_fits

    def all_pairs(self) -> list[Marginal]:
        return self.plan.all_pairs()

    def canonical(self, m: Marginal) -> Marginal:
        return self.plan.canonical(m)

    def cells(self, m: Marginal) -> int:
        return self.plan.cells(m)

    def search_sizes(self) -> tuple[int, ...]:
        sizes = self.plan.sizes
        return sizes if self._union_fits is None else tuple(u + 1 for u in sizes)

    def populations(self) -> Mapping[Marginal, float] | None:
        return self._populations

    def model_fits(self, cliques: Sequence[Sequence[int]]) -> bool:
        return self._union_fits is None or self._union_fits(cliques)

    def measurable(self, wanted: Sequence[Marginal], edges: set[Marginal]) -> list[Marginal]:
        extra: dict[tuple[int, int], set[Marginal]] = {}
        out: list[Marginal] = []
        for m in wanted:
            out += self.parts(m, edges, extra)
        return out

    def _fits(
        self, extra: dict[tuple[int, int], set[Marginal]], p: int, q: int, g: Marginal
    ) -> bool:
        """True when party p's round-2 groups toward q, with ``g``, stay within its cap."""
        plan = self.plan
        if len(g) == 1 or g in extra.get((p, q), ()):
            return True
        used = sum(plan.cells(h) for h in extra.get((p, q), ()))
        return used + plan.cells(g) <= plan.group_caps[p]

    def parts(
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
