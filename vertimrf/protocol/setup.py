"""A run's setup, made once per process and shared by every role in it: the checked
config, its method, its secure plan and its schedule (:class:`RunSetup`). The command
line (:func:`load_setup`), the service and the in-process driver make it once; the roles
and their drivers read it instead of checking the config and deriving the plan again, and
resolve the keys they work with by :meth:`RunSetup.keys`, the one place that does."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from vertimrf.crypto.keys import KeyPair, PublicKey
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

    def keys(
        self,
        role: str,
        keypair: KeyPair | None = None,
        given: Mapping[str, PublicKey] | None = None,
    ) -> dict[str, PublicKey] | None:
        """The public keys of the parties ``role`` works with (every party but itself), by
        name: the one place a command, the service or a driver resolves them.

        A role that holds its ``keypair`` under a config that pins identities takes the
        pinned keys: its key pair must be the one pinned for it, and ``given`` keys (a
        command's key files) must be the pinned ones. Otherwise the ``given`` keys, each a
        party's other than ``role`` (an in-process run's roles may hold other keys than the
        pinned ones); the pinned ones when none are given; None when there are neither."""
        cfg = self.config
        names = [p.name for p in cfg.parties]
        if cfg.identities is not None and (keypair is not None or given is None):
            if keypair is not None:
                cfg.check_keypair(keypair)
            pinned = cfg.public_keys()
            keys = {n: pinned[n] for n in names if n != role}
            other = sorted(
                n for n, k in (given or {}).items() if n not in keys or k.raw != keys[n].raw
            )
            if other:
                raise ConfigError(
                    f"the config pins every public key, and the key files given for {other} "
                    "are not the pinned ones: give no key files, or the pinned ones."
                )
            return keys
        if given is None:
            return None
        if role in given:
            raise ConfigError(
                f"the key files hold {role!r}'s own public key; give the other parties'."
            )
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise ConfigError(f"the key files hold keys of {unknown}, not parties of {names}.")
        return dict(given)


def run_setup(config: ProtocolConfig | RunSetup) -> RunSetup:
    """The setup of ``config``: checked (:func:`~vertimrf.protocol.plan.check_plan`, one
    line for a run that would fail) and its plan derived, once; a setup is returned as
    it is."""
    if isinstance(config, RunSetup):
        return config
    if not isinstance(config, ProtocolConfig):
        raise ConfigError(f"config must be a ProtocolConfig; got {type(config).__name__}.")
    plan = check_plan(config)
    return RunSetup(config, rules(config), plan, schedule(config, plan))


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
