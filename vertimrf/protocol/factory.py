"""Configs a role can run: made from a preset or read from a file, then
checked; design notes in docs/design/protocol.md."""

from __future__ import annotations

import os
from typing import Any

from vertimrf.domain import DomainSpec
from vertimrf.errors import ConfigError
from vertimrf.io import read_json
from vertimrf.protocol.autot import choose_t
from vertimrf.protocol.config import PartySpec, ProtocolConfig, split_settings
from vertimrf.protocol.options import PRESETS, from_flat
from vertimrf.protocol.plan import check_plan
from vertimrf.protocol.setup import RunSetup, run_setup

__all__ = ["from_preset", "load_config"]


def from_preset(
    preset: str,
    *,
    epsilon: float,
    delta: float,
    spec: DomainSpec,
    parties: list[tuple[str, list[str]]] | list[list[str]],
    **overrides: Any,
) -> ProtocolConfig:
    """A checked config from a named preset; ``parties`` are (name, columns) pairs or column
    lists.

    ``overrides`` are shared fields or the method's settings under their flat names
    (``method``, ``secure_pipeline``, ``secure_iters``, ``t``, ...; see
    :data:`vertimrf.protocol.options.FLAT_NAMES`). A setting the chosen method does not
    read raises ConfigError. FM's ``t="auto"`` is resolved here, once, from the public
    ``max_rows`` (see :func:`vertimrf.protocol.autot.choose_t`).
    """
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; use one of {sorted(PRESETS)}.")
    specs = []
    for i, p in enumerate(parties):
        name, cols = p if isinstance(p, tuple) else (f"party{i}", p)
        specs.append(PartySpec(str(name), tuple(str(c) for c in cols)))
    shared, settings = split_settings(overrides, "from_preset")
    auto = settings.get("t") == "auto"
    if auto:
        if shared.get("max_rows") is None:
            raise ConfigError(
                "t='auto' needs max_rows, a public upper bound on the number of records "
                "(never the true count), to choose t from public information only."
            )
        settings["t"] = PRESETS["paper"]["t"]
    if "options" in shared and settings:
        raise ConfigError("give options=... or flat method settings, not both.")
    shared.setdefault("options", from_flat(PRESETS[preset], settings, where=f"preset {preset!r}"))
    shared.setdefault("preset", preset)
    cfg = ProtocolConfig(epsilon=epsilon, delta=delta, spec=spec, parties=tuple(specs), **shared)
    if auto:
        assert cfg.max_rows is not None  # checked above
        cfg = cfg.with_changes(t=choose_t(cfg, cfg.max_rows))
    check_plan(cfg)
    return cfg


def load_config(path: str | os.PathLike) -> ProtocolConfig:
    """The checked config in the file at ``path``, written by :meth:`ProtocolConfig.save`
    (or by vertimrf 0.1.0: converted)."""
    return load_setup(path).config


def load_setup(path: str | os.PathLike) -> RunSetup:
    """The setup of the config file at ``path`` (:func:`load_config`): the config checked
    and its plan derived, once."""
    return run_setup(ProtocolConfig.from_dict(read_json(path, ConfigError, "config file")))
