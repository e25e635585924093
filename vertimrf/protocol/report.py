"""The protocol report: every release of every party, the true total, and what the server did.

For a DP method (FO) the total (epsilon, delta) is the ledger's, a true upper bound. The FM
path is NOT differentially private (``docs/fm-privacy-gap.md``): its report says so, claims no
total, and prints a worst-case lower bound on delta at the requested epsilon
(:func:`fm_worst_case`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from vertimrf.privacy.fm import fm_noise
from vertimrf.privacy.fm_gap import fm_delta_lower_bound
from vertimrf.privacy.ledger import PrivacyLedger, Release
from vertimrf.privacy.zcdp import round_up
from vertimrf.protocol.budget import ProtocolBudget
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.methods import fm_options
from vertimrf.protocol.secure.cross_noise import COIN_MECHANISM, CROSS_MECHANISM

SEEDED_NOTE = "seeded run: reproducible noise, not for release (a seed is for experiments only)"
COLLUSION_NOTE = (
    "the guarantee holds only if the server colludes with no party: the server deals every "
    "mask, so the server together with any party recovers the tables masked for that party "
    "exactly; under collusion there is no guarantee"
)

DEALER_FREE_NOTE = (
    "no role deals a mask (a dealer-free product): the server together with one party P "
    "faces the noise the two do not know, as listed ('server+P'); a coalition of more roles "
    "is not covered"
)


@dataclass(frozen=True)
class FMBound:
    """Worst-case lower bounds on delta of an FM run at its requested epsilon.

    ``delta_two``: a record that is the only holder of its values in two columns;
    ``delta_all``: in all ``columns`` columns. Parameters as in the config's sketches.
    """

    epsilon: float
    t: int
    eps_prime: float
    k_p: int
    alpha_min: int
    gamma: float
    columns: int
    delta_two: float
    delta_all: float


def fm_worst_case(config: ProtocolConfig) -> FMBound:
    """The FM lower bounds on delta for ``config`` (see :mod:`vertimrf.privacy.fm_gap`)."""
    eps_prime = ProtocolBudget.from_config(config).eps_prime
    options = fm_options(config, "the FM bounds are a setting")
    noise = fm_noise(eps_prime, options.gamma)
    d = len(config.spec)

    def bound(c: int) -> float:
        return fm_delta_lower_bound(
            options.t, eps_prime, noise.k_p, noise.alpha_min, options.gamma, c, config.epsilon
        )

    return FMBound(
        config.epsilon,
        options.t,
        eps_prime,
        noise.k_p,
        noise.alpha_min,
        options.gamma,
        d,
        bound(2),
        bound(d),
    )


@dataclass(frozen=True)
class ProtocolReport:
    """What a vertical run released and built; ``str()`` gives a readable summary."""

    epsilon: float
    delta: float
    method: str
    ledger: PrivacyLedger
    fm_bound: FMBound | None
    seeded_roles: tuple[str, ...]
    n_hat: int
    model: str
    cross_edges: tuple[tuple[str, str], ...]
    cross_measured: tuple[tuple[str, ...], ...]
    n_local_measurements: int
    iterations: tuple[int, ...]
    seconds: dict[str, float] = field(default_factory=dict)
    message_bytes: dict[str, int] = field(default_factory=dict)
    viewers: dict[str, float] = field(default_factory=dict)
    binned: tuple[tuple[str, ...], ...] = ()
    # partial record sets: the noisy region counts as released, by region ("A+B": the
    # records held by exactly A and B), and the scale of each of their two noises
    regions: dict[str, int] = field(default_factory=dict)
    region_sigma: float | None = None
    # each fit again from the same releases with a smaller model, in words (post-processing)
    refits: tuple[str, ...] = ()

    @property
    def seeded(self) -> bool:
        """True when any role's noise came from a seed (reproducible, not for release)."""
        return bool(self.seeded_roles)

    @property
    def dp_guarantee(self) -> bool:
        """True when the run is differentially private: not FM, and no role seeded."""
        return self.fm_bound is None and self.ledger.dp_guarantee and not self.seeded

    @property
    def total_epsilon(self) -> float | None:
        """The ledger's total epsilon at the requested delta (a true upper bound), or None
        when the run is not differentially private."""
        return self.ledger.total_epsilon(self.delta) if self.dp_guarantee else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "dp_guarantee": self.dp_guarantee,
            "seeded": self.seeded,
            "seeded_roles": list(self.seeded_roles),
            "fm_delta_lower_bound": None if self.fm_bound is None else asdict(self.fm_bound),
            "total_epsilon": self.total_epsilon,
            "total_rho": self.ledger.total_rho,
            "method": self.method,
            "n_hat": self.n_hat,
            "model": self.model,
            "cross_edges": [list(e) for e in self.cross_edges],
            "cross_measured": [list(e) for e in self.cross_measured],
            "n_local_measurements": self.n_local_measurements,
            "iterations": list(self.iterations),
            "binned": [list(m) for m in self.binned],
            "regions": dict(self.regions),
            "region_sigma": self.region_sigma,
            "refits": list(self.refits),
            "seconds": dict(self.seconds),
            "message_bytes": dict(self.message_bytes),
            "viewers": {
                v: {"rho": rho, "epsilon": self._viewer_epsilon(rho)}
                for v, rho in self.viewers.items()
            },
            "releases": self.ledger.to_records(),
        }

    def _privacy_lines(self) -> list[str]:
        run = f"VertiMRF-{self.method.upper()} run"
        spent = self.total_epsilon
        if spent is not None:
            lines = [
                f"{run}: differentially private; budget (epsilon, delta) = "
                f"({self.epsilon:.4g}, {round_up(self.delta, 2)}); spent epsilon = "
                f"{round_up(spent)}"
            ]
            return lines + self._viewer_lines()
        lines = []
        if self.fm_bound is not None or not self.ledger.dp_guarantee:
            lines.append(
                f"{run}: NOT differentially private. The paper's FM sketches share each "
                "record's hash value across its attributes' registers, so the claimed "
                f"(epsilon, delta) = ({self.epsilon:.4g}, {round_up(self.delta, 2)}) does not "
                "hold."
            )
            b = self.fm_bound
            if b is not None:
                lines.append(
                    f"Worst case at epsilon = {b.epsilon:g}: delta >= {b.delta_two:.2g} for a "
                    f"record that is the only holder of its values in 2 columns, >= "
                    f"{b.delta_all:.2g} in all {b.columns} (t = {b.t}, "
                    f"eps' = {b.eps_prime:.4g}, k_p = {b.k_p}, alpha_min = {b.alpha_min})."
                )
        if self.seeded:
            lines.append(
                f"{run}: NO privacy guarantee. {SEEDED_NOTE}; the noise of "
                f"{', '.join(self.seeded_roles)} came from a seed, so anyone who knows it can "
                "subtract it."
            )
        return lines

    def _viewer_epsilon(self, rho: float) -> float | None:
        return self.ledger.epsilon_at(rho, self.delta) if self.dp_guarantee and rho > 0 else None

    def _viewer_lines(self) -> list[str]:
        """The guarantee against each viewer (the server, each party) on its own, and with a
        dealer-free product against the server with each party; for the secure method, which
        collusion it does not cover."""
        if not self.viewers:
            return [
                "every viewer (the server and each party) faces every release's full noise, "
                "so the total holds against each"
            ]
        return [
            "guarantee per viewer (the noise it does not know; epsilon at this delta): "
            + "; ".join(
                f"{v} {_printed(self._viewer_epsilon(r))}" for v, r in self.viewers.items()
            ),
            *cross_noise_lines(self.ledger.releases),
            DEALER_FREE_NOTE if any("+" in v for v in self.viewers) else COLLUSION_NOTE,
        ]

    def total_line(self) -> str:
        """The report's first line: the ledger's total (epsilon at this delta, rho, number
        of releases), or why no total holds."""
        why = None
        if self.fm_bound is not None or not self.ledger.dp_guarantee:
            why = "NOT differentially private (FM sketches)"
        elif self.seeded:
            why = f"seeded run (the noise of {', '.join(self.seeded_roles)} came from a seed)"
        return self.ledger.total_line(self.delta, no_total=why)

    def __str__(self) -> str:
        lines = [
            self.total_line(),
            *self._privacy_lines(),
            f"noisy record count n_hat = {self.n_hat}; model: {self.model}",
            f"cross-party edges added: {len(self.cross_edges)}; cross marginals fitted: "
            f"{len(self.cross_measured)}; local marginals: {self.n_local_measurements}",
        ]
        if self.regions:
            counts = "; ".join(f"{t} {c}" for t, c in self.regions.items())
            lines.append(
                "record sets: partial. Noisy region counts as released (the records held by "
                "exactly these parties; the server saw each with the dummies' discrete Gaussian "
                f"noise of sigma {self.region_sigma:.4g} and added its own of the same scale): "
                f"{counts}"
            )
        if self.binned:
            shown = ", ".join("x".join(m) for m in self.binned[:8])
            more = ", ..." if len(self.binned) > 8 else ""
            lines.append(
                f"measured on bins (fitted as bin sums): {len(self.binned)} marginals "
                f"({shown}{more})"
            )
        lines += [f"refit: {refit}" for refit in self.refits]
        if self.seconds:
            lines.append("seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in self.seconds.items()))
        if self.message_bytes:
            lines.append(
                "message bytes: " + ", ".join(f"{k} {v:,}" for k, v in self.message_bytes.items())
            )
        ledger = self.ledger.report(self.delta, no_total=SEEDED_NOTE if self.seeded else None)
        return "\n".join(lines) + "\n\n" + ledger


def cross_noise_lines(releases: Sequence[Release]) -> list[str]:
    """What each viewer faces of a cross count, by the cross entries' mechanism (none
    without cross entries)."""
    mechanisms = {r.mechanism: r for r in releases}
    out = []
    if CROSS_MECHANISM in mechanisms:
        out.append(
            "cross counts (split): three discrete Gaussians of sigma^2 / 2, one from each "
            "party of the pair and one from the server; each of the three faces sigma^2 (the "
            "two it did not draw), any other party 1.5 sigma^2, and the count carries 1.5 "
            "sigma^2"
        )
    if COIN_MECHANISM in mechanisms:
        w = float(mechanisms[COIN_MECHANISM].params["weight"])
        out.append(
            f"cross counts (coins, w = {w:g}): coins XOR-shared by the pair, which no viewer "
            f"knows, carry {w:g} sigma^2 and three split components the rest; every viewer "
            f"faces sigma^2 or more, and the count carries {1.5 - w / 2:g} sigma^2"
        )
    return out


def _printed(epsilon: float | None) -> str:
    """A viewer's epsilon as printed: rounded up, 0 for a viewer charged nothing."""
    return "0" if epsilon is None else round_up(epsilon)
