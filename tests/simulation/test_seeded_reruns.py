"""A seeded run (experiments) gives the same bytes when run again, with partial record sets
too: the tokens and the deal are keyed by every role's public key, so its default keys come
from the seed."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from vertimrf import simulate
from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import DomainSpec
from vertimrf.protocol.seeds import seeded_key

SPEC = DomainSpec.from_dict({"a": 3, "b": 4, "c": 2})


def _frames() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({c: rng.integers(0, k, n) for c, k in (("a", 3), ("b", 4), ("c", 2))})
    ids = np.arange(n)
    return {  # A lacks the last 150 records, B the first 150
        "A": df[["a"]].assign(id=ids).iloc[: n - 150],
        "B": df[["b", "c"]].assign(id=ids).iloc[150:],
    }


def _run(seed: int) -> tuple[pd.DataFrame, dict[str, int]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth, report = simulate(
            _frames(), SPEC, id_column="id", epsilon=1.0, delta=1e-6, max_rows=4096, seed=seed
        )
    return synth, dict(report.regions)


def test_a_seeded_run_with_partial_record_sets_gives_the_same_table_and_region_counts():
    first, regions = _run(3)
    again, regions_again = _run(3)
    assert regions == regions_again
    pd.testing.assert_frame_equal(first, again)
    assert _run(4)[1] != regions  # another seed: fresh noise on the region counts


def test_seeded_keys_differ_by_role_and_seed_and_are_x25519_keys():
    keys = {(s, r): seeded_key(s, r) for s in (0, 1) for r in ("A", "B", "server")}
    assert len(set(keys.values())) == len(keys)
    pair = KeyPair.from_private_bytes("A", keys[0, "A"])
    assert pair.public_bytes == KeyPair.from_private_bytes("A", keys[0, "A"]).public_bytes
