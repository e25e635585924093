"""``python -m vertimrf`` runs the command-line interface."""

from vertimrf.cli import main

raise SystemExit(main())
