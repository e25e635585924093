"""The ``vertimrf`` command: thin commands over the library, one module per command group
(demo, keys, secret, config, party, server, evaluate)."""

from vertimrf.cli.app import build_parser, command, main

__all__ = ["build_parser", "command", "main"]
