"""What every fitted synthesizer offers: rows drawn from its MRF, its marginals, its decoder.

Sampling and marginals are post-processing of the DP fit: they read the fitted model only,
so they cost no privacy budget. The decoder (a :class:`~vertimrf.domain.DomainSpec`, or a
:class:`~vertimrf.domain.Domain` for integer-coded frames) maps codes back to values and is
stored with a saved model as JSON.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from vertimrf.domain import Domain, DomainSpec, EncodedTable
from vertimrf.encoding import TableEncoder
from vertimrf.errors import ConfigError, DomainError, MessageError
from vertimrf.mrf.model import MarkovRandomField
from vertimrf.within import Placement

Decoder = Domain | DomainSpec


def generator(
    seed: int | np.random.Generator | None, default: np.random.Generator
) -> np.random.Generator:
    """The generator a sample draws from: ``default`` (the model's own) for None, a
    Generator as given, else ``numpy.random.default_rng(seed)``."""
    if seed is None:
        return default
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer or None; got {seed!r}.")
    return np.random.default_rng(int(seed))


def check_rows(n: object) -> int:
    """``n`` as a row count; ConfigError unless it is a non-negative integer."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise ConfigError(f"n must be a non-negative integer; got {n!r}.")
    return int(n)


Decode = Callable[..., pd.DataFrame]  # (codes, rng=None) -> frame


def decoder_of(decoder: Decoder, within: Placement | None = None) -> Decode:
    """(codes, rng=None) -> frame: the spec's values (a numeric value placed inside its bin
    by ``within``, the midpoint without ``rng``), or integer codes named by the domain."""
    if isinstance(decoder, DomainSpec):
        encoder = TableEncoder(decoder)
        return lambda codes, rng=None: encoder.decode(codes, rng, within)
    return lambda codes, rng=None: pd.DataFrame(np.asarray(codes), columns=list(decoder.names))


def absent_decoder(decoder: Decoder, within: Placement | None = None) -> Decode:
    """(codes, rng=None) -> frame for a model over the union of records (partial record
    sets): as :func:`decoder_of`, and an empty cell (NaN) where a code is one past the
    column's last, the value "absent" (the column's party does not hold the record)."""
    decode = decoder_of(decoder, within)
    domain = decoder.domain if isinstance(decoder, DomainSpec) else decoder
    sizes = np.asarray(domain.sizes)

    def run(codes: np.ndarray, rng: np.random.Generator | None = None) -> pd.DataFrame:
        absent = np.asarray(codes) == sizes
        return decode(np.where(absent, 0, codes), rng).mask(absent)

    return run


def marginal_series(
    model: MarkovRandomField,
    decode: Callable[[np.ndarray], pd.DataFrame],
    columns: Sequence[str],
) -> pd.Series:
    """The model's distribution over ``columns``: probabilities summing to 1, indexed (in C
    order over the columns as given) by the values a sample holds: categories, numeric bin
    midpoints, or codes. One column gives an Index, several a MultiIndex."""
    if isinstance(columns, str):
        columns = [columns]
    domain = model.domain
    unknown = [c for c in columns if c not in domain.names]
    if unknown or not columns:
        raise DomainError(f"marginal needs columns of {list(domain.names)}; got {list(columns)}.")
    attrs = [domain.index(c) for c in columns]
    probs = model.marginal(attrs) / model.total
    cells = np.indices(domain.shape(attrs)).reshape(len(attrs), -1).T
    codes = np.zeros((len(cells), len(domain)), dtype=np.int64)
    codes[:, attrs] = cells
    labels = decode(codes)[list(columns)]
    index = (
        pd.Index(labels.iloc[:, 0], name=columns[0])
        if len(columns) == 1
        else pd.MultiIndex.from_frame(labels)
    )
    return pd.Series(probs.ravel(), index=index, name="probability")


def decoder_meta(decoder: Decoder) -> dict[str, Any]:
    """The decoder as JSON-ready metadata."""
    if isinstance(decoder, DomainSpec):
        return {"spec": decoder.to_dict()}
    return {"names": list(decoder.names), "sizes": list(decoder.sizes)}


def decoder_from_meta(meta: Any, where: str | os.PathLike) -> Decoder:
    """The decoder :func:`decoder_meta` described; MessageError naming ``where`` if not."""
    try:
        if "spec" in meta:
            return DomainSpec.from_dict(meta["spec"])
        return Domain(tuple(meta["names"]), tuple(meta["sizes"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise MessageError(f"{where}: malformed column description ({exc}).") from None


def decoder_for(data: object, spec: object) -> Decoder | None:
    """The storable decoder of a fit on ``data`` with ``spec`` (see
    :func:`vertimrf.codec.as_table`); None for a custom encoder, which cannot be stored."""
    if isinstance(spec, TableEncoder):
        return spec.spec
    if isinstance(spec, Domain | DomainSpec):
        return spec
    if spec is None and isinstance(data, EncodedTable):
        return data.domain
    return None
