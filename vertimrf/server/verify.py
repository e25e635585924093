"""The server's verification of party messages: it re-derives, never
trusts; design notes in docs/design/server.md."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from vertimrf.errors import MessageError
from vertimrf.privacy.ledger import Release
from vertimrf.privacy.zcdp import gaussian_rho
from vertimrf.protocol.bins import frequency_bins
from vertimrf.protocol.budget import ProtocolBudget
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.message import PartyMessage
from vertimrf.protocol.methods import BINNING_MECHANISM, COUNT_MECHANISM, expected_releases
from vertimrf.server.methods import ReleaseCheck, server_method
from vertimrf.synth.privmrf import budget_split as privmrf_budget

_REL = 1e-12
# The local PrivMRF's discrete Gaussian releases and their L2 sensitivity. A release with a
# "scale" s (a real query released as round(s q) + noise) has sensitivity ceil(s Delta).
LOCAL_MECHANISMS = {
    "privmrf.r_scores": privmrf_budget.R_SCORE_SENSITIVITY,
    "privmrf.marginals": privmrf_budget.MARGINAL_SENSITIVITY,
    "privmrf.error_queries": privmrf_budget.ERROR_QUERY_SENSITIVITY,
}
LOCAL_SAMPLER = "discrete_gaussian"


def _close(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=_REL, abs_tol=0.0)
    return a == b


def _refuse(party: str, mechanism: str, what: str) -> MessageError:
    return MessageError(
        f"message of party {party!r}, mechanism {mechanism!r}: {what}; the message was not made "
        "under this config or was altered, so it is refused."
    )


def verify_releases(config: ProtocolConfig, message: PartyMessage) -> list[Release]:
    """Check the declared releases against the config; return the releases to charge.

    Releases outside the local PrivMRF must equal the config-derived ones exactly. The local
    PrivMRF's releases are data-dependent in number: each must be one of its Gaussian
    mechanisms, and their costs, recomputed here from (sensitivity, sigma, count), must add
    up to the party's PrivMRF share.
    """
    party = message.party
    local = [r for r in message.releases if r.mechanism in LOCAL_MECHANISMS]
    declared = [r for r in message.releases if r.mechanism not in LOCAL_MECHANISMS]
    expected = expected_releases(config, party)
    if [r.mechanism for r in declared] != [r.mechanism for r in expected]:
        raise _refuse(
            party,
            "releases",
            f"declares {[r.mechanism for r in declared]} where the config gives "
            f"{[r.mechanism for r in expected]}",
        )
    for got, want in zip(declared, expected, strict=True):
        _same_release(party, got, want)
    return expected + _local_releases(config, party, local)


def _same_release(party: str, got: Release, want: Release) -> None:
    fields: dict[str, tuple[object, object]] = {
        "count": (got.count, want.count),
        "party": (got.party, want.party),
    }
    if set(got.params) != set(want.params):
        fields["parameter names"] = (sorted(got.params), sorted(want.params))
    else:
        fields.update({k: (got.params[k], want.params[k]) for k in want.params})
    fields["rho"] = (got.rho, want.rho)
    for name, (a, b) in fields.items():
        if not _close(a, b):
            raise _refuse(party, want.mechanism, f"declared {name} {a!r}, the config gives {b!r}")


def _local_releases(config: ProtocolConfig, party: str, local: list[Release]) -> list[Release]:
    if not config.paper_options().local_mrf:
        if local:
            raise _refuse(party, local[0].mechanism, "local model releases with local_mrf off")
        return []
    out = []
    for r in local:
        scale = r.params.get("scale", 1)
        if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
            raise _refuse(party, r.mechanism, f"declared scale {scale!r}, not a positive integer")
        sensitivity = math.ceil(scale * LOCAL_MECHANISMS[r.mechanism])
        sigma = r.params.get("sigma")
        if not (
            isinstance(sigma, int | float)
            and not isinstance(sigma, bool)
            and math.isfinite(sigma)
            and sigma > 0
            and isinstance(r.count, int)
            and r.count >= 1
            and _close(r.params.get("sensitivity"), sensitivity)
            and r.params.get("sampler") == LOCAL_SAMPLER
            and r.party == party
        ):
            raise _refuse(
                party,
                r.mechanism,
                f"needs sensitivity {sensitivity}, sampler {LOCAL_SAMPLER!r}, a positive sigma and "
                f"count; declared {r.params} x {r.count}",
            )
        rho = r.count * gaussian_rho(sensitivity, sigma)
        if not _close(rho, r.rho):
            raise _refuse(party, r.mechanism, f"declared rho {r.rho!r}, its sigma gives {rho!r}")
        out.append(Release(r.mechanism, r.description, rho, r.count, party, dict(r.params)))
    spent = math.fsum(r.rho for r in out)
    share = ProtocolBudget.from_config(config).rho_locmrf_party
    if not math.isclose(spent, share, rel_tol=1e-9, abs_tol=0.0):
        raise _refuse(
            party, "privmrf", f"the local model spent rho {spent!r}, its share is {share!r}"
        )
    return out


def verify_arrays(config: ProtocolConfig, message: PartyMessage, rows: int) -> None:
    """Check the message's arrays against the config-derived mechanisms.

    ``rows`` is the number of GRR rows every party must release: max(1, the count party's
    noisy count).
    """
    party = message.party
    if message.noisy_count is not None and (
        isinstance(message.noisy_count, bool) or not isinstance(message.noisy_count, int)
    ):
        raise _refuse(party, COUNT_MECHANISM, "the noisy count must be an integer")
    for name, m in message.bins.items():
        counts, value_to_bin = m.noisy_counts, m.value_to_bin
        # PartyMessage.check has already matched the shapes to the domain.
        if not np.issubdtype(counts.dtype, np.integer):
            raise _refuse(
                party, BINNING_MECHANISM, f"the histogram of {name!r} must hold integer counts"
            )
        if not np.array_equal(value_to_bin, frequency_bins(counts, config.paper_options().bins)):
            raise _refuse(
                party,
                BINNING_MECHANISM,
                f"the bin map of {name!r} is not the one its released counts give",
            )
    budget = ProtocolBudget.from_config(config)
    server_method(config).verify(ReleaseCheck(config, message, budget, rows, _refuse, _close))


def release_rows(messages: Sequence[PartyMessage], count_party: str) -> int:
    """The number of GRR rows every party releases: max(1, the count party's noisy count)."""
    (count,) = [m.noisy_count for m in messages if m.party == count_party]
    if count is None:
        raise MessageError(f"the count party {count_party!r}'s message holds no noisy count.")
    return max(1, int(count))
