"""Each method's schedule, written once: its steps, their messages, size limits
and file names; design notes in docs/design/protocol.md."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

from vertimrf.errors import ConfigError
from vertimrf.protocol.seeds import DEALER, SERVER

if TYPE_CHECKING:
    from vertimrf.protocol.config import ProtocolConfig
    from vertimrf.protocol.plan import RunPlan
    from vertimrf.protocol.secure.plan import SecurePlan

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
COUNT_BYTES = 1024  # a count message (JSON)
HEADER_SLACK = 1 << 20  # a container's headers beyond the plan's bytes
DEAL_SLACK = 1 << 20  # a deal's archive and seal beyond its Z matrices
ZIP_MAGIC = b"PK\x03\x04"
JSON_MAGIC = b"{"


class Kind(str, Enum):
    """Every message kind, each named after the step that sends it (a str: its name)."""

    LOCAL = "local"  # a party's local message, to the server
    LOCAL_COUNT = "local-count"  # the count party's noisy count, to its peers
    COMMIT = "commit"  # a party's data commitment, to the server
    ADMIT = "admit"  # partial record sets: the digest of every commitment, to each party
    TOKENS = "tokens"  # partial record sets: a party's token list, to the server
    DEAL = "deal"  # the server's sealed deal, to each party
    DEAL_SLOTS = "deal-slots"  # partial record sets: a party's slot map, to it
    DEAL_REGIONS = "deal-regions"  # an own dealer, partial sets: the region counts, to the server
    FEATURES = "features"  # a party's sealed masked features, to each peer
    FEATURES_COINS = "features-coins"  # cross_noise "coins": a party's masked coins, to each peer
    RELEASE = "release"  # a party's secure release, to the server
    SELECT = "select"  # the server's request, to each party
    SELECT_DEAL = "select-deal"  # the server's sealed round-2 deal, to each party
    GROUPS = "groups"  # a party's sealed round-2 groups, to each peer
    GROUPS_COINS = "groups-coins"  # cross_noise "coins": the re-measurement's, to each peer
    MEASURE = "measure"  # a party's re-measurement, to the server
    REPLY = "reply"  # product "paillier": the aggregator's masked reply, to each peer
    GROUP_REPLY = "group-reply"  # product "paillier": round 2's, to each peer

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


# Sealed by their sender for their receiver (AES-GCM; the receiver checks the seal when it
# opens them): the service relays them unread, and their bytes are not hashed again on the
# way (TLS guards each hop, the length a cut body); their X-Content-SHA256 is the sender's.
SEALED_KINDS = frozenset(
    {Kind.FEATURES, Kind.GROUPS, Kind.FEATURES_COINS, Kind.GROUPS_COINS, Kind.REPLY,
     Kind.GROUP_REPLY}
)  # fmt: skip
# Checksummed containers: a local message or a secure release.
CONTAINER_KINDS = frozenset({Kind.LOCAL, Kind.RELEASE, Kind.MEASURE})


@dataclass(frozen=True)
class Message:
    """The name of one message: who sends it, who receives it and what it is."""

    sender: str
    receiver: str
    kind: str

    def __post_init__(self) -> None:
        for field in (self.sender, self.receiver, self.kind):
            if not isinstance(field, str) or not _NAME.fullmatch(field):
                raise ConfigError(
                    f"{field!r} cannot name a message's role or kind: use letters, digits, "
                    "'_' and '-' (starting with a letter or digit)."
                )
        object.__setattr__(self, "kind", str(self.kind))  # a Kind as its plain name

    def __str__(self) -> str:
        return f"{self.kind} from {self.sender} to {self.receiver}"

    @property
    def file_name(self) -> str:
        """The message's file name in its receiver's inbox (a folder per receiver)."""
        return f"{self.sender}.{self.kind}"

    @property
    def step_file_name(self) -> str:
        """The message's file name among a step command's files: ``SENDER-to-RECEIVER.KIND``
        between parties (or from and to an own dealer), ``RECEIVER.KIND`` from the server,
        ``SENDER.KIND`` to it."""
        if SERVER not in (self.sender, self.receiver):
            return f"{self.sender}-to-{self.receiver}.{self.kind}"
        return f"{self.receiver if self.sender == SERVER else self.sender}.{self.kind}"


@dataclass(frozen=True)
class Limit:
    """The most bytes a message may hold (``exact``: its only size) and its first bytes."""

    limit: int
    magic: bytes = b""
    exact: bool = False


# Whom a step's message goes to: the server, an own dealer, every party, or every other party.
TO_SERVER, TO_DEALER, TO_PARTIES, TO_PEERS = SERVER, DEALER, "parties", "peers"
PARTIES = "parties"  # who takes a step: the server, the dealer, or every party


@dataclass(frozen=True)
class Send:
    """A kind a step sends, and to whom (``count_only``: only the count party sends it)."""

    kind: Kind
    to: str
    count_only: bool = False


@dataclass(frozen=True)
class StepRule:
    """One step: its name, who takes it (``by``: the server, the dealer or every party),
    what it sends, the kinds addressed to the role that it reads, and those it may read
    (``lazy``)."""

    name: str
    by: str
    sends: tuple[Send, ...] = ()
    reads: tuple[Kind, ...] = ()
    lazy: tuple[Kind, ...] = ()


@dataclass(frozen=True)
class Phase:
    """One step of a run: its name, the roles that take it, and the messages they send in
    it (none: the server's ``synthesize``, which ends the run)."""

    step: str
    roles: tuple[str, ...]
    messages: tuple[Message, ...]


def _party(
    name: str, *sends: Send, reads: tuple[Kind, ...] = (), lazy: tuple[Kind, ...] = ()
) -> StepRule:
    return StepRule(name, PARTIES, sends, reads, lazy)


def _server(name: str, *sends: Send, reads: tuple[Kind, ...] = ()) -> StepRule:
    return StepRule(name, SERVER, sends, reads)


def _dealer(name: str, *sends: Send, reads: tuple[Kind, ...] = ()) -> StepRule:
    return StepRule(name, DEALER, sends, reads)


LOCAL = _party(
    "local",
    Send(Kind.LOCAL_COUNT, TO_PEERS, count_only=True),
    Send(Kind.LOCAL, TO_SERVER),
    reads=(Kind.LOCAL_COUNT,),
)
COMMIT = _party("commit", Send(Kind.COMMIT, TO_SERVER))
DEAL = _server("deal", Send(Kind.DEAL, TO_PARTIES), reads=(Kind.COMMIT,))
# partial record sets: the admit digest, each party's tokens, then the deal and the slot map
ADMIT = _server("admit", Send(Kind.ADMIT, TO_PARTIES), reads=(Kind.COMMIT,))
TOKENS = _party("tokens", Send(Kind.TOKENS, TO_SERVER), reads=(Kind.ADMIT,))
SLOT_DEAL = _server(
    "deal", Send(Kind.DEAL, TO_PARTIES), Send(Kind.DEAL_SLOTS, TO_PARTIES),
    reads=(Kind.COMMIT, Kind.TOKENS),
)  # fmt: skip
FEATURES = _party("features", Send(Kind.FEATURES, TO_PEERS), reads=(Kind.DEAL, Kind.DEAL_SLOTS))
# the deal is read again by a later step in a new process (to reopen it); its slot map only
# when the party's layout is not kept from the features step
SLOTS = (Kind.DEAL_SLOTS,)
RELEASE = _party(
    "release", Send(Kind.RELEASE, TO_SERVER), reads=(Kind.FEATURES, Kind.DEAL), lazy=SLOTS
)
SELECT = _server(
    "select", Send(Kind.SELECT, TO_PARTIES), Send(Kind.SELECT_DEAL, TO_PARTIES),
    reads=(Kind.RELEASE,),
)  # fmt: skip
ROUND2 = (Kind.SELECT, Kind.SELECT_DEAL, Kind.DEAL)
GROUPS = _party("groups", Send(Kind.GROUPS, TO_PEERS), reads=ROUND2, lazy=SLOTS)
MEASURE = _party(
    "measure", Send(Kind.MEASURE, TO_SERVER), reads=(*ROUND2, Kind.GROUPS),
    lazy=(Kind.FEATURES, *SLOTS),
)  # fmt: skip


# An own dealer (config dealer="own"): each dealing step of the server's schedules, and the
# parties' steps that send to the dealer, as the own dealer's schedule has them.
OWN_DEALER: dict[StepRule, tuple[StepRule, ...]] = {
    COMMIT: (_party("commit", Send(Kind.COMMIT, TO_DEALER)),),
    ADMIT: (_dealer("admit", Send(Kind.ADMIT, TO_PARTIES), reads=(Kind.COMMIT,)),),
    TOKENS: (_party("tokens", Send(Kind.TOKENS, TO_DEALER), reads=(Kind.ADMIT,)),),
    DEAL: (_dealer("deal", Send(Kind.DEAL, TO_PARTIES), reads=(Kind.COMMIT,)),),
    SLOT_DEAL: (
        _dealer(
            "deal",
            Send(Kind.DEAL, TO_PARTIES),
            Send(Kind.DEAL_SLOTS, TO_PARTIES),
            Send(Kind.DEAL_REGIONS, TO_SERVER),
            reads=(Kind.COMMIT, Kind.TOKENS),
        ),
    ),
    SELECT: (
        _server(
            "select",
            Send(Kind.SELECT, TO_PARTIES),
            Send(Kind.SELECT, TO_DEALER),
            reads=(Kind.RELEASE, Kind.DEAL_REGIONS),
        ),
        _dealer("select-deal", Send(Kind.SELECT_DEAL, TO_PARTIES), reads=(Kind.SELECT,)),
    ),
}
# Each arrangement's steps from a schedule's (the server deals: as written).
DEALERS: dict[str, Callable[[tuple[StepRule, ...]], tuple[StepRule, ...]]] = {
    "server": lambda steps: steps,
    "own": lambda steps: tuple(r for s in steps for r in OWN_DEALER.get(s, (s,))),
}


def _with_coins(steps: tuple[StepRule, ...]) -> tuple[StepRule, ...]:
    """cross_noise "coins": each step that sends masked features also sends each peer its
    masked coins, and the release that uses them reads them."""
    sent = {FEATURES.name: Kind.FEATURES_COINS, GROUPS.name: Kind.GROUPS_COINS}
    read = {RELEASE.name: Kind.FEATURES_COINS, MEASURE.name: Kind.GROUPS_COINS}
    out = []
    for s in steps:
        if s.by == PARTIES and s.name in sent:
            s = replace(s, sends=(*s.sends, Send(sent[s.name], TO_PEERS)))
        if s.by == PARTIES and s.name in read:
            s = replace(s, reads=(*s.reads, read[s.name]))
        out.append(s)
    return tuple(out)


# Each cross noise's steps from a schedule's (split: as written).
CROSS_NOISES: dict[str, Callable[[tuple[StepRule, ...]], tuple[StepRule, ...]]] = {
    "split": lambda steps: steps,
    "coins": _with_coins,
}


def _with_replies(steps: tuple[StepRule, ...]) -> tuple[StepRule, ...]:
    """product "paillier": after each step that sends features, a step in which each pair's
    aggregator replies to its encrypter (the masked accumulators; with coins, from the
    encrypter's coins too), which the release that uses the product reads."""
    after = {
        FEATURES.name: _party(
            "reply", Send(Kind.REPLY, TO_PEERS), reads=(Kind.FEATURES, Kind.DEAL), lazy=SLOTS
        ),
        GROUPS.name: _party(
            "group-reply", Send(Kind.GROUP_REPLY, TO_PEERS), reads=(*ROUND2, Kind.GROUPS),
            lazy=(Kind.FEATURES, *SLOTS),
        ),
    }  # fmt: skip
    read = {RELEASE.name: Kind.REPLY, MEASURE.name: Kind.GROUP_REPLY}
    coins = {FEATURES.name: Kind.FEATURES_COINS, GROUPS.name: Kind.GROUPS_COINS}
    out = []
    for s in steps:
        if s.by == PARTIES and s.name in after and coins[s.name] in {x.kind for x in s.sends}:
            reply = after[s.name]
            after[s.name] = replace(reply, reads=(*reply.reads, coins[s.name]))
        if s.by == PARTIES and s.name in read:
            s = replace(s, reads=(*s.reads, read[s.name]))
        out.append(s)
        if s.by == PARTIES and s.name in after:
            out.append(after[s.name])
    return tuple(out)


def _as_written(steps: tuple[StepRule, ...]) -> tuple[StepRule, ...]:
    return steps


# Each product backend's steps from a schedule's (a backend not named here, e.g. the
# dealer's: as written).
PRODUCT_STEPS: dict[str, Callable[[tuple[StepRule, ...]], tuple[StepRule, ...]]] = {
    "paillier": _with_replies,
}

SYNTHESIZE = "synthesize"  # the server's last step: the fit and the sample; it sends nothing


def _synthesize(*reads: Kind) -> StepRule:
    return _server(SYNTHESIZE, reads=reads)


@dataclass(frozen=True)
class Schedule:
    """A method's schedule for one config: its steps, who sends what to whom, the size
    limits and the file names. ``secure``: the config's secure plan where the caller has
    it (derived here otherwise)."""

    config: ProtocolConfig
    secure: SecurePlan | None = None
    method: ClassVar[str]
    STEPS: ClassVar[tuple[StepRule, ...]]

    # ------------------------------------------------------------------ steps
    @property
    def names(self) -> tuple[str, ...]:
        """The parties' names."""
        return tuple(p.name for p in self.config.parties)

    @cached_property
    def rules(self) -> tuple[StepRule, ...]:
        """The run's steps: the method's, as the config's dealer arranges them
        (:data:`DEALERS`), with its plan's cross noise's messages (:data:`CROSS_NOISES`) and
        its product's steps (:data:`PRODUCT_STEPS`)."""
        noise = self._secure.cross_noise.name if self._secure is not None else "split"
        steps = CROSS_NOISES[noise](DEALERS[self.config.dealer](self.STEPS))
        return PRODUCT_STEPS.get(self.config.product, _as_written)(steps)

    @property
    def kinds(self) -> tuple[Kind, ...]:
        """The kinds this method's messages have, in the order they are first sent."""
        return tuple(dict.fromkeys(s.kind for step in self.rules for s in step.sends))

    def steps(self, role: str) -> tuple[StepRule, ...]:
        """The steps ``role`` (the server, the dealer or a party) takes, in order."""
        by = role if role in (SERVER, DEALER) else PARTIES
        return tuple(s for s in self.rules if s.by == by)

    def sender(self, kind: Kind) -> str:
        """Who sends ``kind`` to the parties (the server or the dealer; a party's kinds:
        the parties; a kind the run does not send: the dealing role)."""
        senders = (s.by for s in self.rules for send in s.sends if send.kind == kind)
        return next(senders, self.config.dealer_role)

    def receiver(self, kind: Kind) -> str:
        """Who receives the parties' ``kind`` (the server or the dealer; a kind the run
        does not send: the server)."""
        receivers = (send.to for s in self.rules for send in s.sends if send.kind == kind)
        return next(receivers, SERVER)

    def step(self, name: str) -> StepRule:
        """The step called ``name`` (ConfigError if this method has none)."""
        for s in self.rules:
            if s.name == name:
                return s
        steps = [s.name for s in self.rules]
        raise ConfigError(f"method {self.method} has no step {name!r}; its steps: {steps}.")

    def takes(self, name: str, role: str) -> bool:
        """Whether ``role`` takes a step called ``name``."""
        return any(s.name == name for s in self.steps(role))

    def _sent(self, send: Send, sender: str) -> tuple[Message, ...]:
        if send.count_only and sender != self.config.count_party:
            return ()
        if send.to in (TO_SERVER, TO_DEALER):
            receivers: tuple[str, ...] = (send.to,)
        else:
            receivers = tuple(q for q in self.names if q != sender)
        return tuple(Message(sender, r, send.kind) for r in receivers)

    def sends(self, name: str, role: str) -> tuple[Message, ...]:
        """The messages ``role`` sends in step ``name``."""
        return tuple(m for send in self.step(name).sends for m in self._sent(send, role))

    def messages(self) -> tuple[Message, ...]:
        """Every message of the run, in the order of its steps."""
        return tuple(m for phase in self.phases() for m in phase.messages)

    def _addressed(self, kinds: tuple[Kind, ...], role: str) -> tuple[Message, ...]:
        every = self.messages()
        return tuple(m for k in kinds for m in every if m.kind == k and m.receiver == role)

    def inputs(self, name: str, role: str) -> tuple[Message, ...]:
        """The messages ``role`` reads in step ``name`` (each received before it runs)."""
        return self._addressed(self.step(name).reads, role)

    def lazy(self, name: str, role: str) -> tuple[Message, ...]:
        """The messages step ``name`` of ``role`` may read (received only when read)."""
        return self._addressed(self.step(name).lazy, role)

    def phases(self) -> tuple[Phase, ...]:
        """The run's steps in order, each with the messages it sends (a step whose count
        party sends first: that party's messages as a phase of their own)."""
        out = []
        for step in self.rules:
            roles = self.names if step.by == PARTIES else (step.by,)
            first = tuple(s for s in step.sends if s.count_only)
            rest = tuple(s for s in step.sends if not s.count_only)
            if first:
                count = self.config.count_party
                out.append(Phase(step.name, (count,), self._of(first, (count,))))
            out.append(Phase(step.name, roles, self._of(rest, roles)))
        return tuple(out)

    def _of(self, sends: tuple[Send, ...], roles: tuple[str, ...]) -> tuple[Message, ...]:
        return tuple(m for send in sends for r in roles for m in self._sent(send, r))

    # ------------------------------------------------------------------ limits
    @cached_property
    def plan(self) -> RunPlan:
        """The run's plan, the limits' source."""
        from vertimrf.protocol.plan import run_plan

        return run_plan(self.config)

    @cached_property
    def _secure(self) -> SecurePlan | None:
        from vertimrf.protocol.methods import rules

        if self.secure is not None:
            return self.secure
        return rules(self.config).secure_plan(self.config)

    def limit(self, message: Message) -> Limit | None:
        """The most bytes ``message`` may hold, and its first bytes (None: unbounded)."""
        from vertimrf.protocol.secure.commit import MAX_COMMIT_BYTES
        from vertimrf.protocol.secure.features import coin_blob_bytes
        from vertimrf.protocol.secure.slot_map import slot_map_bytes
        from vertimrf.protocol.secure.tokens import TOKENS_MAGIC

        kind, plan = message.kind, self.plan
        paillier = self._paillier_limit(message)
        if paillier is not None:
            return paillier
        if kind == Kind.LOCAL_COUNT:
            return Limit(COUNT_BYTES, JSON_MAGIC)
        if kind in (Kind.COMMIT, Kind.ADMIT, Kind.DEAL_REGIONS):
            return Limit(MAX_COMMIT_BYTES, JSON_MAGIC)
        if kind == Kind.TOKENS:
            return Limit(len(TOKENS_MAGIC) + 64 + 256 + 8 * self._slot_bound(), TOKENS_MAGIC)
        if kind in (Kind.LOCAL, Kind.RELEASE, Kind.MEASURE):
            # everything its sender sends in the run; without max_rows the plan cannot
            # count a local message's rows, so the memory limit bounds it
            counted = self.config.max_rows is not None
            sends = plan.role(message.sender).sends if counted else 0
            return Limit((sends or int(plan.max_memory)) + HEADER_SLACK, ZIP_MAGIC)
        if kind == Kind.FEATURES:
            return Limit(plan.blob_bytes[message.sender], exact=True)
        if kind == Kind.GROUPS:
            return Limit(plan.group_blob_bytes[message.sender])
        if kind in (Kind.FEATURES_COINS, Kind.GROUPS_COINS):
            secure = self._secure
            assert secure is not None
            pair = (message.sender, message.receiver)
            exact = kind == Kind.FEATURES_COINS  # the first release's, fixed by the plan
            return Limit(coin_blob_bytes(secure, *pair, first=exact), exact=exact)
        if kind in (Kind.DEAL, Kind.SELECT_DEAL):  # every Z matrix of the run at the widest
            secure = self._secure
            assert secure is not None
            cells = sum(secure.max_cells(p, q) for p, q in secure.pairs())
            coins = 2 if secure.cross_noise.weight else 1  # Z_C: a word a cell
            return Limit(8 * coins * cells + DEAL_SLACK)
        if kind == Kind.DEAL_SLOTS:  # 8 bytes a token of max_tokens, and the seal
            return Limit(slot_map_bytes(self._slot_bound()), exact=True)
        return None  # the request: parsed and checked by its reader

    def _paillier_limit(self, message: Message) -> Limit | None:
        """Product "paillier": a blob of ciphertexts (round 1: exact; round 2: at most the
        groups' caps); None for another product or kind."""
        if self.config.product != "paillier":
            return None
        from vertimrf.protocol.secure import paillier

        rows_of = paillier.ROWS_BY_KIND.get(message.kind)
        if rows_of is None:
            return None
        secure = self._secure
        assert secure is not None
        rows = rows_of(
            secure, secure.party_index(message.sender), secure.party_index(message.receiver)
        )
        return Limit(paillier.blob_bytes(rows), exact=message.kind in paillier.EXACT_KINDS)

    def _slot_bound(self) -> int:
        """The most tokens (and so slots) one party may have (0 without a secure plan)."""
        return 0 if self._secure is None else self._secure.max_tokens

    def uploads(self) -> dict[tuple[str, str, str], Limit]:
        """Every message a party (or an own dealer) sends, as (sender, receiver, kind), with
        its limit (the server's own are written by the server's run, never uploaded)."""
        out = {}
        for m in self.messages():
            limit = self.limit(m)
            if m.sender != SERVER and limit is not None:
                out[m.sender, m.receiver, m.kind] = limit
        return out

    def bytes_limit(self, message: Message) -> int | None:
        """The most bytes ``message``'s file may hold (None: unbounded)."""
        limit = self.limit(message)
        return None if limit is None else limit.limit


class SelectSchedule(Schedule):
    """Method "secure", the select pipeline."""

    method = "secure/select"
    STEPS = (COMMIT, DEAL, FEATURES, RELEASE, SELECT, GROUPS, MEASURE, _synthesize(Kind.MEASURE))


class PartialSelectSchedule(Schedule):
    """Method "secure", the select pipeline, when the parties' record sets differ: the
    server admits the commitments, the parties send their tokens, and the deal comes with
    each party's slot map (docs/protocol.md)."""

    method = "secure/select/partial"
    STEPS = (
        COMMIT, ADMIT, TOKENS, SLOT_DEAL, FEATURES, RELEASE, SELECT, GROUPS, MEASURE,
        _synthesize(Kind.MEASURE),
    )  # fmt: skip


class PaperSchedule(Schedule):
    """Method "secure", the paper pipeline."""

    method = "secure/paper"
    STEPS = (LOCAL, COMMIT, DEAL, FEATURES, RELEASE, _synthesize(Kind.LOCAL, Kind.RELEASE))


class FOSchedule(Schedule):
    """Method "fo"."""

    method = "fo"
    STEPS = (LOCAL, _synthesize(Kind.LOCAL))


class FMSchedule(FOSchedule):
    """Method "fm" (the steps of "fo")."""

    method = "fm"


def schedule(config: ProtocolConfig, secure: SecurePlan | None = None) -> Schedule:
    """The schedule of ``config``'s method (and record sets):
    :meth:`vertimrf.protocol.methods.Method.schedule`; ``secure``: its secure plan, if the
    caller has it."""
    from vertimrf.protocol.methods import rules, strategy

    return strategy(Schedule, rules(config).schedule(config), "method")(config, secure)
