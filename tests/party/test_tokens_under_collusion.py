"""What a party and the role that matches the token lists (the server, or the dealer with
``dealer="own"``) learn together of a peer's record set: whether the peer holds any ID they
can name, not only the IDs of the party's own records (docs/threat-model.md, "Record sets
under collusion"). The tokens are PRF values under a key of the group secret, which every
party holds, so the coalition recomputes the token of a guessed ID and looks it up. Only the
peer's own region's dummies, keyed by its own secret, stay out of reach."""

from __future__ import annotations

import numpy as np

from vertimrf.domain import DomainSpec
from vertimrf.party.records.ids import int_fingerprints
from vertimrf.party.records.tokens import (
    TokenKeys,
    dummy_counts,
    dummy_tokens,
    make_tokens,
    order_tokens,
    release_tokens,
)
from vertimrf.protocol.factory import from_preset
from vertimrf.protocol.methods import secure_plan

GROUP, ADMIT = bytes(range(32)), bytes(range(100, 132))


def _token(keys: TokenKeys, record_id: int) -> int:
    fingerprint = int_fingerprints(np.array([record_id], np.int64))
    return int(release_tokens(order_tokens(fingerprint, keys), keys, ADMIT)[0])


def test_a_party_and_the_token_matcher_test_any_guessed_id_against_a_peers_list():
    spec = DomainSpec.from_dict({"a": 3, "b": 3})
    cfg = from_preset(
        "default", epsilon=1.0, delta=1e-6, spec=spec, parties=[("A", ["a"]), ("B", ["b"])],
        method="secure", max_rows=1024, record_sets="partial",
    )  # fmt: skip
    noise = secure_plan(cfg).sets.region_noise()
    context = cfg.run_context()
    a_keys = TokenKeys(GROUP, bytes(range(32, 64)), context)
    b_keys = TokenKeys(GROUP, bytes(range(64, 96)), context)
    b_ids = np.arange(0, 200, dtype=np.int64)  # A holds 100..299
    b_list = make_tokens(order_tokens(int_fingerprints(b_ids), b_keys), b_keys, ADMIT, noise, 1)
    held = set(b_list.sorted.tolist())
    # The coalition's view: B's list as the matcher opens it, and A's keys.
    assert _token(a_keys, 150) in held  # a record both hold: what any PSI reveals
    assert _token(a_keys, 42) in held  # a record A does not hold: more than a PSI reveals
    assert _token(a_keys, 5_000) not in held  # an ID B does not hold
    # Left unexplained: B's own region's dummies alone (the shared region's, A makes too).
    guessed = {_token(a_keys, i) for i in range(0, 400)}
    shared = set(dummy_tokens(a_keys, ADMIT, noise, 0).tolist())
    assert len(held - guessed - shared) == dummy_counts(b_keys, ADMIT, noise, 1)[0b10]
