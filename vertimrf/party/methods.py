"""A party's per-method cross-party release for the paper pipeline, in one place per method:
FO's GRR rows, FM's sketches (NOT DP), or none (the secure paper pipeline, whose cross
release is the secure product's). :func:`party_method` gives the strategy of a config."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, TypedDict

import numpy as np

from vertimrf.errors import ConfigError
from vertimrf.party.fo import aligned_rows
from vertimrf.party.grr import grr_perturb
from vertimrf.party.keys import HashKeys
from vertimrf.party.locenc import locenc
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.methods import fm_options, rules, strategy

if TYPE_CHECKING:
    from vertimrf.domain import EncodedTable
    from vertimrf.privacy.ledger import PrivacyLedger
    from vertimrf.privacy.samplers import NoiseSampler
    from vertimrf.protocol.budget import ProtocolBudget
    from vertimrf.protocol.sketchset import SketchSet


@dataclass(frozen=True)
class ReleaseInputs:
    """What a party's cross release reads: its binned table, the record fingerprints, the
    group secret and hash keys, its noise, budget and ledger, and the noisy row count."""

    name: str
    config: ProtocolConfig
    binned: EncodedTable
    fingerprints: np.ndarray
    secret: bytes = field(repr=False)  # the group secret: never printed
    keys: HashKeys | None = field(repr=False)
    noise: NoiseSampler = field(repr=False)
    budget: ProtocolBudget = field(repr=False)
    ledger: PrivacyLedger = field(repr=False)
    n_rows: int = 0


class CrossFields(TypedDict, total=False):
    """The message fields of a cross release: GRR rows and their epsilon, or sketches."""

    grr: np.ndarray
    grr_epsilon: float
    sketch: SketchSet


class PartyMethod:
    """A method's cross release in a party's local message (the base: none)."""

    name: ClassVar[str]
    steps: ClassVar[tuple[str, ...]] = ()

    def keys(self, config: ProtocolConfig, secret: bytes) -> HashKeys | None:
        """The hash keys the release needs (their fingerprint goes into the message)."""
        return None

    def release(self, x: ReleaseInputs) -> CrossFields:
        """The message fields (``grr``, ``sketch``, ...) of the cross release of
        ``x.binned``; each mechanism charges ``x.ledger`` before its noise is drawn."""
        return {}


class SecurePaperParty(PartyMethod):
    """Method "secure", paper pipeline: the cross release is the secure product's."""

    name = "secure"


class FOParty(PartyMethod):
    """Method "fo": GRR rows of the binned columns in the parties' common row order."""

    name = "fo"
    steps = ("LocEnc",)

    def release(self, x: ReleaseInputs) -> CrossFields:
        rows = aligned_rows(
            x.binned,
            x.fingerprints,
            x.secret,
            max(1, x.n_rows),
            x.noise,
            context=x.config.run_context(),
        )
        codes = grr_perturb(
            rows, x.budget.grr_epsilon, noise=x.noise, ledger=x.ledger, party=x.name
        ).codes
        return {"grr": codes, "grr_epsilon": x.budget.grr_epsilon}


class FMParty(PartyMethod):
    """Method "fm": the paper's FM sketches (NOT DP) under keys from the group secret."""

    name = "fm"
    steps = ("LocEnc",)

    def keys(self, config: ProtocolConfig, secret: bytes) -> HashKeys | None:
        options = fm_options(config, "the hash keys are a setting")
        return HashKeys.from_secret(secret, options.t, context=config.run_context())

    def release(self, x: ReleaseInputs) -> CrossFields:
        options = fm_options(x.config, "LocEnc's sketches are a setting")
        assert x.keys is not None
        sketch = locenc(
            x.binned,
            x.fingerprints,
            x.keys,
            eps_prime=x.budget.eps_prime,
            rng=x.noise,
            ledger=x.ledger,
            gamma=options.gamma,
            party=x.name,
            hash=options.hash,
        )
        return {"sketch": sketch}


def party_method(config: ProtocolConfig) -> PartyMethod:
    """The local-message strategy of ``config``'s method."""
    if not rules(config).local_message:
        raise ConfigError(
            "the secure select pipeline has no local message: its parties are SecureParty "
            "objects (or Party, which runs features, secure_release and measure)."
        )
    return strategy(PartyMethod, rules(config).party)()
