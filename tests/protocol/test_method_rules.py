"""Each method's protocol rules (``vertimrf.protocol.methods``) define its steps, its secure
plan and what its plan charges, checked against exact values on a small domain."""

from __future__ import annotations

import pytest

from vertimrf.domain import DomainSpec
from vertimrf.privacy.ledger import Release
from vertimrf.privacy.zcdp import epsilon_to_rho
from vertimrf.protocol import ProtocolConfig, from_preset
from vertimrf.protocol.budget import ProtocolBudget
from vertimrf.protocol.methods import expected_releases, rules
from vertimrf.protocol.secure import SELECT

SPEC = DomainSpec.from_dict({"a": 3, "b": 40, "c": 2, "d": 5})
PARTIES = [("A", ["a", "b"]), ("B", ["c", "d"])]
METHODS = {
    "fo": {"method": "fo"},
    "fm": {"method": "fm", "allow_non_dp": True, "t": 64},
    "paper": {"method": "secure", "secure_pipeline": "paper", "bins": 8},
    "select": {"method": "secure", "secure_feature_width": 64},
}


def _config(kind: str) -> ProtocolConfig:
    return from_preset(
        "default", record_sets="equal",
        epsilon=1.0, delta=1e-6, spec=SPEC, parties=PARTIES, max_rows=256,
        run_nonce="ab" * 16, **METHODS[kind],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "steps"),
    [
        ("fo", (True, False, False)),
        ("fm", (True, False, False)),
        ("paper", (True, True, False)),
        ("select", (False, True, True)),
    ],
)
def test_each_method_declares_its_steps(kind, steps):
    r = rules(_config(kind))
    assert (r.local_message, r.secure_product, r.selects) == steps


@pytest.mark.parametrize("kind", ["fo", "fm"])
def test_local_methods_have_no_secure_plan_and_charge_their_messages(kind):
    cfg = _config(kind)
    r = rules(cfg)
    assert r.secure_plan(cfg) is None
    fixed, bounds = r.plan_releases(cfg, 1.0, None)
    assert fixed == [x for p in PARTIES for x in expected_releases(cfg, p[0], epsilon=1.0)]
    rho = ProtocolBudget.from_config(cfg).rho_locmrf_party
    assert [(b.party, b.rho) for b in bounds] == [("A", rho), ("B", rho)]


def test_paper_pipeline_plan_bins_singles_on_the_locenc_share():
    cfg = _config("paper")
    plan = rules(cfg).secure_plan(cfg)
    assert plan is not None and not plan.select
    # "b" (40 values) is binned to b=8; every feature group is one attribute.
    assert plan.sizes == (3, 8, 2, 5)
    assert plan.groups == (((0,), (1,)), ((2,), (3,)))
    assert plan.widths == (3 + 8, 2 + 5)
    rho_enc = ProtocolBudget.from_config(cfg).rho_locenc
    assert (plan.rho_count, plan.rho_select, plan.rho_measure) == (0.0, rho_enc, 0.0)
    fixed, bounds = rules(cfg).plan_releases(cfg, 1.0, plan)
    local = [x for p in PARTIES for x in expected_releases(cfg, p[0], epsilon=1.0)]
    assert fixed == local + plan.releases(SELECT, plan.all_pairs())
    assert [b.description for b in bounds] == ["local PrivMRF of A", "local PrivMRF of B"]


def test_select_pipeline_plan_groups_pairs_on_its_shares():
    cfg = _config("select")
    plan = rules(cfg).secure_plan(cfg)
    assert plan is not None and plan.select
    assert plan.sizes == (3, 40, 2, 5)
    # Width 64: A's singles (43) plus the pair (a, b) (120 cells) do not fit; B's pair (10) does.
    assert plan.groups == (((0,), (1,)), ((2,), (3,)))  # round 1: the singles
    assert plan.group_caps == (64 - 43, 64 - 7)  # round 2: the width less the singles
    rho, shares = epsilon_to_rho(1.0, 1e-6), cfg.secure_options().shares
    assert plan.rho_count == rho * shares["count"]
    assert plan.rho_measure == rho * shares["measure"]
    fixed, bounds = rules(cfg).plan_releases(cfg, 1.0, plan)
    assert fixed == plan.releases(SELECT, plan.all_pairs())
    assert bounds == [Release("bound", "re-measurement (any request)", plan.rho_measure)]
    assert rules(cfg).model_cap(cfg) == cfg.secure_options().max_total_cells
