"""ServerDriver: the coordinator's steps over a transport;
design notes in docs/design/service.md."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from vertimrf.crypto.keys import KeyPair, PublicKey
from vertimrf.domain import DomainSpec
from vertimrf.driver import codec
from vertimrf.driver.role import KeptDriver, Materialised, Outputs, Step
from vertimrf.driver.server_state import ServerState
from vertimrf.driver.transport import Outgoing, Payload, Transport
from vertimrf.errors import ConfigError, MessageError
from vertimrf.mrf.model import MarkovRandomField
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.report import ProtocolReport
from vertimrf.protocol.schedule import SYNTHESIZE, Kind, Message
from vertimrf.protocol.seeds import SERVER, role_seed
from vertimrf.protocol.setup import RunSetup, run_setup
from vertimrf.server.roles import Server
from vertimrf.server.secure import SecureServer
from vertimrf.vertical_model import VerticalModel
from vertimrf.within import Midpoint, Placement

# A fit's model, report and sampling generator, and how its samples decode: the placement
# of numbers inside their bins and the spec (with any quantile cuts the parties drew).
Fitted = tuple[MarkovRandomField, ProtocolReport, np.random.Generator, Placement, DomainSpec]


class ServerDriver(KeptDriver):
    """Runs the server's steps over ``transport``.

    Args:
        config: the run's config.
        transport: the server's transport.
        public_keys: method "secure": every party's public key (fingerprints compared out of
            band), by name; taken from the config when it pins identities.
        keypair: the server's key pair (default: a fresh one).
        seed: the run seed (experiments only).
        progress: show the fit's progress bars; None: only on a terminal.
        state_dir: the server's run state folder (default: this object only); a restart
            resumes from it with the same key pair and seed.
    """

    name = SERVER
    timed_inside = frozenset({SYNTHESIZE})

    def __init__(
        self,
        config: ProtocolConfig | RunSetup,
        transport: Transport,
        *,
        public_keys: Mapping[str, PublicKey] | None = None,
        keypair: KeyPair | None = None,
        seed: int | None = None,
        progress: bool | None = None,
        state_dir: str | os.PathLike | None = None,
    ) -> None:
        setup = run_setup(config)  # checked once, shared with its Server
        super().__init__(transport, setup)
        config, self._plan = setup.config, setup.plan
        public_keys = setup.keys(SERVER, keypair, public_keys)  # pinned: the config's
        if self._plan is not None and public_keys is None:
            raise ConfigError("method 'secure' needs every party's public key (public_keys=...).")
        if keypair is None:
            keypair = KeyPair.generate(SERVER)
        self.config, self.seed, self._keypair = config, seed, keypair
        self.server = Server(setup, keypair=keypair, seed=seed, progress=progress)
        self._keys = dict(public_keys or {})
        self._fitted: Fitted | None = None
        bodies = {
            Kind.ADMIT: self._admit,
            Kind.DEAL: self._deal,
            Kind.SELECT: self._select,
            SYNTHESIZE: self._synthesize,
        }
        self._steps = self._make_steps(bodies)
        self.state = None if state_dir is None else ServerState(state_dir, self._hash, self._names)
        # `server refit`: the select pipeline's fit on a model of at most this many cells
        # (0: half the selection's); None: the selection's model.
        self.refit: int | None = None

    def __repr__(self) -> str:
        return f"ServerDriver(method={self.config.method!r}, done={self.done})"

    def fitted(
        self,
        *,
        seconds: dict[str, float] | None = None,
        message_bytes: dict[str, int] | None = None,
    ) -> VerticalModel:
        """The fitted model, with ``seconds`` and ``message_bytes`` added to its report."""
        if self._fitted is None:
            raise MessageError("the server has not fitted yet: run its steps first.")
        model, report, rng, within, spec = self._fitted
        report = dataclasses.replace(
            report,
            seconds={**(seconds or {}), **report.seconds},
            message_bytes=dict(message_bytes or {}),
        )
        absent = model.domain.sizes != self.config.spec.domain.sizes  # over the union
        empty = self.config.population == "union"  # else conditioned on every party holding it
        return VerticalModel(
            model, spec, report, rng=rng, absent=absent, empty=empty, within=within
        )

    # ------------------------------------------------------------------ running
    def keep(self, step: Step, outputs: Outputs) -> Mapping[Message, Outgoing]:
        """Record ``step`` (but ``synthesize``), what it received and sent, and after ``select``
        the secure server's state, in one transaction before the outputs leave; the
        outputs, to be sent."""
        self._computed.add(step.name)
        outputs = Materialised(outputs)
        if self.state is None or step.name == SYNTHESIZE:
            return outputs
        kept = None
        secure = self.server.secure
        dealt = None if secure is None else secure.record_sets.kept()
        if step.name == Kind.DEAL and dealt is not None:
            kept = json.dumps(dealt).encode()  # for a new process's select and round 2
        if step.name == Kind.SELECT:
            assert self.server.secure is not None
            with tempfile.TemporaryDirectory(dir=self.state.path.parent) as tmp:
                path = Path(tmp) / "secure.state.vmrf"
                self.server.secure.save_state(path)
                kept = path.read_bytes()
        self.state.record(step.name, self._inputs, outputs, secure_state=kept)
        return outputs

    def _resume_select(self) -> None:
        """In a new process after ``select``: the secure server from the state kept."""
        assert self.state is not None
        kept = self.state.secure_state(Kind.SELECT)
        if kept is None:
            raise MessageError(f"{self.state.path}: the state lacks the server's select state.")
        with tempfile.TemporaryDirectory(dir=self.state.path.parent) as tmp:
            path = Path(tmp) / "secure.state.vmrf"
            path.write_bytes(kept)
            self.server.secure = SecureServer.load_state(
                self.config, path, seed=self.seed, keypair=self._keypair
            )

    def _resume_regions(self) -> None:
        """Partial record sets, in a new process after ``deal``: the published region counts
        and the slot assignment's digest kept with it."""
        secure = self.server.secure
        if secure is None or secure.record_sets.ready:
            return
        kept = None if self.state is None else self.state.secure_state(Kind.DEAL)
        if kept is None:
            raise MessageError(
                "the server's state lacks the region counts of its deal: run `server deal` "
                "and `server select` with the same --state-dir."
            )
        secure.record_sets.restore(_json(kept, "the server's kept deal state"))

    # ------------------------------------------------------------------ step bodies
    def _admit(self, inputs: Mapping[Message, Payload]) -> Outputs:
        commits = {m.sender: bytes(data) for m, data in inputs.items()}
        admit = self.server.admit(commits, self._keys)
        return self._to_parties(Kind.ADMIT, dict.fromkeys(self._names, admit))

    def _deal(self, inputs: Mapping[Message, Payload]) -> Outputs:
        commits = {m.sender: bytes(d) for m, d in inputs.items() if m.kind == Kind.COMMIT}
        tokens = {m.sender: d for m, d in inputs.items() if m.kind == Kind.TOKENS} or None
        deals = self._to_parties(Kind.DEAL, self.server.deal(self._keys, commits, tokens))
        return {**deals, **self._slot_maps(self.server.slot_maps)}

    def _releases(self, inputs: Mapping[Message, Payload], kind: Kind) -> list:
        assert self._plan is not None
        return [codec.read_release(d, self._plan) for m, d in inputs.items() if m.kind == kind]

    @property
    def _deals_round_two(self) -> bool:
        """Whether the server's select step deals round 2 (not with an own dealer)."""
        sends = self._schedule.step(Kind.SELECT).sends
        return any(s.kind == Kind.SELECT_DEAL for s in sends)

    def _select(self, inputs: Mapping[Message, Payload]) -> Outputs:
        missing = sorted(set(self._names) - set(self._keys))
        if missing and self._deals_round_two:  # before any charge: round 2 is sealed to them
            raise ConfigError(
                f"the server's select step needs the public keys of {missing} (it seals each "
                "party's round-2 deal to its key): give every party's public key."
            )
        regions = [d for m, d in inputs.items() if m.kind == Kind.DEAL_REGIONS]
        if regions and self.server.secure is not None:  # an own dealer's region counts
            self.server.secure.record_sets.restore(_json(regions[0], "the dealer's region counts"))
        self._resume_regions()
        request = self.server.select(self._releases(inputs, Kind.RELEASE))
        data = codec.request_bytes(request, self._hash)
        sent = self._schedule.sends(Kind.SELECT, SERVER)  # to the parties (and own dealer)
        request_to = dict.fromkeys((m for m in sent if m.kind == Kind.SELECT), data)
        if not self._deals_round_two:  # an own dealer deals round 2
            return request_to
        return {
            **request_to,
            **self._to_parties(Kind.SELECT_DEAL, self.server.group_deals(self._keys)),
        }

    def _synthesize(self, inputs: Mapping[Message, Payload]) -> Outputs:
        """The fit on re-measurements (the select pipeline) or on local messages."""
        if any(m.kind == Kind.MEASURE for m in inputs):
            return self._fit_secure(inputs)
        return self._fit_paper(inputs)

    def _fit_secure(self, inputs: Mapping[Message, Payload]) -> Outputs:
        if Kind.SELECT not in self._computed and self.state is not None:  # a new process
            self._resume_select()
        secure = self.server.secure
        assert secure is not None
        if self.refit is not None:
            secure.data.max_model_cells = self.refit or secure.model_cells() // 2
        start = time.perf_counter()
        rng = secure.fit(self._releases(inputs, Kind.MEASURE))
        self.phase_seconds["fit"] = time.perf_counter() - start
        model, spec = secure.data.model, secure.data.spec
        assert model is not None  # fitted
        self._fitted = model, secure.report(), rng, secure.within(), spec
        return {}

    def _fit_paper(self, inputs: Mapping[Message, Payload]) -> Outputs:
        paper = self.server.paper
        assert paper is not None
        messages = [
            codec.read_message(d, self.config) for m, d in inputs.items() if m.kind == Kind.LOCAL
        ]
        cross = self._releases(inputs, Kind.RELEASE) if self._plan is not None else None
        lap = self.phase_seconds.__setitem__  # each phase's seconds, as the fit times them
        model, report = paper.fit(messages, seed=self.seed, callback=lap, secure_releases=cross)
        rng = np.random.default_rng(None if self.seed is None else role_seed(self.seed, SERVER))
        self._fitted = model, report, rng, Midpoint(), self.config.spec
        return {}


def _json(data: Payload, what: str) -> object:
    """The JSON in ``data``, ``what`` (MessageError, one line, if it is not)."""
    try:
        return json.loads(bytes(data))
    except ValueError:
        raise MessageError(f"{what} is malformed.") from None
