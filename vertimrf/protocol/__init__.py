"""What every role agrees on: the config that pins a run, its budget split, the message schema
and container, and the report. Importing it imports no Numba code."""

from vertimrf.protocol.autot import choose_t
from vertimrf.protocol.config import PartySpec, ProtocolConfig
from vertimrf.protocol.message import PartyMessage
from vertimrf.protocol.report import ProtocolReport

__all__ = ["PartyMessage", "PartySpec", "ProtocolConfig", "ProtocolReport", "choose_t"]
