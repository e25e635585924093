"""The parser of every command, and the entry point."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Sequence

from vertimrf.cli.common import (
    Interrupted,
)
from vertimrf.cli.config import add_config
from vertimrf.cli.dealer import add_dealer
from vertimrf.cli.demo import add_demo
from vertimrf.cli.evaluate import add_evaluate
from vertimrf.cli.keys import add_keys
from vertimrf.cli.party import add_party
from vertimrf.cli.report import add_report
from vertimrf.cli.run import add_status
from vertimrf.cli.secret import add_secret
from vertimrf.cli.server import add_server
from vertimrf.cli.spec import add_spec
from vertimrf.cli.split import add_split
from vertimrf.errors import (
    VertimrfError,
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="vertimrf",
        description="Differentially private synthetic data for vertically partitioned tables.",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="threads for the compiled kernels (default: every core, or NUMBA_NUM_THREADS); "
        "goes before the command, e.g. vertimrf --threads 2 demo",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (
        add_demo,
        add_spec,
        add_split,
        add_keys,
        add_secret,
        add_config,
        add_party,
        add_server,
        add_dealer,
        add_status,
        add_evaluate,
        add_report,
    ):
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``vertimrf`` command: one line on stderr for an error (exit 2),
    a warning (each once) or Ctrl-C (exit 130)."""
    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            # The command's warnings are lines for its user, whatever filters its caller set
            # (a test run that makes warnings errors calls main() in process).
            warnings.simplefilter("default", UserWarning)
            warnings.showwarning = _one_line_warning(set())
            if args.threads is not None:
                from vertimrf.threads import set_num_threads

                set_num_threads(args.threads)
            return args.func(args)
    except VertimrfError as exc:
        print(f"vertimrf: error: {exc}", file=sys.stderr)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"vertimrf: error: {where}{exc.strerror or exc}", file=sys.stderr)
    except Interrupted as exc:
        written = ", ".join(str(p) for p in exc.written)
        print(f"vertimrf: interrupted after writing {written} (complete)", file=sys.stderr)
        return _interrupted()
    except KeyboardInterrupt:
        print("vertimrf: interrupted; nothing was written; safe to re-run", file=sys.stderr)
        return _interrupted()
    return 2


def command() -> int:
    """The ``vertimrf`` program (``python -m vertimrf`` too): :func:`main` in a process of its
    own, whose idle kernel threads sleep instead of spinning (``OMP_WAIT_POLICY=passive``
    unless the environment sets it; OpenMP reads it when Numba first starts its threads). The
    server's fit then costs 0.73x the CPU on 2 threads in the same wall time
    (``benchmarks/results/omp_wait.md``). A caller of :func:`main` keeps its environment."""
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    return main()


def _interrupted() -> int:
    """Exit status 130 for a Ctrl-C that was handled.

    CPython 3.11 remembers a KeyboardInterrupt that escaped the running of source text
    (``exec`` or ``eval`` of a string: dataclasses and namedtuples build their methods so,
    during the lazy imports) and then, at exit, kills itself by SIGINT although the
    interrupt was caught. Running an empty source text resets that flag."""
    eval("0")
    return 130


def _one_line_warning(shown: set[str]) -> Callable[..., None]:
    """A ``warnings.showwarning`` that prints each warning's text once, on one line."""

    def show(message: Warning | str, *_: object, **__: object) -> None:
        text = str(message)
        if text not in shown:
            shown.add(text)
            print(f"vertimrf: warning: {text}", file=sys.stderr, flush=True)

    return show
