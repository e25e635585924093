"""What each method means to the protocol, in one place per method: its cross-party release
(the budget's list of releases, the sketch epsilon'), and what a local message of it holds.

:func:`rules` gives the :class:`MethodRules` of a config, from the type of its options; the
party's and the server's per-method code is in :mod:`vertimrf.party.methods` and
:mod:`vertimrf.server.methods`. Importing this module imports no Numba code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from vertimrf.errors import MessageError
from vertimrf.privacy.calibration import sketch_epsilon
from vertimrf.privacy.fm import fm_noise
from vertimrf.privacy.ledger import Release
from vertimrf.privacy.zcdp import pure_to_rho
from vertimrf.protocol.options import (
    FMOptions,
    FOOptions,
    SecureOptions,
    SecurePaperOptions,
)

if TYPE_CHECKING:
    from vertimrf.domain import Domain
    from vertimrf.protocol.budget import ProtocolBudget
    from vertimrf.protocol.config import ProtocolConfig
    from vertimrf.protocol.message import PartyMessage

FM_MECHANISM = "fm_sketch"
GRR_MECHANISM = "grr"
# The keyed hash named in a message of a method without sketches (FO's row order uses it).
DEFAULT_HASH = "siphash24"


def pure_release(
    mechanism: str, epsilon: float, count: int, party: str, what: str, **params: object
) -> Release:
    """``count`` releases of a pure ``epsilon``-DP mechanism, as one ledger entry."""
    params = {"epsilon": epsilon, **params}
    return Release(mechanism, what, count * pure_to_rho(epsilon), count, party, params)


class MethodRules:
    """A method's protocol rules; the base is a method whose local message holds no cross
    release (the secure ones: their cross release is the secure product's)."""

    name: ClassVar[str]

    def eps_prime(
        self, config: ProtocolConfig, t: int | None, locenc: float, epsilon: float, rho_enc: float
    ) -> float:
        """The sketch epsilon' of ``t`` repetitions (0 for a method without sketches)."""
        return 0.0

    def cross_releases(
        self, config: ProtocolConfig, budget: ProtocolBudget, party: str, d: int
    ) -> list[Release]:
        """The cross-party release ``party`` (``d`` columns) charges with its message."""
        return []

    def message_hash(self, config: ProtocolConfig) -> str:
        """The hash name a message of this method carries."""
        return DEFAULT_HASH

    def sketch_rows(self, config: ProtocolConfig) -> int:
        """The number of sketch rows a message may hold."""
        return 0

    def payload_words(self, config: ProtocolConfig, d_p: int, rows: int | None) -> int:
        """Words of a party's cross release with ``d_p`` columns (for the memory plan)."""
        return 0

    def check_message(
        self, message: PartyMessage, config: ProtocolConfig, where: str, bin_domain: Domain
    ) -> None:
        """Raise MessageError unless the message's cross release is this method's."""
        if message.grr is not None or message.sketch is not None:
            raise MessageError(
                f"{where}: a secure run's local message holds no GRR rows or sketches (its "
                "cross-party release is the secure product's)."
            )


class SecureRules(MethodRules):
    """Method "secure", the paper pipeline: local messages without a cross release."""

    name = "secure"


class SecureSelectRules(SecureRules):
    """Method "secure", the select pipeline: no local messages at all."""

    def check_message(
        self, message: PartyMessage, config: ProtocolConfig, where: str, bin_domain: Domain
    ) -> None:
        raise MessageError(
            f"{where}: the secure select pipeline has no local messages (its parties send "
            "secure releases)."
        )


class FORules(MethodRules):
    """Method "fo": GRR rows of the binned columns, one row per noisy-count record."""

    name = "fo"

    def cross_releases(
        self, config: ProtocolConfig, budget: ProtocolBudget, party: str, d: int
    ) -> list[Release]:
        return [
            pure_release(
                GRR_MECHANISM,
                budget.grr_epsilon,
                d,
                party,
                f"GRR of {d} attributes (eps-LDP per report; row count public)",
            )
        ]

    def payload_words(self, config: ProtocolConfig, d_p: int, rows: int | None) -> int:
        return d_p * (rows or 0)

    def check_message(
        self, message: PartyMessage, config: ProtocolConfig, where: str, bin_domain: Domain
    ) -> None:
        grr = message.grr
        if grr is None or grr.ndim != 2 or grr.shape[1] != len(message.columns):
            raise MessageError(f"{where} has no GRR rows of shape (N, {len(message.columns)}).")
        if ((grr < 0) | (grr >= np.asarray(bin_domain.sizes))).any():
            raise MessageError(f"{where}, mechanism 'grr': GRR codes outside the binned domain.")


class FMRules(MethodRules):
    """Method "fm": the paper's FM sketches, t per attribute (NOT DP)."""

    name = "fm"

    def eps_prime(
        self, config: ProtocolConfig, t: int | None, locenc: float, epsilon: float, rho_enc: float
    ) -> float:
        options = config.options
        assert isinstance(options, FMOptions)
        t = options.t if t is None else t
        d = len(config.spec)
        if options.accounting == "theorem2":
            # The paper's Theorem 2 on an (epsilon, delta) share of the same fraction.
            return sketch_epsilon(
                t, d, epsilon=locenc * epsilon, delta=config.delta, accounting="theorem2"
            )
        return sketch_epsilon(t, d, rho=rho_enc)

    def cross_releases(
        self, config: ProtocolConfig, budget: ProtocolBudget, party: str, d: int
    ) -> list[Release]:
        options = config.options
        assert isinstance(options, FMOptions)
        noise = fm_noise(budget.eps_prime, options.gamma)
        return [
            pure_release(
                FM_MECHANISM,
                budget.eps_prime,
                options.t * d,
                party,
                f"FM sketches of {d} attributes x {options.t} keys (NOT DP: shared randomness)",
                gamma=options.gamma,
                k_p=noise.k_p,
                alpha_min=noise.alpha_min,
            )
        ]

    def message_hash(self, config: ProtocolConfig) -> str:
        assert isinstance(config.options, FMOptions)
        return config.options.hash

    def sketch_rows(self, config: ProtocolConfig) -> int:
        assert isinstance(config.options, FMOptions)
        return config.options.t

    def payload_words(self, config: ProtocolConfig, d_p: int, rows: int | None) -> int:
        return d_p * self.sketch_rows(config)

    def check_message(
        self, message: PartyMessage, config: ProtocolConfig, where: str, bin_domain: Domain
    ) -> None:
        if message.sketch is None or message.key_fingerprint is None:
            raise MessageError(f"{where} has no FM sketches or no key fingerprint.")
        if message.sketch.domain != bin_domain:
            raise MessageError(
                f"{where}: sketch domain {message.sketch.domain.sizes} does not match the "
                f"binned domain {bin_domain.sizes}."
            )
        t = self.sketch_rows(config)
        if message.sketch.t != t:
            raise MessageError(f"{where} has {message.sketch.t} sketch rows, config t={t}.")


RULES: dict[type, MethodRules] = {
    SecureOptions: SecureSelectRules(),
    SecurePaperOptions: SecureRules(),
    FOOptions: FORules(),
    FMOptions: FMRules(),
}


def rules(config: ProtocolConfig) -> MethodRules:
    """The protocol rules of ``config``'s method."""
    return RULES[type(config.options)]
