"""What a run's messages show of its schedule (:mod:`vertimrf.protocol.schedule`, whose
phases these read): :func:`waiting_on` names the step the run waits for and the roles that
have yet to send, :func:`observed_seconds` times the parties' steps as their messages'
arrival shows them, and :func:`sent_bytes` sums each party's bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.schedule import Message, Phase
from vertimrf.protocol.seeds import SERVER


def waiting_on(phases: Sequence[Phase], held: set[Message]) -> tuple[str, list[str]]:
    """The first step with a message not ``held`` and the roles yet to send one; every
    message held: the last step (the server's ``synthesize``) and its roles, at work on it."""
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
