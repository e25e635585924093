"""``python -m vertimrf`` runs the command-line interface."""

from vertimrf.cli import command

raise SystemExit(command())
