"""Everything that sees only messages: verification, merging, CarEst, GRR inversion, HisRec,
consistency, GraphCom, InitMRF and OptMRF, the secure product's server side, and Server,
which serves every method."""

from vertimrf.server.roles import Server
from vertimrf.server.secure import SecureServer
from vertimrf.server.server import PaperServer

__all__ = ["PaperServer", "SecureServer", "Server"]
