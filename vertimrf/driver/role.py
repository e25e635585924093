"""A role as a state machine over its protocol steps, each step reading its input messages
from a transport, computing, and sending its output messages."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from vertimrf.driver.transport import (
    Outgoing,
    Payload,
    Stored,
    Streamed,
    Transport,
    file_sha256,
    nbytes,
)
from vertimrf.errors import ConfigError, StepError, VertimrfError
from vertimrf.logs import progress_bar
from vertimrf.protocol.schedule import Kind, Message

if TYPE_CHECKING:
    from vertimrf.driver.server_state import ServerState
    from vertimrf.protocol.setup import RunSetup

# A step's outputs: the messages to send (a mapping may make a large one when it is read;
# a Streamed one is written to a party's kept copy as it is made, see materialised; a
# Stored one, the server's slot maps, is sent from its file).
Outputs = Mapping[Message, bytes | bytearray | Streamed | Stored]
Body = Callable[[Mapping[Message, Payload]], Outputs]
K = TypeVar("K")
V = TypeVar("V")


class LazyMapping(Mapping[K, V]):
    """A mapping of ``keys`` whose value under each is ``get(key)``, made each time it is
    read, so that nothing large is made or kept before then."""

    def __init__(self, keys: Collection[K], get: Callable[[K], V]) -> None:
        self._keys, self._get = keys, get

    def __getitem__(self, key: K) -> V:
        return self._get(key)  # KeyError for a key not in ``keys``

    def __iter__(self) -> Iterator[K]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys  # without reading the value


class Materialised(LazyMapping[Message, bytes | bytearray | Stored]):
    """A step's outputs with each Streamed one made in memory when it is read (for a role
    that keeps no copy: a transport is never handed a Streamed message)."""

    def __init__(self, outputs: Outputs) -> None:
        def made(message: Message) -> bytes | bytearray | Stored:
            data = outputs[message]
            return data.read() if isinstance(data, Streamed) else data

        super().__init__(outputs, made)


class Inputs(LazyMapping[Message, Payload]):
    """A step's input messages, each received once up front (so a missing one raises
    before the step runs). A message the transport hands out as a mapped view is not kept:
    it is received (mapped) again on each access, so that a step reading several large
    messages in turn holds one at a time, as a separate command per step would. The step's
    ``lazy`` messages are not received up front, only when (and each time) they are read."""

    def __init__(
        self, transport: Transport, messages: tuple[Message, ...], lazy: tuple[Message, ...] = ()
    ) -> None:
        held: dict[Message, bytes | None] = {}
        for m in messages:
            data = transport.receive(m)
            held[m] = data if isinstance(data, bytes) else None
        held.update(dict.fromkeys(lazy))  # received only if the step reads them

        def received(message: Message) -> Payload:
            data = held[message]
            return transport.receive(message) if data is None else data

        super().__init__(held, received)


def at_step(step: str | None) -> str:
    """Where a role is: ``step NAME``, or before its first step."""
    return "before its first step" if step is None else f"step {step}"


def unexpected(role: str, step: str | None, exc: BaseException) -> StepError:
    """An exception vertimrf does not raise on purpose, in ``role`` at ``step``, as one
    line: a StepError saying it is a bug."""
    what = str(exc).splitlines()[0] if str(exc) else ""
    return StepError(
        f"{role}, {at_step(step)}: unexpected {type(exc).__name__}{': ' + what if what else ''}"
        ". This is a bug in vertimrf: please report it with the command and the config (not "
        "the data)."
    )


def failure_report(role: str, step: str | None, exc: BaseException) -> str:
    """What ``role`` tells the others when its run fails at ``step`` with ``exc``: the
    step and why, one line (the role is named by whoever relays it)."""
    where = at_step(step)
    return f"{where}: {str(exc).removeprefix(f'{role}, {where}: ')}"


@dataclass(frozen=True)
class Step:
    """One protocol step: its name, the messages it needs and what it does with them."""

    name: str
    inputs: tuple[Message, ...]
    body: Body
    lazy: tuple[Message, ...] = ()  # inputs the body may not read: received when read
    prerequisite: bool = True  # a later step command needs it recorded in the state first


class RoleDriver:
    """Runs one role's steps in order over a transport (subclasses define the steps, as
    ``_steps``).

    ``sent_bytes`` counts what the role sent; ``seconds`` holds each step's time (or the
    sub-phases a step timed itself, in ``phase_seconds``, for the steps in
    ``timed_inside``).
    """

    name: str
    timed_inside: frozenset[str] = frozenset()
    _steps: tuple[Step, ...]  # set by each subclass

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.done: list[str] = []
        self.sent_bytes = 0
        self.seconds: dict[str, float] = {}
        self.phase_seconds: dict[str, float] = {}
        self.step: str | None = None  # the step gathering or running, or the last one run

    def steps(self) -> tuple[Step, ...]:
        """The role's steps, in order."""
        return self._steps

    def timed(self) -> dict[str, float]:
        """The seconds of each step run, or of the sub-phases of a step timed inside."""
        seconds = {k: v for k, v in self.seconds.items() if k not in self.timed_inside}
        return {**seconds, **self.phase_seconds}

    def next_step(self) -> Step | None:
        """The first step not yet run, or None when the role is done."""
        for step in self.steps():
            if step.name not in self.done:
                return step
        return None

    def recorded(self, step: Step) -> Mapping[Message, Outgoing] | None:
        """What ``step`` sent in an earlier run of this role, if it is recorded as done
        (then it is resent, not run again); None here (a role that keeps no state)."""
        return None

    def keep(self, step: Step, outputs: Outputs) -> Mapping[Message, Outgoing]:
        """Called with ``step``'s outputs before they are sent; what to send (here the
        outputs themselves, made in memory: a role that keeps no state)."""
        return Materialised(outputs)

    def gather(self, step: Step) -> Mapping[Message, Payload]:
        """The step's input messages (MissingMessageError if one has not arrived; see
        :class:`Inputs`); none for a step already recorded."""
        self.step = step.name
        if self.recorded(step) is not None:
            return {}
        return Inputs(self.transport, step.inputs, step.lazy)

    def execute(self, step: Step, inputs: Mapping[Message, Payload]) -> None:
        """Run the step on its inputs, :meth:`keep` its outputs and send them; a recorded
        step is not run again: what it sent is resent."""
        start = time.perf_counter()
        self.step = step.name
        resent = self.recorded(step)
        if resent is None:
            self.send(self.keep(step, self._body(step, inputs)))  # dropped once kept
        else:
            self.send(resent)
        self.done.append(step.name)
        self.seconds[step.name] = self.seconds.get(step.name, 0.0) + time.perf_counter() - start

    def _body(self, step: Step, inputs: Mapping[Message, Payload]) -> Outputs:
        """The step's outputs; an exception vertimrf does not raise on purpose becomes one
        line naming the role and the step (:class:`StepError`), which the commands send to
        the other roles like any error."""
        try:
            return step.body(inputs)
        except VertimrfError:
            raise
        except Exception as exc:
            raise unexpected(self.name, step.name, exc) from exc

    def send(self, outputs: Mapping[Message, Outgoing]) -> None:
        """Send each output message, counting its bytes."""
        for message, data in outputs.items():
            self.transport.send(message, data)
            self.sent_bytes += nbytes(data)
            del data

    def run_step(self, name: str) -> None:
        """Run the step ``name`` alone over the transport (or resend it, if recorded): a
        step command's one step; the steps before it are the caller's (or the state's)."""
        for step in self.steps():
            if step.name == name:
                self.execute(step, self.gather(step))
                return
        names = [s.name for s in self.steps()]
        raise ConfigError(f"{self.name} has no step {name!r} in this method; its steps: {names}.")

    def run(self, *, progress: bool | None = False) -> None:
        """Run every remaining step, each waiting for its inputs as the transport allows,
        then wait until everything sent is delivered; ``progress`` shows a bar over the
        steps (None: only on a terminal)."""
        bar = progress_bar(total=len(self.steps()), desc=f"vertimrf {self.name}", progress=progress)
        bar.update(len(self.done))
        try:
            while (step := self.next_step()) is not None:
                bar.set_postfix_str(step.name)
                self.execute(step, self.gather(step))
                bar.update()
            self.transport.flush()
        finally:
            bar.close()


class KeptDriver(RoleDriver):
    """A role that records its steps in ``state`` (a
    :class:`~vertimrf.driver.server_state.ServerState`, or None: this object only): a step
    it recorded is resent, and a running step's inputs are kept for its ``keep``."""

    name: str
    state: ServerState | None

    def __init__(self, transport: Transport, setup: RunSetup) -> None:
        super().__init__(transport)
        self._names = [p.name for p in setup.config.parties]
        self._hash, self._schedule = setup.config.config_hash(), setup.schedule
        self._inputs: Mapping[Message, Payload] = {}
        self._computed: set[str] = set()  # the steps run in this process (not resent)

    def _to_parties(self, kind: str, data: Mapping[str, bytes | bytearray | Stored]) -> Outputs:
        """One ``kind`` message from this role to each party, its ``data`` by name."""
        return {Message(self.name, n, kind): data[n] for n in self._names}

    def _slot_maps(self, maps: Mapping[str, Path]) -> Outputs:
        """Partial record sets: each party's slot map (a file, sent from disk), none without."""
        slots = {n: Stored(p, file_sha256(p), p.stat().st_size) for n, p in maps.items()}
        return self._to_parties(Kind.DEAL_SLOTS, slots) if slots else {}

    def _make_steps(self, bodies: Mapping[str, Body]) -> tuple[Step, ...]:
        """This role's steps in the run's schedule, each run by its body in ``bodies``."""
        return tuple(
            Step(s.name, self._schedule.inputs(s.name, self.name), bodies[s.name])
            for s in self._schedule.steps(self.name)
        )

    def recorded(self, step: Step) -> Mapping[Message, Outgoing] | None:
        """What ``step`` sent, if the state records it as done."""
        if self.state is None or step.name not in self.state.steps:
            return None
        return self.state.sent(step.name)

    def execute(self, step: Step, inputs: Mapping[Message, Payload]) -> None:
        """Run (or resend) ``step``, its inputs kept for :meth:`keep`."""
        self._inputs = inputs
        try:
            super().execute(step, inputs)
        finally:
            self._inputs = {}
