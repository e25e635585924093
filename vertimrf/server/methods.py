"""The server's per-method code, in one place per method: what it checks of the received
messages' cross releases, where its binned cross-party estimates come from, and what its
report adds. :func:`server_method` gives the strategy of a config's method."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from vertimrf.errors import ConfigError, MessageError
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.message import PartyMessage
from vertimrf.protocol.methods import fm_options, rules, strategy
from vertimrf.protocol.report import FMBound, fm_worst_case
from vertimrf.server.carest import CarEst
from vertimrf.server.grr import grr_marginal
from vertimrf.synth.privmrf.options import PrivMRFOptions

if TYPE_CHECKING:
    from vertimrf.domain import Domain
    from vertimrf.protocol.budget import ProtocolBudget

# The binned counts of the marginal over the given attribute indices and names.
CrossSourceFn = Callable[[tuple[int, ...], tuple[str, ...]], np.ndarray]


@dataclass(frozen=True)
class ReleaseCheck:
    """One party's checked message, whose cross release :meth:`ServerMethod.verify` checks:
    with the config, the protocol's budget, the number of GRR rows every party sends, and the
    verifier's ``refuse`` (makes the error) and ``close`` (compares a declared number)."""

    config: ProtocolConfig
    message: PartyMessage
    budget: ProtocolBudget
    rows: int
    refuse: Callable[[str, str, str], Exception]
    close: Callable[[object, object], bool]


@dataclass(frozen=True)
class SourceInputs:
    """What a method's binned cross-party counts (:meth:`ServerMethod.source`) read: the
    config, the checked messages, the noisy count, the binned domain, and the secure
    product's tables (the secure paper pipeline; else None)."""

    config: ProtocolConfig
    messages: Sequence[PartyMessage]
    n_hat: float
    bin_domain: Domain
    secure_tables: Mapping[tuple[int, ...], np.ndarray] | None


class ServerMethod:
    """A method's server side (the base: the secure paper pipeline, whose local messages
    hold no cross release and whose estimates are the secure product's tables)."""

    name: ClassVar[str]
    needs_secure_releases: ClassVar[bool] = False

    def check_received(self, ordered: Sequence[PartyMessage]) -> None:
        """Checks across the messages (beyond each message's own)."""

    def verify(self, check: ReleaseCheck) -> None:
        """Check the message's cross release against the config-derived mechanism
        (``check.refuse`` makes the error, ``check.close`` compares a declared number)."""

    def source(self, inputs: SourceInputs) -> CrossSourceFn:
        """Binned cross-party counts: here the secure product's tables."""
        if inputs.secure_tables is None:
            raise MessageError("method='secure' estimates need the secure product's tables.")
        tables = dict(inputs.secure_tables)

        def table(key: tuple[int, ...], names: tuple[str, ...]) -> np.ndarray:
            if key in tables:
                return tables[key]
            if key[::-1] in tables:
                return tables[key[::-1]].T
            raise MessageError(f"the secure release measured no cross-party pair {key}.")

        return table

    def fm_bound(self, config: ProtocolConfig) -> FMBound | None:
        """The FM lower bounds on delta (the one non-DP method), else None."""
        return None

    def search_options(self, config: ProtocolConfig) -> PrivMRFOptions:
        """The secure server's model-search settings: here PrivMRF's defaults (the paper
        pipeline's secure server selects nothing)."""
        return PrivMRFOptions()


class SecurePaperServer(ServerMethod):
    """Method "secure", the paper pipeline."""

    name = "secure"
    needs_secure_releases = True


class FOServer(ServerMethod):
    """Method "fo": GRR rows, inverted per marginal."""

    name = "fo"

    def verify(self, check: ReleaseCheck) -> None:
        message, epsilon, rows = check.message, check.budget.grr_epsilon, check.rows
        if not check.close(message.grr_epsilon, epsilon):
            raise check.refuse(
                message.party,
                "grr",
                f"GRR epsilon {message.grr_epsilon!r}, the config gives {epsilon!r}",
            )
        grr = message.grr
        assert grr is not None  # PartyMessage.check
        sizes = np.asarray(message.bin_domain(check.config).sizes)
        if not np.issubdtype(grr.dtype, np.integer) or grr.shape != (rows, len(sizes)):
            raise check.refuse(
                message.party,
                "grr",
                f"needs {rows} integer rows of {len(sizes)} codes; got {grr.dtype} {grr.shape}",
            )

    def source(self, inputs: SourceInputs) -> CrossSourceFn:
        messages, bin_domain = inputs.messages, inputs.bin_domain
        counts = {m.grr.shape[0] for m in messages if m.grr is not None}
        if len(counts) != 1:
            raise MessageError(
                f"parties sent different numbers of GRR rows {sorted(counts)}; all must use "
                "the count party's noisy count."
            )
        rows = np.concatenate([m.grr for m in messages if m.grr is not None], axis=1)
        epsilon = float(messages[0].grr_epsilon or 0.0)

        def table(key: tuple[int, ...], names: tuple[str, ...]) -> np.ndarray:
            idx = [bin_domain.index(a) for a in names]
            return grr_marginal(rows, bin_domain, epsilon, idx)

        return table


class FMServer(ServerMethod):
    """Method "fm": the paper's FM sketches, estimated by CarEst (NOT DP)."""

    name = "fm"

    def check_received(self, ordered: Sequence[PartyMessage]) -> None:
        if len({m.key_fingerprint for m in ordered}) != 1:
            raise MessageError(
                "the parties' hash-key fingerprints differ: they did not derive their keys from "
                "the same shared secret and t. Re-run every party with the same secret."
            )

    def verify(self, check: ReleaseCheck) -> None:
        from vertimrf.protocol.methods import FM_MECHANISM, expected_releases

        message = check.message
        releases = expected_releases(check.config, message.party)
        (want,) = [r for r in releases if r.mechanism == FM_MECHANISM]
        assert message.sketch is not None  # PartyMessage.check
        noise = message.sketch.noise
        got = {
            "epsilon": noise.eps_prime,
            "gamma": noise.gamma,
            "k_p": noise.k_p,
            "alpha_min": noise.alpha_min,
        }
        for key, value in got.items():
            if not check.close(value, want.params[key]):
                raise check.refuse(
                    message.party,
                    FM_MECHANISM,
                    f"sketch {key} is {value!r}, the config gives {want.params[key]!r}",
                )
        values = message.sketch.values  # uint8, by SketchSet's own check
        if values.size and int(values.min()) < noise.alpha_min:
            raise check.refuse(message.party, FM_MECHANISM, "sketch values must be >= alpha_min")

    def source(self, inputs: SourceInputs) -> CrossSourceFn:
        options = fm_options(inputs.config, "CarEst reads the sketches")
        sketches = [m.sketch for m in inputs.messages if m.sketch is not None]
        carest = CarEst(sketches, inputs.n_hat, method=options.carest)

        def table(key: tuple[int, ...], names: tuple[str, ...]) -> np.ndarray:
            return carest.marginal(names)

        return table

    def fm_bound(self, config: ProtocolConfig) -> FMBound | None:
        return fm_worst_case(config)


class SecureSelectServer(ServerMethod):
    """Method "secure", the select pipeline: no local messages (its server is a
    :class:`~vertimrf.server.secure.SecureServer`); its model search has the options' caps."""

    name = "secure"

    def search_options(self, config: ProtocolConfig) -> PrivMRFOptions:
        options = config.secure_options()
        return PrivMRFOptions(
            max_clique_cells=options.max_clique_cells,
            max_total_cells=options.max_total_cells,
        )


def server_strategy(config: ProtocolConfig) -> ServerMethod:
    """The server strategy of ``config``'s method."""
    return strategy(ServerMethod, rules(config).server)()


def server_method(config: ProtocolConfig) -> ServerMethod:
    """The server strategy of ``config``'s method, which must have local messages (the
    secure select pipeline's server is :class:`vertimrf.server.secure.SecureServer`)."""
    if not rules(config).local_message:
        raise ConfigError(
            "the secure select pipeline has no local messages: its server is a SecureServer."
        )
    return server_strategy(config)
