"""The server's cross-party marginal estimates: CarEst (FM), GRR inversion (FO) or the
secure product's noisy exact counts (method="secure", paper pipeline) on the binned
domains, then HisRec (or UniSam) back to the original values, then consistency with the
local models' 1-way marginals. Every stage is cached per marginal; all of it is
post-processing of the parties' DP releases.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from vertimrf.domain import Domain
from vertimrf.protocol.bins import BinMap
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.message import PartyMessage
from vertimrf.server.consistency import enforce_consistency
from vertimrf.server.methods import SourceInputs, server_method
from vertimrf.server.recovery import hisrec, unisam


class CrossEstimates:
    """Estimated counts (summing to ``n_hat``) of marginals over attributes, given by their
    indices in the config's domain (names matter only where the messages are read).

    Args:
        messages: the parties' checked messages.
        config: the protocol config.
        n_hat: the released noisy record count.
        local_marginal: the 1-way marginal (counts) of attribute i under the local models,
            used for consistency when the config asks for it; None (default) disables it.
            :meth:`with_local_marginal` gives a copy with it, sharing the binned estimates.
        secure_tables: method="secure" only: the noisy binned count table of every
            cross-party pair, keyed by its attributes in the table's axis order, from the
            secure product's release.
    """

    def __init__(
        self,
        messages: Sequence[PartyMessage],
        config: ProtocolConfig,
        n_hat: float,
        local_marginal: Callable[[int], np.ndarray] | None = None,
        secure_tables: Mapping[tuple[int, ...], np.ndarray] | None = None,
    ) -> None:
        self.config = config
        self._names = config.spec.domain.names
        self.n_hat = float(n_hat)
        self.bins: dict[str, BinMap] = {k: v for m in messages for k, v in m.bins.items()}
        self.options = config.paper_options()
        self.local_marginal = local_marginal if self.options.consistency else None
        domains = [m.bin_domain(config) for m in messages]
        self.bin_domain = Domain(
            tuple(n for d in domains for n in d.names), tuple(u for d in domains for u in d.sizes)
        )
        self._source = server_method(config).source(
            SourceInputs(config, messages, self.n_hat, self.bin_domain, secure_tables)
        )
        self._binned: dict[tuple[int, ...], np.ndarray] = {}
        self._targets: dict[tuple[int, ...], np.ndarray] = {}

    def with_local_marginal(self, local_marginal: Callable[[int], np.ndarray]) -> CrossEstimates:
        """A copy that enforces consistency with ``local_marginal`` (if the config asks for
        it); the binned estimates already made are shared, recovered targets are not."""
        other = copy.copy(self)
        other.local_marginal = local_marginal if self.options.consistency else None
        other._targets = {}
        return other

    def binned(self, attrs: Sequence[int]) -> np.ndarray:
        """Counts over the binned domains of ``attrs`` (clipped at 0, scaled to n_hat)."""
        key = tuple(int(a) for a in attrs)
        if key not in self._binned:
            est = self._source(key, tuple(self._names[a] for a in key))
            self._binned[key] = _scaled(est, self.n_hat)
        return self._binned[key].copy()

    def target(self, attrs: Sequence[int]) -> np.ndarray:
        """Counts over the original domains of ``attrs``: recovered, then made consistent."""
        key = tuple(int(a) for a in attrs)
        if key not in self._targets:
            maps = [self.bins.get(self._names[a]) for a in key]
            recover = hisrec if self.options.recovery == "hisrec" else unisam
            table = _scaled(recover(self.binned(key), maps), self.n_hat)
            if self.local_marginal is not None:
                names = [key] + [(a,) for a in key]
                tables = [table] + [self.local_marginal(a) for a in key]
                table = enforce_consistency(names, tables, self.n_hat)[0]
            self._targets[key] = table
        return self._targets[key].copy()


def _scaled(table: np.ndarray, total: float) -> np.ndarray:
    t = np.clip(np.asarray(table, dtype=np.float64), 0.0, None)
    s = t.sum()
    return t * (total / s) if s > 0 else np.full(t.shape, total / t.size)
