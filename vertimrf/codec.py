"""One view of the ``spec`` argument: a Domain, a DomainSpec or an
encoder; design notes in docs/design/core.md."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from vertimrf.domain import Domain, DomainSpec, EncodedTable
from vertimrf.encoding import TableEncoder
from vertimrf.errors import ConfigError, DomainError


class Encoder(Protocol):
    """A user's encoder: ``encode(df)`` gives (n, d) codes over ``domain`` (``decode(codes)``
    is used when present)."""

    @property
    def domain(self) -> Domain: ...

    def encode(self, df: pd.DataFrame) -> np.ndarray: ...


SpecLike = Domain | DomainSpec | TableEncoder | Encoder
TableLike = pd.DataFrame | EncodedTable


@dataclass(frozen=True)
class TableCodec:
    """Encode frames to (n, d) int64 codes over ``domain`` and decode codes to frames."""

    domain: Domain
    encode: Callable[[pd.DataFrame], np.ndarray]
    decode: Callable[[np.ndarray], pd.DataFrame]


def resolve_codec(spec: Any) -> TableCodec:
    """Normalise ``spec`` (see the module docstring) into a :class:`TableCodec`."""
    if isinstance(spec, Domain):
        return TableCodec(
            spec,
            lambda df: _codes_from_coded_frame(df, spec),
            lambda codes: pd.DataFrame(np.asarray(codes), columns=list(spec.names)),
        )
    if isinstance(spec, DomainSpec):
        spec = TableEncoder(spec)
    domain = getattr(spec, "domain", None)
    if not (callable(getattr(spec, "encode", None)) and isinstance(domain, Domain)):
        raise ConfigError(
            "spec must be a vertimrf Domain, a DomainSpec, or an encoder with encode(df) and "
            f".domain; got {type(spec).__name__}."
        )

    def encode(df: pd.DataFrame) -> np.ndarray:
        codes = np.asarray(spec.encode(df))
        if codes.ndim != 2 or codes.shape[1] != len(domain):
            raise DomainError(
                f"spec.encode returned shape {codes.shape}; expected (n, {len(domain)})."
            )
        return codes.astype(np.int64, copy=False)

    def decode(codes: np.ndarray) -> pd.DataFrame:
        if not callable(getattr(spec, "decode", None)):
            raise ConfigError(f"{type(spec).__name__} has no decode(codes); cannot decode.")
        return spec.decode(codes)

    return TableCodec(domain, encode, decode)


def as_table(data: TableLike, spec: SpecLike | None = None) -> tuple[EncodedTable, TableCodec]:
    """``data`` (an EncodedTable, or a frame described by ``spec``) as an EncodedTable, and
    the codec that decodes codes of its domain back to frames."""
    if isinstance(data, EncodedTable):
        codec = resolve_codec(data.domain if spec is None else spec)
        if codec.domain != data.domain:
            raise DomainError(
                f"the table's domain {data.domain.names} does not match the spec's "
                f"{codec.domain.names}; pass spec=None for an EncodedTable."
            )
        return data, codec
    if spec is None:
        raise ConfigError("a DataFrame needs a spec (Domain, DomainSpec or encoder).")
    codec = resolve_codec(spec)
    return EncodedTable(codec.encode(data), codec.domain), codec


def _codes_from_coded_frame(df: pd.DataFrame, domain: Domain) -> np.ndarray:
    """Integer codes of an already-coded frame, checked against ``domain``."""
    if not isinstance(df, pd.DataFrame):
        raise DomainError(f"expected a pandas DataFrame; got {type(df).__name__}.")
    columns = [str(c) for c in df.columns]
    missing = [c for c in domain.names if c not in columns]
    if missing:
        raise DomainError(
            f"frame lacks domain columns {missing}; name the columns by Domain.names "
            "or pass a DomainSpec / TableEncoder as spec."
        )
    sub = df.set_axis(columns, axis=1)[list(domain.names)]
    if not all(pd.api.types.is_integer_dtype(t) for t in sub.dtypes):
        raise DomainError(
            "coded frames must have integer columns; encode the table first or pass a "
            "DomainSpec / TableEncoder as spec."
        )
    codes = sub.to_numpy(dtype=np.int64)
    sizes = np.asarray(domain.sizes, dtype=np.int64)
    bad = np.flatnonzero(((codes < 0) | (codes >= sizes)).any(axis=0))
    if bad.size:
        cols = [domain.names[i] for i in bad]
        raise DomainError(f"columns {cols} hold codes outside 0..size-1 of the domain.")
    return codes
