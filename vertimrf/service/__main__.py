"""``python -m vertimrf.service server run | party run | status ...``: the network commands
(:mod:`vertimrf.service.commands`) until the command line wraps them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from vertimrf.errors import VertimrfError
from vertimrf.service.commands import COMMANDS


def build_parser() -> argparse.ArgumentParser:
    """The entry point's arguments."""
    parser = argparse.ArgumentParser(prog="python -m vertimrf.service")
    sub = parser.add_subparsers(dest="command", required=True)
    groups: dict[str, argparse._SubParsersAction] = {}
    for words, (add, run) in COMMANDS.items():
        if len(words) == 1:
            command = sub.add_parser(words[0])
        else:
            if words[0] not in groups:
                groups[words[0]] = sub.add_parser(words[0]).add_subparsers(
                    dest="action", required=True
                )
            command = groups[words[0]].add_parser(words[1])
        add(command)
        command.set_defaults(run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; exit 2 with one line on an error."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (VertimrfError, OSError) as exc:
        print(f"vertimrf: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
