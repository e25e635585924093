"""One driver for every role: each role (party, server) is a state machine over its
protocol steps, run over a :class:`Transport` (in one process, or through inbox and outbox
folders). ``simulate`` and the separate processes run the same steps.

The names below are loaded on first use, so that importing the transports (as the cheap
commands do) does not import the roles and their kernels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vertimrf.lazy import lazy_names

if TYPE_CHECKING:  # the lazy names below, typed for type checkers
    from vertimrf.driver.inprocess import LocalRun as LocalRun
    from vertimrf.driver.inprocess import local_run as local_run
    from vertimrf.driver.inprocess import run_in_process as run_in_process
    from vertimrf.driver.party import PartyDriver as PartyDriver
    from vertimrf.driver.role import RoleDriver as RoleDriver
    from vertimrf.driver.role import Step as Step
    from vertimrf.driver.server import ServerDriver as ServerDriver
    from vertimrf.driver.transport import DirectoryTransport as DirectoryTransport
    from vertimrf.driver.transport import InProcessTransport as InProcessTransport
    from vertimrf.driver.transport import MissingMessageError as MissingMessageError
    from vertimrf.driver.transport import Transport as Transport
    from vertimrf.protocol.schedule import Message as Message

_EXPORTS = {
    "LocalRun": "vertimrf.driver.inprocess",
    "local_run": "vertimrf.driver.inprocess",
    "run_in_process": "vertimrf.driver.inprocess",
    "PartyDriver": "vertimrf.driver.party",
    "RoleDriver": "vertimrf.driver.role",
    "Step": "vertimrf.driver.role",
    "ServerDriver": "vertimrf.driver.server",
    "DirectoryTransport": "vertimrf.driver.transport",
    "InProcessTransport": "vertimrf.driver.transport",
    "Message": "vertimrf.protocol.schedule",
    "MissingMessageError": "vertimrf.driver.transport",
    "Transport": "vertimrf.driver.transport",
}
_MODULES = ("codec",)

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, _MODULES)
