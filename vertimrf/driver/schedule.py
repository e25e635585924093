"""The run's schedule: its steps in the order the roles take them, each with the messages it
sends, from the config alone.

The steps by method (the drivers' steps, :mod:`vertimrf.driver.party` and
:mod:`vertimrf.driver.server`, as the whole run meets them):

* "secure", select pipeline: the parties' ``commit``, the server's ``deal``, the parties'
  ``features`` (a blob to each peer) and ``release``, the server's ``select`` (the request
  and the round-2 deals), the parties' ``groups`` and ``measure``, the server's ``fit``;
* "secure", paper pipeline: the parties' ``release`` (the count party's count to its peers,
  then every party's local message), ``commit``, the server's ``deal``, the parties'
  ``features`` and ``cross release``, the server's ``fit``;
* "fo" and "fm": the parties' ``release`` (count, then local messages), the server's ``fit``.

From the messages a run holds, :func:`waiting_on` names the step the run waits for and the
roles that have yet to send, and :func:`observed_seconds` times the parties' steps as their
messages' arrival shows them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from vertimrf.driver.transport import Message
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.methods import rules
from vertimrf.protocol.seeds import SERVER


@dataclass(frozen=True)
class Phase:
    """One step of the run: its name, the roles that take it, and the messages they send
    in it (none: the server's ``fit``, which ends the run)."""

    step: str
    roles: tuple[str, ...]
    messages: tuple[Message, ...]


def schedule(config: ProtocolConfig) -> tuple[Phase, ...]:
    """The run's steps in order, each with the messages it sends."""
    kind = rules(config)
    names = tuple(p.name for p in config.parties)

    def to_server(step: str, kind: str) -> Phase:
        return Phase(step, names, tuple(Message(n, SERVER, kind) for n in names))

    def to_parties(step: str, *kinds: str) -> Phase:
        messages = tuple(Message(SERVER, n, k) for k in kinds for n in names)
        return Phase(step, (SERVER,), messages)

    def to_peers(step: str, kind: str) -> Phase:
        messages = tuple(Message(n, q, kind) for n in names for q in names if q != n)
        return Phase(step, names, messages)

    fit = Phase("fit", (SERVER,), ())
    if kind.selects:
        return (
            to_server("commit", "commit"),
            to_parties("deal", "deal"),
            to_peers("features", "blob"),
            to_server("release", "select"),
            to_parties("select", "request", "group-deal"),
            to_peers("groups", "group-blob"),
            to_server("measure", "measure"),
            fit,
        )
    count = config.count_party
    counts = Phase(
        "release", (count,), tuple(Message(count, q, "count") for q in names if q != count)
    )
    local = (counts, to_server("release", "local"))
    if not kind.secure_product:
        return (*local, fit)
    return (
        *local,
        to_server("commit", "commit"),
        to_parties("deal", "deal"),
        to_peers("features", "blob"),
        to_server("cross release", "cross"),
        fit,
    )


def waiting_on(phases: Sequence[Phase], held: set[Message]) -> tuple[str, list[str]]:
    """The first step with a message not ``held`` and the roles yet to send one; every
    message held: the last step (the server's ``fit``) and its roles, at work on it."""
    for phase in phases:
        senders = {m.sender for m in phase.messages if m not in held}
        if senders:
            return phase.step, [r for r in phase.roles if r in senders]
    return phases[-1].step, list(phases[-1].roles)


def observed_seconds(phases: Iterable[Phase], arrived: Mapping[Message, float]) -> dict[str, float]:
    """The seconds each of the parties' steps took, as its messages' ``arrived`` times show:
    from the last arrival of the steps before it (the first step: from its own first) to
    its own last. A step none of whose messages was seen is left out."""
    seconds: dict[str, float] = {}
    last: float | None = None
    for phase in phases:
        times = [arrived[m] for m in phase.messages if m in arrived]
        if not times:
            continue
        if SERVER not in phase.roles:
            start = min(times) if last is None else last
            seconds[phase.step] = seconds.get(phase.step, 0.0) + max(0.0, max(times) - start)
        last = max(times) if last is None else max(last, *times)
    return seconds


def sent_bytes(config: ProtocolConfig, sizes: Mapping[Message, int]) -> dict[str, int]:
    """The bytes each party sent, of the messages in ``sizes``."""
    sent = {p.name: 0 for p in config.parties}
    for message, size in sizes.items():
        if message.sender in sent:
            sent[message.sender] += size
    return sent
