"""How a party's shares are made, by the config's ``product``: with a dealt product (the
secure method's own steps, :mod:`~vertimrf.party.secure.shares`), or with the dealer-free
one's (:mod:`~vertimrf.party.secure.paillier`), whose replies the release reads too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np

from vertimrf.party.secure import coins as dealt_coins
from vertimrf.party.secure import paillier, paillier_coins
from vertimrf.party.secure import shares as dealt
from vertimrf.party.secure.session import Blob, PartySession
from vertimrf.party.secure.step_data import StepData
from vertimrf.protocol.secure.marginals import Request
from vertimrf.protocol.secure.plan import Layout

Blobs = Mapping[str, Blob]


class ProductShares(Protocol):
    """A backend's shares of each pair: round 1, the pairs that grow in round 2, and each
    release's coins (cross_noise "coins")."""

    def shares(
        self, session: PartySession, data: StepData, blobs: Blobs, replies: Blobs | None
    ) -> dict[str, np.ndarray]: ...

    def grow(
        self, session: PartySession, data: StepData, shares: Mapping[str, np.ndarray],
        layout: Layout, request: Request, blobs: Blobs | None, group_blobs: Blobs | None,
        replies: Blobs | None,
    ) -> dict[str, np.ndarray]: ...  # fmt: skip

    def coins(
        self, session: PartySession, data: StepData, release: str, request: Request,
        coins: Blobs, replies: Blobs | None,
    ) -> dict[str, np.ndarray]: ...  # fmt: skip


class DealtShares:
    """A dealt product's: from the peers' masked features and the deal (the replies: none)."""

    def shares(
        self, session: PartySession, data: StepData, blobs: Blobs, replies: Blobs | None
    ) -> dict[str, np.ndarray]:
        return dealt.shares(session, data, blobs)

    def grow(
        self, session: PartySession, data: StepData, shares: Mapping[str, np.ndarray],
        layout: Layout, request: Request, blobs: Blobs | None, group_blobs: Blobs | None,
        replies: Blobs | None,
    ) -> dict[str, np.ndarray]:  # fmt: skip
        return dealt.grow(session, data, shares, layout, request, blobs, group_blobs)

    def coins(
        self, session: PartySession, data: StepData, release: str, request: Request,
        coins: Blobs, replies: Blobs | None,
    ) -> dict[str, np.ndarray]:  # fmt: skip
        return dealt_coins.coin_shares(session, data, release, request, coins)


class PaillierShares:
    """The dealer-free product's: from the pair's blobs and the aggregator's replies."""

    def shares(
        self, session: PartySession, data: StepData, blobs: Blobs, replies: Blobs | None
    ) -> dict[str, np.ndarray]:
        return paillier.shares(session, data, blobs, replies or {})

    def grow(
        self, session: PartySession, data: StepData, shares: Mapping[str, np.ndarray],
        layout: Layout, request: Request, blobs: Blobs | None, group_blobs: Blobs | None,
        replies: Blobs | None,
    ) -> dict[str, np.ndarray]:  # fmt: skip
        return paillier.grow(session, data, shares, layout, blobs, group_blobs, replies)

    def coins(
        self, session: PartySession, data: StepData, release: str, request: Request,
        coins: Blobs, replies: Blobs | None,
    ) -> dict[str, np.ndarray]:  # fmt: skip
        return paillier_coins.coin_shares(session, data, release, request, coins, replies)


# By the config's product: a backend not named here has a dealt product.
SHARES: dict[str, ProductShares] = {"paillier": PaillierShares()}


def product_shares(session: PartySession) -> ProductShares:
    """How ``session``'s run makes its shares."""
    return SHARES.get(session.config.product, DealtShares())
