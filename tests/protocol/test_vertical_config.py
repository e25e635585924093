"""ProtocolConfig: presets, validation, JSON round trip and the config hash."""

import pytest

from vertimrf.datasets import load_dataset
from vertimrf.errors import ConfigError
from vertimrf.protocol import from_preset, load_config
from vertimrf.protocol.config import PartySpec, ProtocolConfig
from vertimrf.protocol.options import FMOptions, FOOptions


@pytest.fixture(scope="module")
def spec():
    return load_dataset("adult")[1]


def _cfg(spec, **kw):
    names = list(spec.names)
    return from_preset(
        "paper", epsilon=1.6, delta=1e-5, spec=spec, parties=[names[:8], names[8:]], **kw
    )


def test_paper_preset_and_round_trip(spec, tmp_path):
    cfg = _cfg(spec)
    assert cfg.options.shares == {"locmrf": 0.4, "locenc": 0.36, "count": 0.04, "binning": 0.2}
    assert isinstance(cfg.options, FOOptions) and cfg.method == "fo" and cfg.options.bins == 4
    fm = cfg.with_changes(method="fm", allow_non_dp=True)  # keeps what FM reads too
    assert isinstance(fm.options, FMOptions) and fm.options.t == 2000 and fm.options.gamma == 1.0
    assert cfg.count_party == "party0"
    # Adult: every column with more than 4 codes is binned; sex (9) and income (14) are not.
    assert set(cfg.binned_columns()) == set(spec.names) - {"9", "14"}
    cfg.save(tmp_path / "c.json")
    back = load_config(tmp_path / "c.json")
    assert back == cfg and back.config_hash() == cfg.config_hash()
    assert cfg.with_changes(cross_marginals=5).config_hash() != cfg.config_hash()


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"epsilon": 0}, "epsilon"),
        ({"method": "xx"}, "method"),
        ({"method": "fm", "allow_non_dp": True, "t": 0}, "t must"),
        ({"method": "fm", "allow_non_dp": True, "gamma": 1.5}, "gamma"),
        ({"shares": {"locmrf": 0.5, "locenc": 0.5, "count": 0.1, "binning": 0}}, "sum"),
        ({"count_party": "nobody"}, "count_party"),
        ({"binned": ("zzz",)}, "binned"),
    ],
)
def test_invalid_settings_raise(spec, change, match):
    with pytest.raises(ConfigError, match=match):
        _cfg(spec).with_changes(**change)


def test_column_ownership_must_partition_the_spec(spec):
    names = list(spec.names)
    with pytest.raises(ConfigError, match="owned twice"):
        from_preset("paper", epsilon=1, delta=1e-5, spec=spec, parties=[names[:8], names[7:]])
    with pytest.raises(ConfigError, match="unowned"):
        from_preset("paper", epsilon=1, delta=1e-5, spec=spec, parties=[names[:8], names[9:]])


def test_the_dataclass_defaults_are_the_default_preset():
    """Presets are the only source of defaults: a config built field by field equals the
    `default` preset in every output-changing setting (everything but the run nonce)."""
    spec = load_dataset("nltcs")[1]
    names = list(spec.names)
    kw = {"epsilon": 1.0, "delta": 1e-5, "spec": spec, "run_nonce": "ab" * 16, "max_rows": 50000}
    direct = ProtocolConfig(
        parties=(PartySpec("a", tuple(names[:8])), PartySpec("b", tuple(names[8:]))), **kw
    )
    preset = from_preset("default", parties=[("a", names[:8]), ("b", names[8:])], **kw)
    assert direct == preset and direct.config_hash() == preset.config_hash()
