"""The typed, immutable ProtocolConfig: per-method options, frozen mappings, one cached hash,
ConfigError (with the close names) for unknown fields, and old flat config files."""

import json
from pathlib import Path

import pytest

from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.errors import ConfigError
from vertimrf.protocol import from_preset, load_config
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.options import FOOptions, SecureOptions, SecurePaperOptions

DATA = Path(__file__).parent / "data"
# The fixtures' spec and parties (tests/protocol/data/README.md).
SPEC = DomainSpec(
    [
        ColumnSpec("a", "categorical", ("x", "y", "z")),
        ColumnSpec("b", "categorical", tuple("pqrstu")),
        ColumnSpec("c", "categorical", ("0", "1")),
    ]
)
PARTIES = [("alice", ["a", "b"]), ("bob", ["c"])]


def _cfg(**kw):
    return from_preset(
        "default", epsilon=1.0, delta=1e-6, spec=SPEC, parties=PARTIES, max_rows=1000, **kw
    )


def test_mappings_are_frozen_and_the_hash_cannot_change():
    cfg = _cfg()
    before = cfg.config_hash()
    with pytest.raises(TypeError):
        cfg.options.shares["select"] = 0.9
    with pytest.raises(AttributeError):
        cfg.options.iters = 5
    with pytest.raises(AttributeError):
        cfg.epsilon = 5.0
    paper = _cfg(secure_pipeline="paper")
    with pytest.raises(TypeError):
        paper.options.shares["locmrf"] = 0.0
    assert isinstance(paper.parties, tuple) and isinstance(paper.parties[0].columns, tuple)
    # Even a mutation through the back door leaves the hash computed at construction.
    object.__setattr__(cfg, "max_rows", 7)
    assert cfg.config_hash() == before


@pytest.mark.parametrize(
    ("make", "close"),
    [
        (lambda: _cfg(secure_itres=5), "secure_iters"),
        (lambda: _cfg().with_changes(max_row=5), "max_rows"),
        (lambda: SecureOptions(iter=5), "iters"),
        (lambda: FOOptions(cross_marginal=3), "cross_marginals"),
        (
            lambda: ProtocolConfig(epsilon=1.0, delta=1e-6, spec=SPEC, parties=(), max_row=1000),
            "max_rows",
        ),
    ],
)
def test_unknown_fields_raise_config_error_with_close_names(make, close):
    with pytest.raises(ConfigError, match=repr(close)):
        make()


def test_a_setting_the_method_does_not_read_is_refused():
    with pytest.raises(ConfigError, match="'shares' is not a setting|shares is not a setting"):
        _cfg(shares={"locmrf": 0.4, "locenc": 0.36, "count": 0.04, "binning": 0.2})
    with pytest.raises(ConfigError, match="t is not a setting of method 'fo'"):
        _cfg(method="fo", t=1000)


def test_unknown_field_in_a_config_file_is_a_config_error():
    data = _cfg().to_dict()
    data["max_row"] = 5
    with pytest.raises(ConfigError, match="'max_rows'"):
        ProtocolConfig.from_dict(data)
    data = _cfg().to_dict()
    data["options"]["iter"] = 5
    with pytest.raises(ConfigError, match="'iters'"):
        ProtocolConfig.from_dict(data)


def test_a_config_pickles_and_copies_unchanged():
    import copy
    import pickle

    for cfg in (_cfg(), _cfg(method="fo", binned=("b",))):
        for back in (pickle.loads(pickle.dumps(cfg)), copy.deepcopy(cfg)):
            assert back == cfg and back.config_hash() == cfg.config_hash()
            with pytest.raises(TypeError):
                back.options.shares["count"] = 0.5


def test_round_trip_of_every_method(tmp_path):
    for cfg in (
        _cfg(),
        _cfg(secure_pipeline="paper"),
        _cfg(method="fo"),
        _cfg(method="fm", allow_non_dp=True, t=1000),
    ):
        cfg.save(tmp_path / "c.json")
        back = load_config(tmp_path / "c.json")
        assert back == cfg and back.config_hash() == cfg.config_hash()
        assert type(back.options) is type(cfg.options)


@pytest.mark.parametrize(
    ("name", "kind", "checks"),
    [
        ("secure", SecureOptions, {"iters": 200, "binning": "auto", "feature_width": "auto"}),
        ("fo", FOOptions, {"cross_marginals": 3, "max_model_cells": 4e6, "bins": 4}),
        ("secure_paper", SecurePaperOptions, {"bins": 3, "local_mrf": True}),
    ],
)
def test_a_flat_config_file_of_0_1_0_loads_converted(name, kind, checks):
    """Files written by vertimrf 0.1.0 (tests/protocol/data/README.md)."""
    path = DATA / f"config_v0_{name}.json"
    old = json.loads(path.read_text())
    cfg = load_config(path)
    assert type(cfg.options) is kind
    for field, value in checks.items():
        assert getattr(cfg.options, field) == value
    assert (cfg.epsilon, cfg.delta, cfg.run_nonce, cfg.max_rows) == (
        old["epsilon"],
        old["delta"],
        old["run_nonce"],
        old["max_rows"],
    )
    assert [p.name for p in cfg.parties] == ["alice", "bob"]
    # Converted: the new format, so saved and read again it is the same config.
    assert ProtocolConfig.from_dict(cfg.to_dict()) == cfg


def test_a_config_file_of_another_format_is_refused_in_one_line():
    data = _cfg().to_dict()
    data["format"] = 99
    with pytest.raises(ConfigError, match="make it again with `vertimrf config`"):
        ProtocolConfig.from_dict(data)
