"""cross_noise "auto" (the default): coins where the plan proves them cheap, from public values.

Coins cost about 4 w sigma^2 ring words a cross cell each way, whatever the rows; the product
costs a ring word per row and feature value. So coins pay where the rows are many and sigma
small. The rule reads the plan alone (max_rows, the widths and caps, the releases' sigma and
cells; nothing of the data): coins when, for every party, its coin blobs (the first
release's, exact, and the re-measurement's bound for any request) are at most
:data:`COIN_SHARE` of its first release's masked feature blobs (max_rows x its width to each
peer, sent whatever the request). A party's bytes with coins are then at most
1 + COIN_SHARE times split's. The first release alone does not decide it: measured on
1M x 15 x 3 at epsilon 3.2, its coins add 2.9% and a run's 46%
(``benchmarks/results/coins_cost_rule.md``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from vertimrf.errors import PrivacyBudgetError
from vertimrf.protocol.secure.features import coin_blob_bytes
from vertimrf.protocol.secure.plan import SecurePlan

COIN_SHARE = 0.3  # the most of a party's feature bytes a run's coins may add (issue 63: 1.3x)


def coin_share(plan: SecurePlan) -> dict[str, float]:
    """Each party's bound on a run's coin bytes over its masked feature bytes (``plan`` with
    coins)."""
    out = {}
    for p, name in enumerate(plan.names):
        peers = [q for q in plan.names if q != name]
        blobs = len(peers) * plan.word_bytes * plan.rows * plan.widths[p]
        coins = sum(coin_blob_bytes(plan, name, q, first=True) for q in peers)
        if plan.select and plan.rho_measure > 0:  # the re-measurement's, any request
            coins += sum(coin_blob_bytes(plan, name, q, first=False) for q in peers)
        out[name] = coins / max(blobs, 1)
    return out


def choose(coins: SecurePlan, split: Callable[[], SecurePlan]) -> SecurePlan:
    """The plan "auto" runs: ``coins``, or the same config's ``split()`` (made only when
    chosen), with the rule and its values in ``cross_rule``."""
    try:
        share = coin_share(coins)
    except PrivacyBudgetError as e:  # e.g. sigma below the coins' least scale
        return replace(split(), cross_rule=f"cross noise auto: split; coins cannot run here: {e}")
    worst = max(share, key=share.__getitem__)
    picked = coins if coins.first_coins and share[worst] <= COIN_SHARE else split()
    rule = (
        f"cross noise auto: {picked.cross_noise.name}; coins when every party's coin bytes "
        f"(first release, and the re-measurement's bound) are at most {COIN_SHARE:.0%} of its "
        f"feature bytes (from max_rows, the widths and sigma); here up to {share[worst]:.3g}x "
        f"(party {worst!r})"
    )
    return replace(picked, cross_rule=rule)
