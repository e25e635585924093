"""A party's steps that depend on the config's ``product``: with a dealt product (the
secure method's own, :mod:`~vertimrf.party.secure.features`,
:mod:`~vertimrf.party.secure.shares` and :mod:`~vertimrf.party.secure.coins`), or with the
dealer-free one (:mod:`~vertimrf.party.secure.paillier` and
:mod:`~vertimrf.party.secure.paillier_coins`), whose replies the releases read too."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from vertimrf.party.secure import coins as dealt_coins
from vertimrf.party.secure import features as dealt_features
from vertimrf.party.secure import paillier, paillier_coins
from vertimrf.party.secure import shares as dealt
from vertimrf.party.secure.features import SealedBlobs
from vertimrf.party.secure.session import Blob, PartySession
from vertimrf.party.secure.step_data import StepData
from vertimrf.protocol.secure.marginals import Marginal, Request
from vertimrf.protocol.secure.plan import Layout

Blobs = Mapping[str, Blob]


class ProductSteps(Protocol):
    """A backend's blobs of both rounds and of the coins, and its shares: of each pair in
    round 1, of the pairs that grow in round 2, and of each release's coins."""

    def features(
        self, session: PartySession, data: StepData, deal: bytes, slot_map: Any
    ) -> SealedBlobs: ...

    def groups(
        self, session: PartySession, data: StepData, group_deal: bytes,
        request: Request | Sequence[Marginal],
    ) -> SealedBlobs: ...  # fmt: skip

    def coin_blobs(self, session: PartySession, data: StepData, release: str) -> SealedBlobs: ...

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


class DealtSteps:
    """A dealt product's: masked features, and shares from them and the deal (the replies:
    none)."""

    features = staticmethod(dealt_features.features)
    groups = staticmethod(dealt_features.groups)
    coin_blobs = staticmethod(dealt_coins.coin_blobs)

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


class PaillierSteps:
    """The dealer-free product's: ciphertexts, and shares from the aggregator's replies."""

    features = staticmethod(paillier.features)
    groups = staticmethod(paillier.groups)
    coin_blobs = staticmethod(paillier_coins.coin_blobs)
    shares = staticmethod(paillier.shares)
    coins = staticmethod(paillier_coins.coin_shares)

    def grow(
        self, session: PartySession, data: StepData, shares: Mapping[str, np.ndarray],
        layout: Layout, request: Request, blobs: Blobs | None, group_blobs: Blobs | None,
        replies: Blobs | None,
    ) -> dict[str, np.ndarray]:  # fmt: skip
        return paillier.grow(session, data, shares, layout, blobs, group_blobs, replies)


# By the config's product: a backend not named here has a dealt product.
STEPS: dict[str, ProductSteps] = {"paillier": PaillierSteps()}


def product_steps(session: PartySession) -> ProductSteps:
    """How ``session``'s run makes its blobs and shares."""
    return STEPS.get(session.config.product, DealtSteps())
