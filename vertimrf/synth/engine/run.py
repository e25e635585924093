"""The engine end to end on one table (Centralized), each release drawn by the
local oracle; design notes in docs/design/synth.md."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from vertimrf.domain import Domain
from vertimrf.errors import ConfigError
from vertimrf.mrf.estimation import Measurement
from vertimrf.mrf.junction_tree import JunctionTree
from vertimrf.mrf.model import MarkovRandomField
from vertimrf.privacy.split import first_share
from vertimrf.synth.engine.fit import fit_model, measurements
from vertimrf.synth.engine.local import MARGINAL_SENSITIVITY, LocalOracle
from vertimrf.synth.engine.plan import EnginePlan
from vertimrf.synth.engine.scores import record_total
from vertimrf.synth.engine.select import choose
from vertimrf.synth.privmrf.budget_split import COUNT_SENSITIVITY, sigma_for_share
from vertimrf.synth.privmrf.graph_search import GraphSearchResult
from vertimrf.synth.privmrf.noise import FitNoise
from vertimrf.synth.privmrf.options import EngineOptions, PrivMRFOptions
from vertimrf.workload import Workload


@dataclass(frozen=True)
class LocalFit:
    """A fit of the engine (or of the paper's PrivMRF, kept the same way): the model, its
    graph and tree, the record count, every measurement it fitted, the re-measurement's noise
    scale and the fits' iterations."""

    model: MarkovRandomField
    graph: GraphSearchResult
    tree: JunctionTree
    n_hat: float
    measurements: tuple[Measurement, ...]
    sigma: float
    iterations: tuple[int, ...]


def fit_local(
    codes: np.ndarray,
    domain: Domain,
    rho: float,
    engine: EngineOptions,
    options: PrivMRFOptions,
    noise: FitNoise,
    rng: np.random.Generator,
) -> LocalFit:
    """Spend ``rho`` on ``codes`` (rows over ``domain``): ``engine``'s shares and rounds,
    ``options``' search and fit settings; ``noise`` charges and draws, ``rng`` breaks the
    search's ties."""
    d = len(domain)
    if d < 2:
        raise ConfigError("selection='engine' needs a table of at least 2 columns.")
    workload = Workload.given(domain, engine.workload)
    oracle = LocalOracle(codes, domain, noise)
    sigma_n = sigma_for_share(rho * engine.count, 1, COUNT_SENSITIVITY)
    noise.charge("engine.count", COUNT_SENSITIVITY, sigma_n, 1, "noisy record count")
    count = float(noise.gaussian(np.array([codes.shape[0]]), sigma_n)[0])
    pairs, what = oracle.all_pairs(), "first release: every 2-way marginal"
    if workload is not None:
        pairs, what = workload.first_release(d), "first release: the workload's 2-way marginals"
    if engine.select is not None and engine.measure is not None:
        select, measure = engine.select, engine.measure
    else:
        select = first_share(domain.sizes, rho, count, pairs)
        measure = 1.0 - engine.count - select
    sigma1 = sigma_for_share(rho * select, len(pairs), MARGINAL_SENSITIVITY)
    first = oracle.measure(pairs, sigma1, what)
    n_hat = record_total(count, 1.0 / sigma_n**2, first)
    rho_measure = rho * measure
    caps = replace(
        options, max_clique_cells=engine.max_clique_cells, max_total_cells=engine.max_total_cells
    )
    plan = EnginePlan(
        domain,
        sigma1,
        rho_measure,
        engine.refine_fraction,
        engine.iters,
        caps,
        engine.cells_per_precision,
        workload,
    )
    choice = choose(first, n_hat, plan, oracle, rng)
    sigma2 = sigma_for_share(rho_measure, len(choice.marginals), MARGINAL_SENSITIVITY)
    second = oracle.measure(choice.marginals, sigma2, "re-measurement of the selection")
    again, within = measurements(first, second, choice.tree)
    model, iterations = fit_model(plan, choice.tree, n_hat, again, within)
    return LocalFit(
        model, choice.graph, choice.tree, n_hat, (*again, *within), sigma2, tuple(iterations)
    )
