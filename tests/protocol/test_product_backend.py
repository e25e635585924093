"""The cross product is a backend behind one Protocol: a second backend, a plain reference
product with exact shares from a trusted in-test dealer (tests/protocol/reference_product.py),
registered by one line, gives exact shares in both rounds and, run end to end under one seed,
the same synthetic table as the dealer backend, while its blobs differ."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.protocol import reference_product
from tests.protocol.reference_product import ReferenceProduct
from tests.secure_runs import (
    SECRET,
    assert_shares_sum_to_the_exact_product,
    exact_product,
    round_two,
    split,
)
from vertimrf.driver.inprocess import local_run
from vertimrf.errors import ConfigError
from vertimrf.party.secure.shares import grow
from vertimrf.product import cross_product
from vertimrf.product.dealer import DealerProduct
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.secure.product import PRODUCTS


@pytest.fixture
def reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference backend, registered as a new backend is: one line in PRODUCTS."""
    monkeypatch.setitem(PRODUCTS, "reference", reference_product.NAME)


def test_the_config_names_its_backend_and_an_unknown_one_is_refused(reference):
    cfg, *_ = split([[3], [2]], 10, 0, product="reference")
    assert isinstance(cross_product(cfg.product), ReferenceProduct)
    assert cfg.to_dict()["product"] == "reference"
    dealer, *_ = split([[3], [2]], 10, 0)
    assert "product" not in dealer.to_dict()  # the default keeps every config's bytes
    assert isinstance(cross_product(dealer.product), DealerProduct)
    with pytest.raises(ConfigError, match="product must be one of"):
        split([[3], [2]], 10, 0, product="homomorphic")  # refused with the plan, at config time
    unchecked = dataclasses.replace(dealer, product="homomorphic")
    with pytest.raises(ConfigError, match="product must be one of"):
        secure_plan(unchecked)  # and by any role given such a config


@pytest.mark.parametrize("sizes", [[[3, 2], [4]], [[2], [3, 2], [2, 2]]])
def test_the_reference_shares_sum_to_the_exact_product(reference, sizes):
    assert_shares_sum_to_the_exact_product(sizes, 25, 3, rows=40, product="reference")


def test_the_reference_grown_shares_sum_to_the_exact_product(reference):
    """Round 2, groups on both sides of the pair: blocks A and B are exact too."""
    sizes = [[2, 3], [3, 2]]
    cfg, *_ = split(sizes, 1, 0, rows=64, product="reference")
    plan = secure_plan(cfg)
    p0, p1 = plan.attrs
    marginals = [p0 + p1, (p0[0], p1[0])]
    members, server, codes, spec, request, inbox, groups = round_two(
        sizes, 30, 2, marginals, rows=40, product="reference"
    )
    layout = plan.layout(request.marginals)
    assert layout.grows(0, 1)
    grown = {
        name: grow(m.session, m._step, m._step.shares, layout, request, inbox[name], groups[name])
        for name, m in members.items()
    }
    total = grown["P0"]["P0+P1"] + grown["P1"]["P0+P1"]
    exact = exact_product(plan, layout, codes, spec.names, 0, 1)
    np.testing.assert_array_equal(plan.signed(total), exact)


def test_a_run_through_the_reference_product_gives_the_dealer_runs_table(reference, monkeypatch):
    """Seeded, the noise does not depend on how the shares were made, so both backends
    release the same counts and the server fits and samples the same table; the blobs
    differ (the reference sends plain one-hot rows), so the reference really ran. (Equal
    record sets: with partial ones the dummies are keyed by the config, which names the
    backend, so the two runs hold other dummies, as any changed input must give.)"""
    sent = {}

    def spy(backend):
        real = type(backend).sent

        def sent_rows(self, cols, *args):
            rows = real(self, cols, *args)
            sent.setdefault(type(self).__name__, []).append(rows.copy())
            return rows

        monkeypatch.setattr(type(backend), "sent", sent_rows)

    spy(DealerProduct())
    spy(ReferenceProduct())
    tables = {}
    for product in ("dealer", "reference"):
        cfg, spec, frame, parties = split([[3, 2], [4, 2]], 300, 5, rows=512, product=product)
        data = {
            name: frame[names].assign(id=np.arange(len(frame))).sample(frac=1.0, random_state=5)
            for name, names in parties
        }
        run = local_run(data, cfg, SECRET, seed=5)
        tables[product] = run.fitted(run.run()).sample().to_csv(index=False)
    assert tables["dealer"] == tables["reference"]
    plain = np.concatenate([r.ravel() for r in sent["ReferenceProduct"]])
    assert set(np.unique(plain)) <= {0, 1}  # one-hot rows in the clear
    masked = np.concatenate([r.ravel() for r in sent["DealerProduct"]])
    assert len(np.unique(masked)) > 1000  # uniform words
