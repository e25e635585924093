"""Every role of a run in one process: each step runs as soon as its inputs have been sent."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from vertimrf.crypto.keys import KeyPair
from vertimrf.driver.party import PartyDriver
from vertimrf.driver.role import RoleDriver
from vertimrf.driver.server import ServerDriver
from vertimrf.driver.transport import (
    DirectoryTransport,
    InProcessTransport,
    MissingMessageError,
    Transport,
)
from vertimrf.errors import MessageError
from vertimrf.logs import progress_bar
from vertimrf.party.roles import Party
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.seeds import SERVER, seeded_key
from vertimrf.protocol.setup import run_setup
from vertimrf.vertical_model import VerticalModel


def run_in_process(
    roles: Sequence[RoleDriver], *, progress: bool = False, before: str | None = None
) -> dict[str, float]:
    """Run the roles' steps in turns until every role is done (or waits at the step named
    ``before``, which no role runs); return each phase's seconds (a step's, summed over the
    roles, or the sub-phases a step timed itself). ``progress`` shows a bar over the steps.
    MessageError if no role can move (a missing message)."""
    total = sum(len(role.steps()) for role in roles)
    bar = progress_bar(total=total, desc="vertimrf fit", progress=progress)

    def pending(role: RoleDriver) -> bool:
        step = role.next_step()
        return step is not None and step.name != before

    try:
        while any(pending(role) for role in roles):
            moved, waiting = False, []
            for role in filter(pending, roles):
                step = role.next_step()
                assert step is not None
                try:
                    inputs = role.gather(step)
                except MissingMessageError as exc:
                    waiting.append(exc)
                    continue
                role.execute(step, inputs)
                bar.set_postfix_str(step.name, refresh=False)
                bar.update()
                moved = True
            if not moved:
                raise MessageError(f"the run cannot go on: {waiting[0]}")
    finally:
        bar.close()
    seconds: dict[str, float] = {}
    for role in roles:
        for name, s in role.timed().items():
            seconds[name] = seconds.get(name, 0.0) + s
    return seconds


@dataclass
class LocalRun:
    """A whole run's drivers in one process: the server's and each party's."""

    server: ServerDriver
    parties: list[PartyDriver]

    def run(self, *, progress: bool = False, before: str | None = None) -> dict[str, float]:
        """:func:`run_in_process` over every role (the server first)."""
        return run_in_process([self.server, *self.parties], progress=progress, before=before)

    def fitted(self, seconds: Mapping[str, float]) -> VerticalModel:
        """The server's model, its report timed by ``seconds`` and each party's own steps,
        with the bytes each party sent."""
        timed = dict(seconds)
        for driver in self.parties:
            timed.update({f"{driver.name} {k}": v for k, v in driver.party.timings.items()})
        sizes = {d.name: d.sent_bytes for d in self.parties}
        return self.server.fitted(seconds=timed, message_bytes=sizes)


def local_run(
    data: Mapping[str, pd.DataFrame],
    config: ProtocolConfig,
    secret: bytes,
    *,
    seed: int | None = None,
    id_column: str = "id",
    message_dir: str | os.PathLike | None = None,
    state_dir: str | os.PathLike | None = None,
    keys: Mapping[str, KeyPair] | None = None,
    server_key: KeyPair | None = None,
    progress: bool = False,
) -> LocalRun:
    """The drivers of every role, each party with its ``data`` (its ID column and its
    columns) and its key pair in ``keys`` (default: fresh ones), over one in-process
    transport, or over the directory transport in ``message_dir`` (``message_dir/<role>``
    is each role's inbox). With ``state_dir``, each party's private state lives in
    ``state_dir/<party>``. The server's deal derives from ``server_key`` (default: a fresh
    secret), so a re-run with the same keys and seed writes the same bytes. A seeded run's
    default keys come from the seed (:func:`~vertimrf.protocol.seeds.seeded_key`), so it
    writes the same bytes with no keys given."""
    setup = run_setup(config)  # checked once, for every role
    secure = setup.method.secure_product
    if keys is None:
        keys = {p.name: _keypair(p.name, seed) for p in config.parties} if secure else {}
    if server_key is None and secure and seed is not None and config.identities is None:
        server_key = _keypair(SERVER, seed)
    public = {name: k.public() for name, k in keys.items()}
    shared = InProcessTransport()

    def transport(role: str) -> Transport:
        if message_dir is None:
            return shared
        return DirectoryTransport(Path(message_dir) / role, message_dir)

    server = ServerDriver(
        setup, transport(SERVER), public_keys=public if secure else None, keypair=server_key,
        seed=seed, progress=progress,
    )  # fmt: skip
    parties = [
        PartyDriver(
            Party(
                p.name, data[p.name], setup, secret, keypair=keys.get(p.name),
                peers={q: k for q, k in public.items() if q != p.name} if secure else None,
                id_column=id_column, seed=seed, progress=progress,
            ),
            transport(p.name),
            state_dir=None if state_dir is None else Path(state_dir) / p.name,
        )
        for p in config.parties
    ]  # fmt: skip
    return LocalRun(server, parties)


def _keypair(name: str, seed: int | None) -> KeyPair:
    """A fresh key pair for ``name``, or its seeded run's (experiments only)."""
    if seed is None:
        return KeyPair.generate(name)
    return KeyPair.from_private_bytes(name, seeded_key(seed, name))
