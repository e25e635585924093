"""Each method's protocol rules (``vertimrf.protocol.methods``) define its steps, its secure
plan and what its plan charges, checked against exact values on a small domain."""

from __future__ import annotations

import math

import pytest

from vertimrf.domain import DomainSpec
from vertimrf.errors import ConfigError
from vertimrf.privacy.ledger import Release
from vertimrf.privacy.zcdp import epsilon_to_rho
from vertimrf.protocol import ProtocolConfig, from_preset, load_config
from vertimrf.protocol.budget import ProtocolBudget
from vertimrf.protocol.methods import expected_releases, rules
from vertimrf.protocol.plan import run_plan
from vertimrf.protocol.secure.plan import SELECT

SPEC = DomainSpec.from_dict({"a": 3, "b": 40, "c": 2, "d": 5})
PARTIES = [("A", ["a", "b"]), ("B", ["c", "d"])]
METHODS = {
    "fo": {"method": "fo"},
    "fm": {"method": "fm", "allow_non_dp": True, "t": 64},
    "paper": {"method": "secure", "secure_pipeline": "paper", "bins": 8},
    "select": {"method": "secure", "secure_feature_width": 64},
}


def _config(kind: str, **fields: object) -> ProtocolConfig:
    return from_preset(
        "default", record_sets="equal",
        **({"epsilon": 1.0, "delta": 1e-6, "spec": SPEC, "parties": PARTIES, "max_rows": 256}
           | {"run_nonce": "ab" * 16, **METHODS[kind]} | fields),
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
    shares = {"count": 0.01, "select": 0.3, "measure": 0.69}
    cfg = _config("select", secure_shares=shares)
    plan = rules(cfg).secure_plan(cfg)
    assert plan is not None and plan.select
    assert plan.sizes == (3, 40, 2, 5)
    # Width 64: A's singles (43) plus the pair (a, b) (120 cells) do not fit; B's pair (10) does.
    assert plan.groups == (((0,), (1,)), ((2,), (3,)))  # round 1: the singles
    assert plan.group_caps == (64 - 43, 64 - 7)  # round 2: the width less the singles
    rho = epsilon_to_rho(1.0, 1e-6)
    assert plan.rho_count == rho * shares["count"]
    assert plan.rho_select == rho * shares["select"]
    assert plan.rho_measure == rho * shares["measure"]
    fixed, bounds = rules(cfg).plan_releases(cfg, 1.0, plan)
    assert fixed == plan.releases(SELECT, plan.all_pairs())
    assert bounds == [Release("bound", "re-measurement (any request)", plan.rho_measure)]
    assert rules(cfg).model_cap(cfg) == cfg.secure_options().max_total_cells


def test_auto_shares_split_the_budget_by_the_first_releases_noise_at_max_rows():
    """secure_shares="auto" (the default): the count 0.001 of rho; the first release 0.5 when
    its pairs' mean expected noise TVD at half of rho, 1/2 cells sigma sqrt(2 / pi) /
    max_rows, is at most 0.05, else 0.2; the re-measurement the rest. Computed here by hand
    on the small domain, on both sides of the max_rows at which that noise is 0.05."""
    rho = epsilon_to_rho(1.0, 1e-6)
    pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    sizes = SPEC.domain.sizes
    cells = sum(sizes[a] * sizes[b] for a, b in pairs)  # 431
    sigma = (len(pairs) / (2.0 * rho * 0.5)) ** 0.5
    boundary = 0.5 * cells * sigma * (2.0 / math.pi) ** 0.5 / (len(pairs) * 0.05)
    assert _config("select").secure_options().shares == "auto"
    for max_rows, select in ((math.ceil(boundary * 1.001), 0.5), (int(boundary * 0.999), 0.2)):
        cfg = _config("select", max_rows=max_rows)
        plan = rules(cfg).secure_plan(cfg)
        assert (plan.rho_count, plan.rho_select) == (rho * 0.001, rho * select)
        assert plan.rho_measure == rho * (1.0 - 0.001 - select)
        assert math.isclose(plan.rho_count + plan.rho_select + plan.rho_measure, rho)


def test_the_plan_states_the_split_and_why():
    """The run plan's line: the fractions of rho and, under "auto", which way the rule went;
    a fixed split says only its fractions."""
    noisy = run_plan(_config("select")).describe()  # max_rows 256: mostly noise at 50%
    assert (
        "budget split: count 0.1%, first release 20.0%, re-measurement 79.9% of rho (auto: "
        "at 50% the first release would be mostly noise for max_rows records)"
    ) in noisy.splitlines()
    informative = run_plan(_config("select", max_rows=1 << 24)).describe()
    assert "first release 50.0%, re-measurement 49.9% of rho (auto: at 50% the first " in (
        informative
    )
    shares = {"count": 0.01, "select": 0.3, "measure": 0.69}
    fixed = run_plan(_config("select", secure_shares=shares)).describe().splitlines()
    assert "budget split: count 1.0%, first release 30.0%, re-measurement 69.0% of rho" in fixed
    assert "budget split" not in run_plan(_config("paper")).describe()


@pytest.mark.parametrize("shares", ["half", "AUTO", {"count": 0.1, "select": 0.5}])
def test_shares_other_than_auto_or_the_three_fractions_are_refused_in_one_line(shares):
    with pytest.raises(ConfigError) as info:
        _config("select", secure_shares=shares)
    message = str(info.value)
    assert "\n" not in message and "shares" in message
    assert ("'auto'" in message) == isinstance(shares, str)


def test_auto_shares_survive_a_config_file_with_their_hash(tmp_path):
    cfg = _config("select")
    cfg.save(tmp_path / "config.json")
    again = load_config(tmp_path / "config.json")
    assert again.secure_options().shares == "auto"
    assert again.config_hash() == cfg.config_hash()
    assert '"shares": "auto"' in (tmp_path / "config.json").read_text()
