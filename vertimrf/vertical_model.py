"""VerticalModel: the global MRF a vertical run fitted, with its spec and privacy report.

:func:`vertimrf.fit_vertical` returns one. Sampling and marginals read the fitted model
only (post-processing), so they spend no budget and leave the report as it is; the model
saves to and loads from the library's checksummed container (no pickle).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from vertimrf.container import read_container, write_container
from vertimrf.domain import DomainSpec
from vertimrf.errors import DomainError, MessageError
from vertimrf.io import refuse_existing
from vertimrf.mrf.model import MarkovRandomField, mrf_from_state, mrf_state, potentials_bound
from vertimrf.protocol.report import ProtocolReport
from vertimrf.protocol.report_file import report_from_meta, report_meta
from vertimrf.synth.dtypes import check_dtypes, typed
from vertimrf.synth.fitted import (
    absent_decoder,
    check_rows,
    decoder_from_meta,
    decoder_meta,
    decoder_of,
    generator,
    marginal_series,
)
from vertimrf.synth.table_file import save_table
from vertimrf.within import Midpoint, Placement, within_from_meta, within_meta

MODEL_KIND = "vertimrf-vertical-model"


class VerticalModel:
    """A fitted vertical model: ``sample(n)`` rows (or ``write_sample(path, n)`` to a CSV or
    Parquet file) and ``marginal(columns)`` at no privacy cost; ``save(path)`` and
    ``VerticalModel.load(path)``. ``report`` is a :class:`~vertimrf.privacy.FitReport`, as a
    :class:`~vertimrf.PrivMRF`'s is.

    Args:
        model: the fitted global MRF over the spec's columns (marginals scaled to n_hat).
        spec: the public domain; samples hold its values.
        report: the run's privacy report (what was released and its total).
        rng: the generator :meth:`sample` draws from when given no seed (default: seeded
            from OS entropy).
        absent: the model is over the union of the records of parties whose record sets
            differ: each column has one more value, "absent", sampled as an empty cell.
        within: where a numeric value lies inside its bin (:mod:`vertimrf.within`;
            default: the midpoint).
        empty: samples can hold empty cells (default: ``absent``). A model over the union
            conditioned on the intersection of the records has none: its integer and
            boolean columns keep their non-nullable dtypes.
        dtypes: the pandas dtype of each column a sample casts, by name (see
            :mod:`vertimrf.synth.dtypes`); :func:`~vertimrf.fit_vertical` gives the fitted
            frames' dtypes.
    """

    def __init__(
        self,
        model: MarkovRandomField,
        spec: DomainSpec,
        report: ProtocolReport,
        *,
        rng: np.random.Generator | None = None,
        absent: bool = False,
        empty: bool | None = None,
        dtypes: Mapping[str, str] | None = None,
        within: Placement | None = None,
    ) -> None:
        self.model = model
        self.spec = spec
        self.report = report
        self.absent = absent
        self.empty = absent if empty is None else empty and absent
        self.dtypes = check_dtypes({} if dtypes is None else dtypes, spec)
        self.within: Placement = Midpoint() if within is None else within
        decode = (absent_decoder if absent else decoder_of)(spec, self.within)
        self._decode = typed(decode, spec, self.dtypes, absent=self.empty)
        self._rng = np.random.default_rng() if rng is None else rng

    def with_dtypes(self, dtypes: Mapping[str, str]) -> VerticalModel:
        """This model (sharing its generator), its samples cast to ``dtypes`` (see
        :func:`~vertimrf.synth.dtypes.column_dtypes`)."""
        return VerticalModel(
            self.model,
            self.spec,
            self.report,
            rng=self._rng,
            absent=self.absent,
            empty=self.empty,
            dtypes=dtypes,
            within=self.within,
        )

    @property
    def n_hat(self) -> int:
        """The noisy record count (the default number of rows)."""
        return self.report.n_hat

    def sample(
        self, n: int | None = None, seed: int | np.random.Generator | None = None
    ) -> pd.DataFrame:
        """``n`` synthetic rows (default n_hat) with the spec's values. ``seed`` fixes the
        draw; without one the model's own generator is used (a fitted model continues its
        run's stream, so ``simulate`` and ``fit_vertical(...).sample()`` agree). The rows
        are those of :meth:`sample_chunks`, concatenated."""
        chunks = list(self.sample_chunks(n, seed))
        if not chunks:  # no rows: an empty frame of the sample's columns and dtypes
            empty = np.zeros((0, len(self.spec)), np.int64)
            return self._decode(empty, generator(seed, self._rng))
        return pd.concat(chunks, ignore_index=True) if len(chunks) > 1 else chunks[0]

    def sample_chunks(
        self, n: int | None = None, seed: int | np.random.Generator | None = None
    ) -> Iterator[pd.DataFrame]:
        """The rows of :meth:`sample` (same ``n`` and ``seed``: the same rows, in order) as
        frames of at most :data:`~vertimrf.mrf.sampling.SAMPLE_CHUNK` rows, each drawn as
        the iterator reaches it; none for n = 0."""
        rows = self.n_hat if n is None else check_rows(n)
        g = generator(seed, self._rng)
        return self._decoded(self.model.sample_chunks(rows, g), g)

    def _decoded(
        self, chunks: Iterator[np.ndarray], g: np.random.Generator
    ) -> Iterator[pd.DataFrame]:
        for codes in chunks:
            yield self._decode(codes, g)
            del codes  # the next chunk is drawn without holding this one

    def write_sample(
        self,
        path: str | os.PathLike,
        n: int | None = None,
        seed: int | np.random.Generator | None = None,
        *,
        overwrite: bool = False,
    ) -> Path:
        """Write the rows of :meth:`sample` to ``path``, CSV or Parquet by its suffix
        (``.csv``: the bytes of ``sample(n, seed).to_csv(index=False)``; ``.parquet``: one
        row group per chunk), one chunk at a time, so memory does not grow with ``n``. The
        file appears complete or not at all; an existing one is refused unless
        ``overwrite``. Returns the path."""
        chunks = self.sample_chunks(n, seed)
        save_table(path, chunks, self.spec, overwrite=overwrite, decode=self._decode)
        return Path(path)

    def marginal(self, columns: Sequence[str]) -> pd.Series:
        """The model's distribution over ``columns`` (probabilities summing to 1) as a Series
        indexed, in C order over the columns as given, by the values a sample holds
        (categories or numeric bin midpoints): a MultiIndex for several columns."""
        return marginal_series(self.model, self._decode, columns)

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
        """Write the model, spec, dtypes and report to ``path`` (atomically); returns the
        path. An existing file is refused unless ``overwrite``."""
        refuse_existing(path, overwrite)
        mrf_meta, arrays = mrf_state(self.model)
        meta: dict[str, Any] = {
            "decoder": decoder_meta(self.spec),
            "report": report_meta(self.report),
            "mrf": mrf_meta,
        }
        if self.absent:
            meta["absent"] = True
            meta["empty"] = self.empty
        if self.dtypes:
            meta["dtypes"] = self.dtypes
        if self.within.name != "midpoint":
            meta["within"] = within_meta(self.within)
        write_container(path, MODEL_KIND, meta, arrays)
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike, *, max_cells: int | None = None) -> VerticalModel:
        """The model :meth:`save` wrote. A tampered or truncated file, one of another format
        version, or a model over ``max_cells`` cells raises
        :class:`~vertimrf.errors.MessageError`."""
        meta, arrays = read_container(path, MODEL_KIND, array_bytes=potentials_bound(max_cells))
        spec = decoder_from_meta(meta.get("decoder"), path)
        if not isinstance(spec, DomainSpec):
            raise MessageError(f"{path}: a vertical model needs a column spec.")
        model = mrf_from_state(meta.get("mrf"), arrays, path, max_cells)
        absent = meta.get("absent", False) is True
        empty = meta.get("empty", True) is not False
        want = spec.domain.sizes
        sizes = tuple(u + 1 for u in want) if absent else tuple(want)
        if model.domain.names != spec.domain.names or tuple(model.domain.sizes) != sizes:
            raise MessageError(f"{path}: the model's columns do not match its spec.")
        try:
            dtypes = check_dtypes(meta.get("dtypes", {}), spec)
        except DomainError as exc:
            raise MessageError(f"{path}: {exc}") from None
        report = report_from_meta(meta.get("report"), path)
        within = within_from_meta(meta.get("within"), spec, path)
        return cls(model, spec, report, absent=absent, empty=empty, dtypes=dtypes, within=within)

    def __repr__(self) -> str:
        return f"VerticalModel({self.report.method}, n_hat={self.n_hat}, {self.model.tree.size})"
