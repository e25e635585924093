"""DealerDriver: an own dealer's steps over a transport (config
``dealer="own"``); design notes in docs/design/service.md."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from vertimrf.crypto.keys import KeyPair, PublicKey
from vertimrf.driver import codec
from vertimrf.driver.role import KeptDriver, Materialised, Outputs, Step
from vertimrf.driver.server_state import ServerState
from vertimrf.driver.transport import Outgoing, Payload, Transport
from vertimrf.errors import ConfigError, MessageError
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.schedule import Kind, Message
from vertimrf.protocol.secure.commit import admit_bytes, read_commit
from vertimrf.protocol.secure.tokens import TokenList
from vertimrf.protocol.seeds import DEALER, seeded_stream
from vertimrf.protocol.setup import RunSetup, run_setup
from vertimrf.server.secure.dealer import Dealer
from vertimrf.server.secure.record_sets import record_sets

ROUND_TWO = "select-deal"  # the dealer's step after the server's select


class DealerDriver(KeptDriver):
    """Runs an own dealer's steps over ``transport``, under its ``keypair`` (pinned in the
    config); every party's public key is the config's; ``seed`` (experiments only) seeds
    the slot assignment's streams; its run state in ``state_dir`` (default: this object)."""

    name = DEALER

    def __init__(
        self,
        config: ProtocolConfig | RunSetup,
        transport: Transport,
        *,
        keypair: KeyPair,
        seed: int | None = None,
        state_dir: str | os.PathLike | None = None,
    ) -> None:
        setup = run_setup(config)
        super().__init__(transport, setup)
        config, plan = setup.config, setup.plan
        if config.dealer_role != DEALER or plan is None:
            raise ConfigError("a dealer of its own needs method 'secure' with dealer='own'.")
        self.config, self._plan, self._keypair = config, plan, keypair
        keys = setup.keys(DEALER, keypair)
        if keys is None:
            raise ConfigError("a dealer of its own needs a config that pins every role's key.")
        self._keys: dict[str, PublicKey] = keys
        stream = keypair.local_secret() if seed is None else seeded_stream(seed, DEALER)
        self.dealer = Dealer(config, plan, keypair, stream, record_sets(plan))
        self.state = None
        if state_dir is not None:
            self.state = ServerState(state_dir, self._hash, self._names, role=DEALER)
        bodies = {Kind.ADMIT: self._admit, Kind.DEAL: self._deal, ROUND_TWO: self._group_deals}
        self._steps = self._make_steps(bodies)

    def __repr__(self) -> str:
        return f"DealerDriver(done={self.done})"

    # ------------------------------------------------------------------ running
    def keep(self, step: Step, outputs: Outputs) -> Mapping[Message, Outgoing]:
        """Record ``step``, what it received and sent (after the deal, the dealer's kept
        state) in one transaction before the outputs leave; the outputs, to be sent."""
        self._computed.add(step.name)
        outputs = Materialised(outputs)
        if self.state is not None:
            kept = self.dealer.kept() if step.name == Kind.DEAL else None
            self.state.record(step.name, self._inputs, outputs, secure_state=kept)
        return outputs

    def close(self) -> None:
        """Close the state's database, if any."""
        if self.state is not None:
            self.state.close()

    # ------------------------------------------------------------------ step bodies
    def _commitments(self, inputs: Mapping[Message, Payload]) -> dict[str, bytes]:
        return {
            m.sender: read_commit(d, self._hash, m.sender)
            for m, d in inputs.items()
            if m.kind == Kind.COMMIT
        }

    def _admit(self, inputs: Mapping[Message, Payload]) -> Outputs:
        self.dealer.record_sets.check_admit()
        admit = self.dealer.admit(self._commitments(inputs), self._keys)
        return self._to_parties(
            Kind.ADMIT, dict.fromkeys(self._names, admit_bytes(self._hash, admit))
        )

    def _deal(self, inputs: Mapping[Message, Payload]) -> Outputs:
        most = self._plan.max_tokens
        tokens = {
            m.sender: TokenList(d, self._hash, m.sender, most, self._keypair)
            for m, d in inputs.items()
            if m.kind == Kind.TOKENS
        }
        deals = self.dealer.deal(self._keys, self._commitments(inputs), tokens or None)
        out = {
            **self._to_parties(Kind.DEAL, deals),
            **self._slot_maps(self.dealer.record_sets.slot_maps()),
        }
        for m in self._schedule.sends(Kind.DEAL, DEALER):  # partial sets: the region counts
            if m.kind == Kind.DEAL_REGIONS:
                out[m] = json.dumps(self.dealer.record_sets.kept()).encode()
        return out

    def _group_deals(self, inputs: Mapping[Message, Payload]) -> Outputs:
        if Kind.DEAL not in self._computed:  # a new process: the deal's kept state
            kept = None if self.state is None else self.state.secure_state(Kind.DEAL)
            if kept is None:
                raise MessageError(
                    "the dealer's state lacks its deal: run the dealer's steps with the same "
                    "--state-dir."
                )
            self.dealer.restore(kept)
        (data,) = inputs.values()
        request = codec.read_request(data, self._plan, self._hash)
        return self._to_parties(Kind.SELECT_DEAL, self.dealer.group_deals(request, self._keys))
