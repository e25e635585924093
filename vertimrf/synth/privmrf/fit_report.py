"""The privacy and model report of a PrivMRF fit, and the graph it exposes."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import networkx as nx

from vertimrf.mrf.junction_tree import ModelSize
from vertimrf.privacy.ledger import Release
from vertimrf.privacy.zcdp import rho_to_epsilon


@dataclass(frozen=True)
class AttributeGraph:
    """The searched attribute graph, its triangulation and the triangulation's maximal cliques."""

    graph: nx.Graph
    chordal: nx.Graph
    cliques: tuple[tuple[int, ...], ...]


def attribute_graph(
    d: int,
    edges: Iterable[tuple[int, int]],
    chordal: Iterable[tuple[int, int]],
    cliques: Iterable[Iterable[int]],
) -> AttributeGraph:
    """The graph and its triangulation on the nodes 0 .. d-1 with these edges (pairs), and
    the triangulation's maximal ``cliques``."""
    graph, triangulated = nx.Graph(), nx.Graph()
    for g, pairs in ((graph, edges), (triangulated, chordal)):
        g.add_nodes_from(range(d))
        g.add_edges_from(pairs)
    return AttributeGraph(graph, triangulated, tuple(tuple(c) for c in cliques))


@dataclass(frozen=True)
class PrivMRFReport:
    """What a fit released and what it built.

    ``releases`` are this fit's ledger entries; ``rho`` their total. ``epsilon_zcdp`` is the
    (epsilon, delta) bound of that rho by the zCDP conversion: every release is a discrete
    Gaussian, whose guarantee is stated in zCDP. With ``gdp_accounting`` the fit spends the
    reference's GDP budget, whose exact Gaussian curve holds for continuous noise only, so
    ``epsilon_zcdp`` then exceeds the requested epsilon.
    ``seeded`` marks a run whose noise came from a seed: reproducible, not for release.
    ``dp_guarantee``, ``total_epsilon`` and :meth:`to_dict` are those of a vertical run's
    :class:`~vertimrf.protocol.ProtocolReport` (:class:`~vertimrf.privacy.FitReport`).
    """

    epsilon: float
    delta: float
    gdp_accounting: bool
    rho_budget: float
    releases: tuple[Release, ...]
    rho: float
    epsilon_zcdp: float
    model_size: ModelSize
    cliques: tuple[tuple[int, ...], ...]
    n_measurements: int
    measurement_sigma: float
    rounds: int
    iterations: tuple[int, ...]
    fit_seconds: float
    seeded: bool

    @classmethod
    def build(
        cls,
        *,
        epsilon: float,
        delta: float,
        gdp_accounting: bool,
        rho_budget: float,
        releases: tuple[Release, ...],
        model_size: ModelSize,
        cliques: tuple[tuple[int, ...], ...],
        n_measurements: int,
        measurement_sigma: float,
        iterations: tuple[int, ...],
        fit_seconds: float,
        seeded: bool,
    ) -> PrivMRFReport:
        """Report with the totals computed from ``releases``."""
        rho = sum(r.rho for r in releases)
        return cls(
            epsilon=epsilon,
            delta=delta,
            gdp_accounting=gdp_accounting,
            rho_budget=rho_budget,
            releases=releases,
            rho=rho,
            epsilon_zcdp=rho_to_epsilon(rho, delta),
            model_size=model_size,
            cliques=cliques,
            n_measurements=n_measurements,
            measurement_sigma=measurement_sigma,
            rounds=len(iterations) - 1,
            iterations=iterations,
            fit_seconds=fit_seconds,
            seeded=seeded,
        )

    @property
    def dp_guarantee(self) -> bool:
        """True when the fit is differentially private: its noise came from no seed."""
        return not self.seeded

    @property
    def total_epsilon(self) -> float | None:
        """The epsilon of the releases' total rho at ``delta`` (a true upper bound), or None
        when the fit is not differentially private."""
        return self.epsilon_zcdp if self.dp_guarantee else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with the keys of a vertical run's report where they mean the same."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "dp_guarantee": self.dp_guarantee,
            "seeded": self.seeded,
            "total_epsilon": self.total_epsilon,
            "total_rho": self.rho,
            "rho_budget": self.rho_budget,
            "gdp_accounting": self.gdp_accounting,
            "model": str(self.model_size),
            "cliques": [list(c) for c in self.cliques],
            "n_measurements": self.n_measurements,
            "measurement_sigma": self.measurement_sigma,
            "iterations": list(self.iterations),
            "seconds": {"fit": self.fit_seconds},
            "releases": [asdict(r) for r in self.releases],
        }

    def __call__(self) -> PrivMRFReport:
        """This report: ``PrivMRF.report`` was a method; it is now an attribute, as on
        :class:`~vertimrf.VerticalModel` (DeprecationWarning)."""
        warnings.warn(
            "PrivMRF.report is an attribute now, as on VerticalModel: drop the ().",
            DeprecationWarning,
            stacklevel=2,
        )
        return self

    def __str__(self) -> str:
        mode = "the reference's GDP budget x/2" if self.gdp_accounting else "zCDP"
        lines = [
            f"PrivMRF fit: requested (epsilon, delta) = ({self.epsilon}, {self.delta:.3g}), "
            f"accounting {mode}",
            f"{'mechanism':<24} {'count':>7} {'sensitivity':>12} {'noise':>15} {'rho':>11}",
        ]
        for (mechanism, sens, noise), (count, rho) in _grouped(self.releases).items():
            lines.append(f"{mechanism:<24} {count:>7} {sens:>12} {noise:>15} {rho:>11.4e}")
        total = f"total (epsilon, delta) = ({self.epsilon_zcdp:.6g}, {self.delta:.3g}) by zCDP"
        if self.gdp_accounting:
            total += " (the reference's GDP curve needs continuous noise; this fit's is discrete)"
        if self.seeded:
            lines.append("seeded run: reproducible noise, not for release")
        lines += [
            f"total rho = {self.rho:.6g} (budget {self.rho_budget:.6g})",
            total,
            f"model: {self.model_size}; cliques {list(self.cliques)}",
            f"measured {self.n_measurements} marginals with sigma {self.measurement_sigma:.4g}; "
            f"{self.rounds} rounds after the first fit; mirror-descent iterations "
            f"{list(self.iterations)}",
            f"fit time {self.fit_seconds:.2f} s",
        ]
        return "\n".join(lines)


def _grouped(releases: tuple[Release, ...]) -> dict[tuple[str, str, str], tuple[int, float]]:
    """The releases summed by (mechanism, sensitivity, noise) in order of first appearance:
    the noise is "sigma=..." or "epsilon=..." (a selection); count and rho add up."""
    out: dict[tuple[str, str, str], tuple[int, float]] = {}
    for r in releases:
        if "sigma" in r.params:
            noise = f"sigma={r.params['sigma']:.4g}"
        else:
            noise = f"epsilon={r.params.get('epsilon', float('nan')):.4g}"
        key = (r.mechanism, f"{r.params.get('sensitivity', float('nan')):.4g}", noise)
        count, rho = out.get(key, (0, 0.0))
        out[key] = (count + r.count, rho + r.rho)
    return out
