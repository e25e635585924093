"""A fitted PrivMRF as a file: its MRF, decoder, measurements, graph, options and report.

The file is the library's checksummed, pickle-free container; the MRF inside it is stored
as :mod:`vertimrf.mrf.model` stores one, so a loaded fit samples like the saved one.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable
from typing import Any

from vertimrf.container import read_container, write_container
from vertimrf.domain import DomainSpec
from vertimrf.errors import ConfigError, MessageError
from vertimrf.mrf.estimation import Measurement
from vertimrf.mrf.junction_tree import DEFAULT_MAX_CELLS, ModelSize
from vertimrf.mrf.model import POTENTIALS, MarkovRandomField, mrf_from_state, mrf_state
from vertimrf.privacy.ledger import Release
from vertimrf.synth.dtypes import check_dtypes
from vertimrf.synth.fitted import Decoder, decoder_from_meta, decoder_meta
from vertimrf.synth.privmrf.budget_split import BudgetSplit
from vertimrf.synth.privmrf.fit_report import AttributeGraph, PrivMRFReport, attribute_graph
from vertimrf.synth.privmrf.options import PrivMRFOptions
from vertimrf.within import Midpoint, Placement, within_from_meta, within_meta

PRIVMRF_KIND = "vertimrf-privmrf"


@dataclasses.dataclass(frozen=True)
class FitState:
    """What a fitted PrivMRF holds: everything :func:`save_fit` writes."""

    epsilon: float
    delta: float
    options: PrivMRFOptions
    decoder: Decoder
    model: MarkovRandomField
    n_hat: float
    measurements: tuple[Measurement, ...]
    graph: AttributeGraph
    report: PrivMRFReport
    dtypes: dict[str, str]
    within: Placement = Midpoint()


def save_fit(state: FitState, path: str | os.PathLike) -> None:
    """Write ``state`` to ``path`` (atomically)."""
    if any(m.bins is not None for m in state.measurements):
        raise ConfigError("a fit with binned measurements cannot be saved.")
    mrf_meta, arrays = mrf_state(state.model)
    arrays.update({f"m{i}": m.values for i, m in enumerate(state.measurements)})
    options = dataclasses.asdict(state.options)
    report = dataclasses.asdict(state.report)
    meta = {
        "epsilon": state.epsilon,
        "delta": state.delta,
        "options": options,
        "decoder": decoder_meta(state.decoder),
        "mrf": mrf_meta,
        "n_hat": state.n_hat,
        "measurements": [[list(m.attrs), m.weight] for m in state.measurements],
        "graph": {
            "edges": sorted(sorted(e) for e in state.graph.graph.edges),
            "chordal": sorted(sorted(e) for e in state.graph.chordal.edges),
            "cliques": [list(c) for c in state.graph.cliques],
        },
        "report": report,
        "dtypes": state.dtypes,
        "within": within_meta(state.within),
    }
    write_container(path, PRIVMRF_KIND, meta, arrays)


def load_fit(path: str | os.PathLike, max_cells: int | None = None) -> FitState:
    """The state :func:`save_fit` wrote; MessageError if the file is tampered, truncated,
    of another format version, malformed, or over ``max_cells`` cells."""
    meta, arrays = read_container(path, PRIVMRF_KIND, array_bytes=_bound(max_cells))
    decoder = decoder_from_meta(meta.get("decoder"), path)
    model = mrf_from_state(meta.get("mrf"), arrays, path, max_cells)
    try:
        if model.domain != (decoder.domain if isinstance(decoder, DomainSpec) else decoder):
            raise ValueError("the model's columns do not match its decoder")
        options = dict(meta["options"])
        options["split"] = BudgetSplit(**options["split"])
        d, graph = len(model.domain), meta["graph"]
        return FitState(
            epsilon=float(meta["epsilon"]),
            delta=float(meta["delta"]),
            options=PrivMRFOptions(**options),
            decoder=decoder,
            model=model,
            n_hat=float(meta["n_hat"]),
            measurements=tuple(
                Measurement(tuple(attrs), arrays[f"m{i}"], weight)
                for i, (attrs, weight) in enumerate(meta["measurements"])
            ),
            graph=attribute_graph(d, graph["edges"], graph["chordal"], graph["cliques"]),
            report=_report(meta["report"]),
            dtypes=check_dtypes(meta.get("dtypes", {}), decoder)
            if isinstance(decoder, DomainSpec)
            else {},
            within=within_from_meta(meta.get("within"), decoder, path)
            if isinstance(decoder, DomainSpec)
            else Midpoint(),
        )
    except (KeyError, TypeError, ValueError, ConfigError) as exc:
        raise MessageError(f"{path}: malformed PrivMRF file ({exc}).") from None


def _bound(max_cells: int | None) -> Callable[[str], int | None]:
    """Arrays: the potentials and measurements, each at most ``max_cells`` float64 cells."""
    limit = 8 * (DEFAULT_MAX_CELLS if max_cells is None else int(max_cells))
    return lambda name: limit if name == POTENTIALS or re.fullmatch(r"m\d+", name) else None


def _report(meta: dict[str, Any]) -> PrivMRFReport:
    fields = dict(meta)
    fields["releases"] = tuple(Release(**r) for r in meta["releases"])
    fields["model_size"] = ModelSize(**meta["model_size"])
    fields["cliques"] = tuple(tuple(c) for c in meta["cliques"])
    fields["iterations"] = tuple(meta["iterations"])
    return PrivMRFReport(**fields)
