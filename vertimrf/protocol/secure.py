"""What every role of method="secure" derives from the config alone.

The secure product measures cross-party marginals as exact counts plus discrete Gaussian
noise (``secure-cross-marginals.md``). Each party P one-hot encodes its attributes into k_P
columns; for two parties P < Q the dealer-assisted product gives additive shares of the
k_P x k_Q matrix X_P^T X_Q, whose (a, b) blocks are the cross 2-way marginals. This module
fixes, from the public config: the feature layout, the padded row count, the labels under
which seeds and pads are expanded, the budget split and every noise scale, and the ledger
entries of each release, so that no role trusts another's arithmetic.

Noise and accounting. A marginal measured at scale sigma gets:
* within one party: N_Z(0, sigma^2) from its owner (charge 1 / (2 sigma^2), exact);
* across parties P, Q: N_Z(0, s^2) from P, from Q and from the server after summing, with
  s = sigma / sqrt(2). Every viewer knows at most one of the three and faces the sum of the
  other two, which :func:`vertimrf.privacy.ddg.ddg_rho` bounds (about 1 / (2 sigma^2)); the
  published variance is 1.5 sigma^2.
Each release changes by at most 1 in one cell of each of its marginals, so a batch of K
marginals has squared L2 sensitivity K.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vertimrf.errors import ConfigError, MessageError
from vertimrf.privacy.ddg import ddg_rho
from vertimrf.privacy.ledger import Release
from vertimrf.privacy.zcdp import epsilon_to_rho, pure_to_rho
from vertimrf.protocol.config import ProtocolConfig

SELECT = "select"
MEASURE = "measure"
RELEASES = (SELECT, MEASURE)
COUNT_MECHANISM = "discrete_laplace"
WITHIN_MECHANISM = "discrete_gaussian"
CROSS_MECHANISM = "distributed_discrete_gaussian"
_SAFETY = 1.0 + 1e-9  # sigma margin so that the tiny KLS tau terms stay inside the share

Marginal = tuple[int, ...]


@dataclass(frozen=True)
class SecurePlan:
    """The public layout and budget of a secure run.

    ``attrs[p]`` are party p's attribute indices (in spec order), ``offsets[p][j]`` the first
    one-hot column of its j-th attribute and ``widths[p]`` its k_p; ``rows`` is the public
    padded row count (``config.max_rows``).
    """

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    attrs: tuple[tuple[int, ...], ...]
    offsets: tuple[tuple[int, ...], ...]
    widths: tuple[int, ...]
    rows: int
    count_party: str
    rho: float
    rho_count: float
    rho_select: float
    rho_measure: float
    refine_fraction: float

    @classmethod
    def from_config(cls, config: ProtocolConfig) -> SecurePlan:
        """The plan of ``config`` (which must use method="secure" and give max_rows)."""
        if config.method != "secure":
            raise ConfigError(f"a secure plan needs method='secure'; got {config.method!r}.")
        if config.max_rows is None:
            raise ConfigError(
                "method='secure' needs max_rows: a public upper bound on the number of records. "
                "Every party pads its rows to it, so that message sizes reveal nothing about the "
                "true count (give e.g. max_rows=50000, or --max-rows on the command line)."
            )
        names = config.spec.names
        index = {c: i for i, c in enumerate(names)}
        sizes = tuple(int(s) for s in config.spec.domain.sizes)
        attrs, offsets, widths = [], [], []
        for p in config.parties:
            own = tuple(sorted(index[c] for c in p.columns))
            offs = tuple(int(sum(sizes[a] for a in own[:j])) for j in range(len(own)))
            attrs.append(own)
            offsets.append(offs)
            widths.append(int(sum(sizes[a] for a in own)))
        rho = epsilon_to_rho(config.epsilon, config.delta)
        s = config.secure_shares
        return cls(
            names=tuple(p.name for p in config.parties),
            sizes=sizes,
            attrs=tuple(attrs),
            offsets=tuple(offsets),
            widths=tuple(widths),
            rows=int(config.max_rows),
            count_party=config.count_party,
            rho=rho,
            rho_count=rho * s["count"],
            rho_select=rho * s["select"],
            rho_measure=rho * s["measure"],
            refine_fraction=float(config.secure_refine_fraction),
        )

    # ------------------------------------------------------------------ layout
    @property
    def owner(self) -> tuple[int, ...]:
        """Party index of every attribute."""
        out = [0] * len(self.sizes)
        for p, own in enumerate(self.attrs):
            for a in own:
                out[a] = p
        return tuple(out)

    def party_index(self, name: str) -> int:
        """Index of the party called ``name``."""
        if name not in self.names:
            raise ConfigError(f"no party {name!r}; parties are {list(self.names)}.")
        return self.names.index(name)

    def pairs(self) -> list[tuple[int, int]]:
        """Every pair of parties (p, q), p < q: the products of the run."""
        m = len(self.names)
        return [(p, q) for p in range(m) for q in range(p + 1, m)]

    def block(self, a: int, b: int) -> tuple[int, int, int, int]:
        """Rows and columns (r0, r1, c0, c1) of the cross marginal (a, b) in its pair's
        k_p x k_q share matrix (a owned by the lower party)."""
        owner = self.owner
        p, q = owner[a], owner[b]
        if not p < q:
            raise ConfigError(f"({a}, {b}) is not a cross marginal of parties p < q.")
        r0 = self.offsets[p][self.attrs[p].index(a)]
        c0 = self.offsets[q][self.attrs[q].index(b)]
        return r0, r0 + self.sizes[a], c0, c0 + self.sizes[b]

    def kind(self, m: Marginal) -> str:
        """ "within" (one party), "cross" (a 2-way marginal over two parties) or raise."""
        parties = {self.owner[a] for a in m}
        if len(parties) == 1:
            return "within"
        if len(m) == 2:
            return "cross"
        raise MessageError(
            f"marginal {m} spans parties {sorted(parties)} with more than two attributes; the "
            "secure product measures only 2-way cross-party marginals."
        )

    def canonical(self, m: Marginal) -> Marginal:
        """A cross marginal ordered (lower party's attribute, higher's); within sorted."""
        m = tuple(int(a) for a in m)
        if self.kind(m) == "cross":
            a, b = m
            return (a, b) if self.owner[a] < self.owner[b] else (b, a)
        return tuple(sorted(m))

    def all_pairs(self) -> list[Marginal]:
        """The first release: every 2-way marginal, canonical."""
        d = len(self.sizes)
        return [self.canonical((i, j)) for i in range(d) for j in range(i + 1, d)]

    # ------------------------------------------------------------------ noise
    def sigma(self, release: str, count: int) -> float:
        """Noise scale of each of ``count`` marginals of ``release`` (select or measure)."""
        if release not in RELEASES or count < 1:
            raise ConfigError(f"unknown release {release!r} or no marginals ({count}).")
        share = self.rho_select if release == SELECT else self.rho_measure
        return math.sqrt(count / (2.0 * share)) * _SAFETY

    @property
    def count_epsilon(self) -> float:
        """Epsilon of the discrete Laplace noisy record count."""
        return math.sqrt(2.0 * self.rho_count)

    def releases(self, release: str, marginals: list[Marginal]) -> list[Release]:
        """The ledger entries of one release of ``marginals`` (and of the count with the
        first release): one entry per party for its within marginals, one per product."""
        marginals = [self.canonical(m) for m in marginals]
        sigma = self.sigma(release, len(marginals))
        out = []
        if release == SELECT:
            out.append(
                Release(
                    COUNT_MECHANISM,
                    "noisy record count",
                    pure_to_rho(self.count_epsilon),
                    1,
                    self.count_party,
                    {"epsilon": self.count_epsilon},
                )
            )
        for p, name in enumerate(self.names):
            own = [m for m in marginals if self.kind(m) == "within" and self.owner[m[0]] == p]
            if own:
                out.append(
                    Release(
                        WITHIN_MECHANISM,
                        f"{release}: {len(own)} own marginals",
                        len(own) / (2.0 * sigma * sigma),
                        len(own),
                        name,
                        {"sensitivity": 1.0, "sigma": sigma},
                    )
                )
        s = sigma / math.sqrt(2.0)
        for p, q in self.pairs():
            cross = [m for m in marginals if self.kind(m) == "cross" and self._pair(m) == (p, q)]
            if cross:
                cells = sum(self.sizes[a] * self.sizes[b] for a, b in cross)
                out.append(
                    Release(
                        CROSS_MECHANISM,
                        f"{release}: {len(cross)} cross marginals",
                        ddg_rho(s, 2, len(cross), len(cross), cells),
                        len(cross),
                        f"{self.names[p]}+{self.names[q]}",
                        {"sigma": sigma, "component_sigma": s, "components": 3, "cells": cells},
                    )
                )
        return out

    def _pair(self, m: Marginal) -> tuple[int, int]:
        return self.owner[m[0]], self.owner[m[1]]

    def check_request(self, marginals: list[Marginal]) -> list[Marginal]:
        """Validate the server's re-measurement request: measurable, distinct, non-empty."""
        if not marginals:
            raise MessageError("the server's request lists no marginals to measure.")
        d = len(self.sizes)
        out = []
        for m in marginals:
            if not m or any(not (isinstance(a, int) and 0 <= a < d) for a in m):
                raise MessageError(f"the request holds an invalid marginal {m!r}.")
            if len(set(m)) != len(m):
                raise MessageError(f"the request holds a marginal with repeats {m!r}.")
            out.append(self.canonical(m))
        if len(set(out)) != len(out):
            raise MessageError("the request lists a marginal twice.")
        return out
