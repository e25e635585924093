"""A run's setup, made once per process and shared by every role in it: the checked
config, its method, its secure plan and its schedule (:class:`RunSetup`). The command
line (:func:`load_setup`), the service and the in-process driver make it once; the roles
and their drivers read it instead of checking the config and deriving the plan again."""

from __future__ import annotations

from dataclasses import dataclass

from vertimrf.errors import ConfigError
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.methods import Method, rules, secure_plan
from vertimrf.protocol.plan import check_plan
from vertimrf.protocol.schedule import Schedule, schedule
from vertimrf.protocol.secure.plan import SecurePlan


@dataclass(frozen=True)
class RunSetup:
    """The checked ``config``, its ``method`` (:class:`~vertimrf.protocol.methods.Method`),
    its secure ``plan`` (None for a method without one) and its ``schedule``."""

    config: ProtocolConfig
    method: Method
    plan: SecurePlan | None
    schedule: Schedule


def run_setup(config: ProtocolConfig | RunSetup) -> RunSetup:
    """The setup of ``config``: checked (:func:`~vertimrf.protocol.plan.check_plan`, one
    line for a run that would fail) and its plan derived, once; a setup is returned as
    it is."""
    if isinstance(config, RunSetup):
        return config
    if not isinstance(config, ProtocolConfig):
        raise ConfigError(f"config must be a ProtocolConfig; got {type(config).__name__}.")
    plan = check_plan(config)
    return RunSetup(config, rules(config), plan, schedule(config))


def secure_setup(config: ProtocolConfig | RunSetup) -> tuple[ProtocolConfig, SecurePlan]:
    """The config and secure plan a secure role runs on: a setup's (derived once), or a
    bare config's, derived here and not checked (a role built apart from a run, as the
    tests build them); ConfigError unless the method is "secure"."""
    if isinstance(config, RunSetup) and config.plan is not None:
        return config.config, config.plan
    bare = config.config if isinstance(config, RunSetup) else config
    if not isinstance(bare, ProtocolConfig):
        raise ConfigError(f"config must be a ProtocolConfig; got {type(bare).__name__}.")
    return bare, secure_plan(bare)  # ConfigError for a method without one
