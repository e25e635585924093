"""cross_noise "auto" (the default): coins where the plan's public values say they are cheap
(vertimrf.protocol.secure.noise_rule), else split; the plan prints the rule."""

from __future__ import annotations

import dataclasses

import pytest

from tests.helpers import small_adult
from vertimrf import load_dataset
from vertimrf.domain import DomainSpec
from vertimrf.protocol import from_preset
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.schedule import Kind, schedule
from vertimrf.protocol.secure import noise_rule

# bench_secure_cli's 1,000,000 x 15 x 3 table's domain (benchmarks/results/coins_cost*.md)
SIZES = (2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 8, 6, 4, 3, 2)
PARTIES = [("A", ["c0", "c1", "c2", "c3", "c4"]), ("B", ["c5", "c6", "c7", "c8", "c9"]),
           ("C", ["c10", "c11", "c12", "c13", "c14"])]  # fmt: skip


def _wide(epsilon: float, **kw):
    spec = DomainSpec.from_dict({f"c{j}": s for j, s in enumerate(SIZES)})
    return from_preset(
        "default", epsilon=epsilon, delta=1e-6, spec=spec, parties=PARTIES, max_rows=1 << 20,
        record_sets="equal", **kw,
    )  # fmt: skip


def _same(auto, given) -> None:
    """The plan "auto" chose is the given noise's plan, its rule aside (record sets
    compare by their type and shares: the objects have no equality)."""
    assert auto.cross_rule and not given.cross_rule
    assert vars(auto.sets) == vars(given.sets) and type(auto.sets) is type(given.sets)
    assert dataclasses.replace(auto, cross_rule="", sets=given.sets) == given


def test_coin_share_is_the_first_releases_coin_blobs_over_the_product_blobs():
    """By hand: a coin blob is a feature blob of cells x coins ring words (its digest, nonce
    and tag beside): the first release's, and the re-measurement's bound (the pair's widest
    cells at the coins of twice the nominal sigma of 10,000 marginals, plus 2); a party's
    feature blobs are word_bytes x max_rows x its width to each peer."""
    plan = secure_plan(_wide(3.2, cross_noise="coins"))
    sigma = plan.sigma("select", plan.first_release())
    coins, wb, rows = plan.cross_noise.coins(sigma), plan.word_bytes, plan.rows
    shapes = plan.first_coins
    assert coins > 0 and len(shapes) == 3
    share = noise_rule.coin_share(plan)
    most = 2 * plan.nominal_sigma("measure", 10_000) + 2  # any request's sigma, bounded
    again = plan.cross_noise.coins(most)
    for p, name in enumerate(plan.names):
        cells = [c for pair, (c, _) in shapes.items() if p in pair]
        blob = sum(32 + 12 + c * coins * wb + 16 for c in cells)
        widest = [plan.max_cells(*pair) for pair in shapes if p in pair]
        blob += sum(32 + 12 + c * again * wb + 16 for c in widest)
        product = 2 * wb * rows * plan.widths[p]
        assert share[name] == pytest.approx(blob / product, rel=1e-12)


def _nltcs(epsilon: float, max_rows: int, **kw):
    spec = load_dataset("nltcs")[1]
    names = list(spec.names)
    return from_preset(
        "default", epsilon=epsilon, delta=1e-6, spec=spec, max_rows=max_rows,
        record_sets="equal", parties=[("A", names[:8]), ("B", names[8:])], **kw,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("epsilon", "max_rows", "picked"),
    [(6.4, 1 << 20, "split"), (1.6, 1 << 24, "split"), (6.4, 1 << 24, "coins")],
)
def test_auto_takes_coins_where_the_plan_bounds_them_within_the_limit(epsilon, max_rows, picked):
    """NLTCS (16 binary columns) over two parties: the run's coins are bounded by 55.7x
    the features' bytes at 2^20 rows and epsilon 6.4, 2.6x at 2^24 rows and 1.6, and 0.22x
    at 2^24 rows and 6.4, where "auto" takes them."""
    auto = secure_plan(_nltcs(epsilon, max_rows))
    assert auto.cross_noise.name == picked
    rule = f"cross noise auto: {picked}; coins when every party's coin bytes"
    assert auto.cross_rule.startswith(rule)
    _same(auto, secure_plan(_nltcs(epsilon, max_rows, cross_noise=picked)))
    kinds = set(schedule(_nltcs(epsilon, max_rows)).kinds)
    assert (Kind.FEATURES_COINS in kinds) == (picked == "coins")
    assert (Kind.GROUPS_COINS in kinds) == (picked == "coins")


def test_auto_never_takes_coins_on_the_measured_tables():
    """On the 1M x 15 x 3 table coins cost 1.46x split's bytes at epsilon 3.2 for party C
    (coins_cost_rule.md) though their first release adds only 2.9%: the re-measurement's
    coins dominate, so the rule bounds them for any request, and keeps split here."""
    for epsilon in (0.4, 1.6, 3.2, 6.4):
        plan = secure_plan(_wide(epsilon))
        assert plan.cross_noise.name == "split", epsilon
        coins = secure_plan(_wide(epsilon, cross_noise="coins"))
        assert max(noise_rule.coin_share(coins).values()) > 1


def test_auto_keeps_split_on_small_tables_and_writes_nothing():
    """On Adult (48,842 rows, max_rows 65,536) coins cost 30% or more of the product's
    bytes at every epsilon up to 6.4: "auto" is split, and the config file and hash are
    those of a config written before "auto" (no cross_noise key)."""
    df, spec = small_adult(20, 15)
    for eps in (0.4, 6.4):
        cfg = from_preset(
            "default", epsilon=eps, delta=1e-6, spec=spec, max_rows=65_536,
            parties=[("A", list(spec.names[:8])), ("B", list(spec.names[8:]))],
        )  # fmt: skip
        assert cfg.cross_noise == "auto" and "cross_noise" not in cfg.to_dict()
        _same(secure_plan(cfg), secure_plan(dataclasses.replace(cfg, cross_noise="split")))
        assert "cross_noise" in dataclasses.replace(cfg, cross_noise="split").to_dict()
