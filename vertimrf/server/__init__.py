"""Everything that sees only messages: verification, merging, CarEst, GRR inversion, HisRec,
consistency, GraphCom, InitMRF and OptMRF, and Server."""

from vertimrf.server.server import Server

__all__ = ["Server"]
