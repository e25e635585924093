"""The vertical protocol: parties (data holders), their messages, and the untrusted server."""

from vertimrf.vertical.autot import choose_t
from vertimrf.vertical.config import PartySpec, ProtocolConfig
from vertimrf.vertical.message import PartyMessage
from vertimrf.vertical.party import Party
from vertimrf.vertical.report import ProtocolReport
from vertimrf.vertical.server import Server
from vertimrf.vertical.simulate import simulate

__all__ = [
    "choose_t",
    "Party",
    "PartyMessage",
    "PartySpec",
    "ProtocolConfig",
    "ProtocolReport",
    "Server",
    "simulate",
]
