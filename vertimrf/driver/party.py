"""PartyDriver: one data holder's steps over a transport, with its private
state; design notes in docs/design/service.md."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import partial

from vertimrf.driver import codec
from vertimrf.driver.role import Body, LazyMapping, Materialised, Outputs, RoleDriver, Step
from vertimrf.driver.state import PartyState, run_folder
from vertimrf.driver.transport import Outgoing, Payload, Streamed, Transport
from vertimrf.errors import ConfigError
from vertimrf.party.roles import Party
from vertimrf.party.secure import SealedBlobs
from vertimrf.protocol.schedule import Kind, Message
from vertimrf.protocol.secure.marginals import Request
from vertimrf.protocol.secure.plan import MEASURE, SELECT
from vertimrf.protocol.seeds import SERVER

# Inputs that must be the same in every step of a run (another deal gives shares that do
# not add up, silently).
_PINNED = frozenset({Kind.DEAL, Kind.SELECT_DEAL})


class PartyDriver(RoleDriver):
    """Runs ``party``'s steps over ``transport``; its private state in ``state_dir``
    (default: this object only)."""

    def __init__(
        self,
        party: Party,
        transport: Transport,
        *,
        state_dir: str | os.PathLike | None = None,
    ) -> None:
        super().__init__(transport)
        self.party, self.name = party, party.name
        cfg = party.config
        self._hash = cfg.config_hash()
        self._names = [p.name for p in cfg.parties]
        self._peers = [q for q in self._names if q != self.name]
        self._schedule, self._plan = party.setup.schedule, party.setup.plan
        self.state: PartyState | None = None
        if state_dir is not None:
            party.keep_aligned(run_folder(state_dir, self._hash) / "aligned")  # aligned once
            self.state = PartyState(state_dir, self.name, self._hash, party.data_digest())
        self._steps = self._make_steps()
        self._computed: set[str] = set()  # the steps run in this process (not resent)

    def __repr__(self) -> str:
        return f"PartyDriver({self.name!r}, done={self.done})"

    def _make_steps(self) -> tuple[Step, ...]:
        schedule, me = self._schedule, self.name
        bodies: dict[str, Body] = {  # each step by the kind it sends, whose name it shares
            Kind.LOCAL: self._local,
            Kind.COMMIT: self._commit,
            Kind.TOKENS: self._tokens,
            Kind.FEATURES: self._features,
            Kind.RELEASE: self._release,
            Kind.GROUPS: self._groups,
            Kind.MEASURE: self._measure,
            Kind.REPLY: self._reply,
            Kind.GROUP_REPLY: self._group_reply,
        }
        return tuple(
            Step(
                s.name,
                schedule.inputs(s.name, me),
                bodies[s.name],
                lazy=schedule.lazy(s.name, me),
                # not a prerequisite: the deal carries the commitment, which features checks
                prerequisite=s.name != Kind.COMMIT,
            )
            for s in schedule.steps(me)
        )

    def _from_server(self, kind: Kind) -> Message:
        """The ``kind`` message to this party from the server (or an own dealer)."""
        return Message(self._schedule.sender(kind), self.name, kind)

    def _to_server(self, kind: Kind, data: bytes | Streamed) -> Outputs:
        """This party's ``kind`` message to the server (or an own dealer)."""
        return {Message(self.name, self._schedule.receiver(kind), kind): data}

    # ------------------------------------------------------------------ running
    def recorded(self, step: Step) -> Mapping[Message, Outgoing] | None:
        """What ``step`` sent (the kept copies), if the state records it as done."""
        if self.state is None or step.name not in self.state.steps:
            return None
        return self.state.sent(step.name, self.name)

    def keep(self, step: Step, outputs: Outputs) -> Mapping[Message, Outgoing]:
        """Record ``step`` and its outputs in the state before they leave: what is sent is
        then the kept copies, read in chunks (a blob is written to its copy as it is sealed, so
        the features and groups steps never hold one whole); without a state, the outputs
        made in memory."""
        self._computed.add(step.name)
        if self.state is None:
            return Materialised(outputs)
        return self.state.record(step.name, outputs)

    def gather(self, step: Step) -> Mapping[Message, Payload]:
        """The step's inputs; the deal must be the one this party's state recorded first
        (it is recorded with the step)."""
        inputs = super().gather(step)
        if self.state is not None:
            for message, data in inputs.items():
                if message.kind in _PINNED:
                    self.state.pin(message, data)
        return inputs

    def run_step(self, name: str) -> None:
        """Run the step ``name`` alone (a step command's); with a state, after the steps
        before it are recorded there."""
        if self.state is not None:
            for step in self.steps():
                if step.name == name:
                    break
                if step.prerequisite and step.name not in self.state.steps:
                    raise ConfigError(
                        f"{self.state.folder} records no {step.name!r} step of party "
                        f"{self.name!r} in this run: run it first, with the same state folder."
                    )
        super().run_step(name)

    # ------------------------------------------------------------------ step bodies
    def _local(self, inputs: Mapping[Message, Payload]) -> Outputs:
        party, count = self.party, None
        out: dict[Message, bytes | bytearray] = {}
        if inputs:
            (data,) = inputs.values()
            count = codec.read_count(data, self._hash)
        else:
            count = party.release_count()
            for q in self._peers:
                out[Message(self.name, q, Kind.LOCAL_COUNT)] = codec.count_bytes(count, self._hash)
        message = party.release(noisy_count=count)
        return {**out, **self._to_server(Kind.LOCAL, codec.message_bytes(message))}

    def _commit(self, inputs: Mapping[Message, Payload]) -> Outputs:
        if self.party.secure is None:  # the paper pipeline, its local release resent
            self._resume_local()
        return self._to_server(Kind.COMMIT, self.party.commit())

    def _tokens(self, inputs: Mapping[Message, Payload]) -> Outputs:
        (admit,) = inputs.values()
        size, write = self.party.token_message(bytes(admit))
        return self._to_server(Kind.TOKENS, Streamed(size, write))

    def _features(self, inputs: Mapping[Message, Payload]) -> Outputs:
        if self.party.secure is None:  # the paper pipeline, its local release resent
            self._resume_local()
        deal = bytes(inputs[self._from_server(Kind.DEAL)])
        blobs = self.party.features(deal, self._slot_map(inputs))
        return {**_streamed(blobs, self.name, Kind.FEATURES), **self._coins(Kind.FEATURES)}

    def _coins(self, step: str) -> Outputs:
        """cross_noise "coins": the coin blob of the release this step serves, for each
        peer, where the schedule has the step send them (none otherwise)."""
        kinds = {s.kind for s in self._schedule.step(step).sends}
        kind = next((k for k in (Kind.FEATURES_COINS, Kind.GROUPS_COINS) if k in kinds), None)
        if kind is None:
            return {}
        release = SELECT if kind == Kind.FEATURES_COINS else MEASURE
        return _streamed(self.party.coins(release), self.name, kind)

    def _slot_map(self, inputs: Mapping[Message, Payload]) -> Callable[[], Payload] | None:
        """Partial record sets: a function receiving the deal's slot map (a large one
        arrives mapped and is read by blocks), called only when the records are laid out."""
        message = self._from_server(Kind.DEAL_SLOTS)
        return partial(inputs.__getitem__, message) if message in inputs else None

    def _resume_local(self) -> None:
        """Set up the secure product on the bins of the local message the state keeps."""
        assert self.state is not None
        kept = self.state.sent(Kind.LOCAL, self.name)
        local = kept[Message(self.name, SERVER, Kind.LOCAL)].read()
        self.party.resume_release(codec.read_message(local, self.party.config))

    def _blobs(self, inputs: Mapping[Message, Payload]) -> Mapping[str, Payload]:
        """The peers' blobs by sender, read from ``inputs`` on each access (the release
        decrypts one at a time into a fresh array, so a mapped blob is neither copied nor
        kept); when the features were sent by an earlier process, the deal is reopened
        first."""
        if Kind.FEATURES not in self._computed:
            if self.party.secure is None:
                self._resume_local()
            self._open_deal(inputs)
        return _by_sender(inputs, Kind.FEATURES)

    def _open_deal(self, inputs: Mapping[Message, Payload]) -> None:
        """Reopen the deal, unless a step of this process has."""
        assert self.party.secure is not None
        if not self._computed & {Kind.FEATURES, Kind.REPLY, Kind.RELEASE, Kind.GROUPS}:
            deal = bytes(inputs[self._from_server(Kind.DEAL)])
            self.party.secure.open_deal(deal, self._slot_map(inputs))

    def _reply(self, inputs: Mapping[Message, Payload]) -> Outputs:
        blobs, coins = self._blobs(inputs), _by_sender(inputs, Kind.FEATURES_COINS)
        return _streamed(self.party.replies(blobs, coins), self.name, Kind.REPLY)

    def _release(self, inputs: Mapping[Message, Payload]) -> Outputs:
        blobs = self._blobs(inputs)
        coins, replies = (_by_sender(inputs, k) for k in (Kind.FEATURES_COINS, Kind.REPLY))
        release = self.party.secure_release(blobs, coins, replies)
        if self.state is not None and self._schedule.takes(Kind.MEASURE, self.name):
            assert self.party.secure is not None  # the shares, for the measure step
            self.party.secure.save_state(self.state.shares)
        return self._to_server(Kind.RELEASE, codec.release_bytes(release))

    def _request(self, inputs: Mapping[Message, Payload]) -> Request:
        assert self._plan is not None
        return codec.read_request(inputs[self._from_server(Kind.SELECT)], self._plan, self._hash)

    def _groups(self, inputs: Mapping[Message, Payload]) -> Outputs:
        self._open_deal(inputs)
        deal = bytes(inputs[self._from_server(Kind.SELECT_DEAL)])
        blobs = self.party.groups(deal, self._request(inputs))
        return {**_streamed(blobs, self.name, Kind.GROUPS), **self._coins(Kind.GROUPS)}

    def _group_reply(self, inputs: Mapping[Message, Payload]) -> Outputs:
        if Kind.GROUPS not in self._computed:  # a new process: reopen both deals
            self._open_deal(inputs)
            deal = bytes(inputs[self._from_server(Kind.SELECT_DEAL)])
            assert self.party.secure is not None
            self.party.secure.open_group_deal(deal, self._request(inputs))
        kinds = (Kind.FEATURES, Kind.GROUPS, Kind.GROUPS_COINS)
        blobs, groups, coins = (_by_sender(inputs, k) for k in kinds)
        replies = self.party.group_replies(blobs, groups, coins)
        return _streamed(replies, self.name, Kind.GROUP_REPLY)

    def _measure(self, inputs: Mapping[Message, Payload]) -> Outputs:
        assert self._plan is not None and self.party.secure is not None
        secure = self.party.secure
        if Kind.RELEASE not in self._computed and self.state is not None:  # a new process
            secure.load_state(self.state.checked_shares())
        request = self._request(inputs)
        layout = self._plan.layout(request.marginals)
        p = self._plan.party_index(self.name)
        grows = any(layout.grows(a, b) for a, b in self._plan.pairs() if p in (a, b))
        if Kind.GROUPS not in self._computed:  # a new process: the round-2 deal keys the noise
            if grows or secure.records.from_deal:  # partial sets: the slots are in it
                self._open_deal(inputs)
            secure.open_group_deal(bytes(inputs[self._from_server(Kind.SELECT_DEAL)]), request)
        kinds = (Kind.FEATURES, Kind.GROUPS, Kind.GROUPS_COINS, Kind.GROUP_REPLY)
        blobs, group_blobs, coins, replies = (_by_sender(inputs, kind) for kind in kinds)
        release = self.party.measure(request, blobs, group_blobs, coins, replies)
        return self._to_server(Kind.MEASURE, codec.release_bytes(release))


def _streamed(blobs: SealedBlobs, sender: str, kind: Kind) -> Outputs:
    """Each peer's blob as a Streamed message, sealed as it is written."""
    return {
        Message(sender, q, kind): Streamed(blobs.nbytes(q), partial(blobs.write, q)) for q in blobs
    }


def _by_sender(inputs: Mapping[Message, Payload], kind: Kind) -> Mapping[str, Payload]:
    """The peers' messages of ``kind`` among ``inputs`` (blobs, or coin blobs: none with
    split noise, whose steps read none), by sender, each read from ``inputs`` when used."""
    senders = {m.sender: m for m in inputs if m.kind == kind}
    return LazyMapping(senders, lambda sender: inputs[senders[sender]])
