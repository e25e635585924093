"""The config's record sets: "equal" is today's config byte for byte (not in the file or the
hash); "partial" with its population and region share is in both and round-trips; bad
values and FO with partial sets are one-line errors."""

from __future__ import annotations

import json

import pytest

from vertimrf.domain import DomainSpec
from vertimrf.errors import ConfigError
from vertimrf.protocol import from_preset
from vertimrf.protocol.config import ProtocolConfig

SPEC = DomainSpec.from_dict({"a": 2, "b": 3})
PARTIES = [("A", ["a"]), ("B", ["b"])]
NONCE = "0" * 32


def _config(**kw):
    kw.setdefault("method", "secure")
    return from_preset("default", epsilon=1.0, delta=1e-6, spec=SPEC, parties=PARTIES,
                       max_rows=1000, run_nonce=NONCE, **kw)  # fmt: skip


def test_equal_record_sets_keep_todays_file_and_hash():
    equal, fo = _config(record_sets="equal"), _config(method="fo")
    assert equal.record_sets == fo.record_sets == "equal"
    assert not {"record_sets", "population", "region_share"} & set(equal.to_dict())
    again = ProtocolConfig.from_dict(equal.to_dict())  # a file without it reads as equal
    assert again == equal and again.config_hash() == equal.config_hash()


def test_partial_is_the_secure_select_default_and_follows_a_switch_of_method():
    """Partial for the secure select pipeline, equal for every other method; a switch to a
    method that needs equal sets makes them equal, and an explicit choice is kept."""
    default = _config()
    assert default.record_sets == "partial" and default.to_dict()["record_sets"] == "partial"
    assert _config(secure_pipeline="paper").record_sets == "equal"
    assert default.with_changes(method="fo").record_sets == "equal"
    assert default.with_changes(epsilon=2.0).record_sets == "partial"
    equal = _config(record_sets="equal")
    assert equal.with_changes(method="fo").with_changes(method="secure").record_sets == "equal"


def test_partial_record_sets_are_in_the_file_and_the_hash_and_round_trip(tmp_path):
    partial = _config(record_sets="partial", population="union", region_share=0.05)
    d = partial.to_dict()
    assert (d["record_sets"], d["population"], d["region_share"]) == ("partial", "union", 0.05)
    assert partial.config_hash() != _config(record_sets="equal").config_hash()
    partial.save(tmp_path / "c.json")
    again = ProtocolConfig.from_dict(json.loads((tmp_path / "c.json").read_text()))
    assert again == partial and again.config_hash() == partial.config_hash()


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"record_sets": "some"}, "record_sets must be one of"),
        ({"record_sets": "partial", "population": "all"}, "population must be one of"),
        ({"record_sets": "partial", "region_share": 0}, "region_share must lie in"),
        ({"record_sets": "partial", "region_share": True}, "region_share must lie in"),
        ({"record_sets": "equal", "population": "union"}, "settings of record_sets='partial'"),
        ({"record_sets": "partial", "method": "fo"}, "method 'fo' needs every party"),
        ({"record_sets": "partial", "secure_pipeline": "paper"}, "'secure/paper' needs every"),
    ],
)
def test_bad_record_set_settings_are_one_line_errors(kw, words):
    with pytest.raises(ConfigError, match=words) as caught:
        _config(**kw)
    assert "\n" not in str(caught.value)


def test_the_plan_of_partial_sets_spends_its_share_on_the_region_counts():
    """rho of (eps, 0.98 delta) is split: region_share to the region counts, the rest to
    the secure product's releases; each failure probability takes 1% of delta; the rows are
    max_rows slots. Equal sets plan as today."""
    from vertimrf.privacy.zcdp import epsilon_to_rho
    from vertimrf.protocol.methods import secure_plan

    equal = secure_plan(_config(record_sets="equal"))
    assert equal.regions is None and equal.rho == epsilon_to_rho(1.0, 1e-6)
    plan = secure_plan(_config(record_sets="partial", region_share=0.05))
    whole = epsilon_to_rho(1.0, 1e-6 * 0.98)
    assert plan.regions is not None and plan.regions.m == 2
    assert plan.regions.rho == pytest.approx(0.05 * whole)
    assert plan.rho == pytest.approx(0.95 * whole)
    assert plan.regions.delta_clip == plan.regions.delta_stop == pytest.approx(1e-8)
    assert (plan.rows, plan.buckets) == (1000, 1)


def test_the_run_plan_charges_and_prints_the_region_counts():
    from vertimrf.protocol.plan import run_plan

    plan = run_plan(_config(record_sets="partial"))
    (region,) = [r for r in plan.releases if r.mechanism == "region_discrete_gaussian"]
    noise = plan.regions
    assert noise is not None and region.rho == pytest.approx(noise.rho) and region.count == 3
    assert plan.ledger_total <= plan.budget_rho
    text = plan.describe()
    assert "record sets: partial" in text and f"{noise.dummy_rows:,} dummy rows" in text
    assert f"N_Z(0, {noise.sigma:.4g}^2)" in text
    assert "record sets" not in run_plan(_config(record_sets="equal")).describe()
