"""What every role agrees on: the config that pins a run, its budget split, the message schema
and container, and the report. Importing it imports no Numba code."""

from vertimrf.protocol.autot import choose_t
from vertimrf.protocol.channels import KeyPair
from vertimrf.protocol.config import PartySpec, ProtocolConfig
from vertimrf.protocol.message import PartyMessage
from vertimrf.protocol.options import FMOptions, FOOptions, SecureOptions, SecurePaperOptions
from vertimrf.protocol.report import ProtocolReport
from vertimrf.protocol.securemsg import SecureRelease

__all__ = [
    "FMOptions",
    "FOOptions",
    "KeyPair",
    "PartyMessage",
    "PartySpec",
    "ProtocolConfig",
    "ProtocolReport",
    "SecureOptions",
    "SecurePaperOptions",
    "SecureRelease",
    "choose_t",
]
