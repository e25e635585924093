"""One driver for every role: each role (party, server) is a state machine over its
protocol steps, run over a :class:`Transport` (in one process, or through inbox and outbox
folders). ``simulate`` and the separate processes run the same steps."""

from vertimrf.driver.inprocess import LocalRun, local_run, run_in_process
from vertimrf.driver.party import PartyDriver
from vertimrf.driver.role import RoleDriver, Step
from vertimrf.driver.server import ServerDriver
from vertimrf.driver.transport import (
    DirectoryTransport,
    InProcessTransport,
    Message,
    MissingMessageError,
    Transport,
)

__all__ = [
    "DirectoryTransport",
    "InProcessTransport",
    "LocalRun",
    "Message",
    "MissingMessageError",
    "PartyDriver",
    "RoleDriver",
    "ServerDriver",
    "Step",
    "Transport",
    "local_run",
    "run_in_process",
]
