"""The ``party run``, ``server run`` and ``status`` commands: all of a role's
steps in one command; design notes in docs/design/core.md."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from vertimrf.cli.common import (
    Phases,
    check_outputs,
    dask_client,
    file_name,
    force_arg,
    own_key,
    party_data_args,
    party_role,
    run_state_dir,
    server_key,
    write_synthetic,
)
from vertimrf.driver.lock import state_lock
from vertimrf.driver.role import failure_report, unexpected
from vertimrf.driver.transport import DirectoryTransport, Transport
from vertimrf.driver.waits import WaitNotices
from vertimrf.errors import ConfigError, RunFailedError, VertimrfError
from vertimrf.protocol.schedule import Message
from vertimrf.protocol.seeds import SERVER

if TYPE_CHECKING:
    from vertimrf.crypto.keys import KeyPair
    from vertimrf.protocol.config import ProtocolConfig
    from vertimrf.protocol.schedule import Phase
    from vertimrf.protocol.setup import RunSetup


TIMEOUT = 3600.0  # --timeout's default: see its help


def _notices(role: str) -> WaitNotices:
    """Notices of ``role``'s waits, on stderr."""
    return WaitNotices(lambda line: print(f"vertimrf {role}: {line}", file=sys.stderr, flush=True))


def _directory_transport(
    args: argparse.Namespace, network: str, role: str, tell: list[str]
) -> DirectoryTransport:
    """The directory transport of ``--inbox`` and ``--outbox``, saying what ``role``
    waits for; a failure of ``role``'s run is told to the roles in ``tell``."""
    if args.inbox is None or args.outbox is None:
        raise ConfigError(
            f"give {network}, or --inbox DIR (this role's inbox) and --outbox DIR (a folder "
            "per receiver) for the directory transport."
        )
    return DirectoryTransport(
        args.inbox, args.outbox, timeout=args.timeout, notices=_notices(role), role=role,
        tell=tell,
    )  # fmt: skip


def _network_or_folders(args: argparse.Namespace, option: str, value: object) -> bool:
    """True for the network, False for folders; both at once are refused."""
    if value is not None and (args.inbox is not None or args.outbox is not None):
        raise ConfigError(f"give {option} or --inbox/--outbox, not both.")
    return value is not None


def client_transport(
    args: argparse.Namespace,
    cfg: ProtocolConfig,
    keypair: KeyPair | None,
    role: str,
    spool: Path,
    tell: list[str],
) -> Transport:
    """A party's or an own dealer's transport, from its options: the service at
    ``--server`` (what ``role`` received kept in ``spool``), or ``--inbox``/``--outbox``
    (a failure of its run told to the roles in ``tell``)."""
    if not _network_or_folders(args, "--server URL", args.server):
        return _directory_transport(args, "--server URL", role, tell)
    from vertimrf.service.client import party_transport

    if keypair is None:
        raise ConfigError("party run --server needs --keys (this party's key file).")
    return party_transport(
        args.server, cfg, keypair, timeout=args.timeout, progress=_progress(args), spool=spool,
        notices=_notices(role),
    )  # fmt: skip


def _progress(args: argparse.Namespace) -> bool | None:
    """Progress bars on a terminal, unless --quiet."""
    return False if args.quiet else None


def _state_dir(args: argparse.Namespace) -> Path:
    """The party's private state folder: ``--state-dir``, or the per-user default."""
    from vertimrf.driver.state import default_state_dir

    return Path(args.state_dir) if args.state_dir else default_state_dir(args.party)


def _party_name(args: argparse.Namespace) -> str:
    """``--name``, or the name in ``--keys``."""
    from vertimrf.crypto.keys import KeyPair

    if args.party is None:
        if args.keys is None:
            raise ConfigError("give --name (this party's name in the config) or --keys.")
        args.party = KeyPair.load(args.keys).name
    return args.party


def cmd_party_run(args: argparse.Namespace) -> int:
    from vertimrf.driver.party import PartyDriver
    from vertimrf.protocol.factory import load_setup

    setup = load_setup(args.config)
    cfg = setup.config
    names = [p.name for p in cfg.parties]
    if _party_name(args) not in names:
        raise ConfigError(f"--name {args.party!r} is not a party of the config ({names}).")
    name = file_name(args.party)
    keypair = own_key(args) if args.keys is not None or args.server is not None else None
    state_dir = _state_dir(args)
    spool = state_dir / cfg.config_hash()[:16] / "received"
    transport = client_transport(args, cfg, keypair, args.party, spool, [SERVER])
    with dask_client(args) as client:
        with _telling(transport, args.party, lambda: None):  # its table, read or opened
            party = party_role(args, setup, keypair, progress=_progress(args), client=client)
        # another run's state, or other data in this run: refused here, nothing sent
        driver = PartyDriver(party, transport, state_dir=state_dir)
        with _telling(transport, args.party, lambda: driver.step):
            driver.run(progress=_progress(args))
    print(
        f"{name}: ran {', '.join(driver.done)}; sent {driver.sent_bytes:,} bytes; its private "
        f"state is in {state_dir}"
    )
    return 0


@contextlib.contextmanager
def _telling(transport: Transport, role: str, step: Callable[[], str | None]) -> Iterator[None]:
    """Tell the server (if the transport can) when the block fails, naming ``step()``, so
    that it fails the run and no role waits on; an exception vertimrf does not raise on
    purpose becomes a StepError (one line). Another role's failure is not told back."""
    try:
        yield
    except RunFailedError:
        raise
    except Exception as exc:
        known = isinstance(exc, VertimrfError | OSError)
        error = exc if known else unexpected(role, step(), exc)
        report = getattr(transport, "report_failure", None)
        if report is not None:
            report(failure_report(role, step(), error))
        if error is not exc:
            raise error from exc
        raise


def _public_keys(args: argparse.Namespace, setup: RunSetup) -> dict | None:
    """Every party's public key: the config's pins, else ``--keys`` files or ``--keys-dir
    DIR/NAME.pub`` (:meth:`~vertimrf.protocol.setup.RunSetup.keys`); ConfigError when a
    secure run has none of them, or misses a party's."""
    from vertimrf.crypto.keys import load_public_keys

    if args.keys and args.keys_dir:
        raise ConfigError("give --keys FILE ... or --keys-dir DIR, not both.")
    names = [p.name for p in setup.config.parties]
    folder = [Path(args.keys_dir) / f"{file_name(n)}.pub" for n in names] if args.keys_dir else []
    paths = args.keys or folder
    keys = setup.keys(SERVER, given=load_public_keys(paths) if paths else None)
    if keys is None:
        if setup.method.secure_product:
            raise ConfigError(
                "method secure needs every party's public key: give --keys FILE ... or "
                "--keys-dir DIR, or pin them in the config (`vertimrf config --pin`)."
            )
        return None
    missing = sorted(set(names) - set(keys))
    if missing:
        raise ConfigError(f"give one public key of each party {names} (missing {missing}).")
    return keys


def cmd_server_run(args: argparse.Namespace) -> int:
    from vertimrf.protocol.factory import load_setup

    setup = load_setup(args.config)
    if _network_or_folders(args, "--listen HOST:PORT", args.listen):
        return _serve(args, setup)
    if args.out is None:
        raise ConfigError("give --out FILE, the synthetic table to write (.csv or .parquet).")
    return _server_over_folders(args, setup)


def _serve(args: argparse.Namespace, setup: RunSetup) -> int:
    """``server run --listen``: the network service of the run."""
    from vertimrf.service.commands import serve

    cfg = setup.config
    if args.keys or args.keys_dir:
        raise ConfigError("the service takes every public key from the config: give no --keys.")
    if args.server_key is None:
        raise ConfigError("give --server-key, the server's key file pinned in the config.")
    check_outputs(args, [args.out, args.report], [args.config, args.server_key])
    state_dir = run_state_dir(args, SERVER, cfg)
    _show_service_log(args.log_level, args.log_file)
    return serve(
        setup, server_key(args), state_dir, args.listen, party_timeout=args.timeout,
        seed=args.seed, out=args.out, report=args.report, exit_when_done=args.exit_when_done,
        port_file=args.port_file, read_timeout=args.read_timeout,
        announce=lambda line: print(f"vertimrf server: {line}", flush=True),
    )  # fmt: skip


def _show_service_log(level: str, file: str | None) -> None:
    """The service's log, one line per event (start, a dropped connection, a refused
    upload, done, failed and why), from ``level`` up: on stderr, or appended to ``file``
    with the time."""
    import logging

    if file is None:
        handler: logging.Handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("vertimrf server: %(message)s"))
    else:
        handler = logging.FileHandler(file)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    service = logging.getLogger("vertimrf.service")
    service.addHandler(handler)
    service.setLevel(level.upper())


def _server_over_folders(args: argparse.Namespace, setup: RunSetup) -> int:
    """``server run --inbox/--outbox``: the server's steps over the directory transport."""
    from vertimrf.driver.schedule import observed_seconds, sent_bytes
    from vertimrf.driver.server import ServerDriver
    from vertimrf.synth.table_file import check_table_file

    cfg = setup.config
    check_outputs(
        args, [args.out, args.report], [args.config, args.server_key, args.keys, args.keys_dir]
    )
    check_table_file(args.out, cfg.spec)
    secure = setup.method.secure_product
    keys = _public_keys(args, setup)
    keypair = server_key(args) if secure or args.server_key else None
    state_dir = run_state_dir(args, SERVER, cfg)
    names = [p.name for p in cfg.parties]
    transport = _directory_transport(args, "--listen HOST:PORT", SERVER, names)
    with state_lock(state_dir, lambda line: print(f"vertimrf server: {line}", file=sys.stderr)):
        driver = ServerDriver(
            setup, transport, public_keys=keys, keypair=keypair, seed=args.seed,
            progress=_progress(args), state_dir=state_dir,
        )  # fmt: skip
        try:
            with _stopped_by_signals():
                driver.run(progress=_progress(args))
        except _Stopped as stop:
            name = signal.Signals(stop.signum).name
            print(
                f"vertimrf server: stopped by {name}; the state folder keeps the run: run it "
                "again to resume.",
                file=sys.stderr,
            )
            return 128 + stop.signum
        except VertimrfError as exc:
            transport.report_failure(str(exc))  # no party waits on for a failed run
            raise
        finally:
            if driver.state is not None:
                driver.state.close()
    phases = setup.schedule.phases()
    held = _folder_messages(transport, phases)
    model = driver.fitted(
        seconds={**observed_seconds(phases, {m: st.st_mtime for m, st in held.items()}),
                 **driver.timed()},
        message_bytes=sent_bytes(cfg, {m: st.st_size for m, st in held.items()}),
    )  # fmt: skip
    with Phases("server run", ("sample",), args.quiet) as ph:
        write_synthetic(args, ph, model)
    return 0


def _folder_messages(
    transport: DirectoryTransport, phases: tuple[Phase, ...]
) -> dict[Message, os.stat_result]:
    """The file status of each message of the run the server's folders hold: its inbox, and
    the outbox's folder of each party (all of the run's messages, when the folders are
    shared; else the server's and those sent to it)."""
    held = {}
    for message in (m for phase in phases for m in phase.messages):
        folder = (
            transport.inbox if message.receiver == SERVER else transport.outbox / message.receiver
        )
        path = folder / message.file_name
        if path.exists():
            held[message] = path.stat()
    return held


class _Stopped(BaseException):  # noqa: N818 (a signal, not an error)
    """SIGINT or SIGTERM, raised in the main thread. Not an Exception, like
    KeyboardInterrupt: a step's body turns any Exception into "a bug in vertimrf", and a
    signal during the fit is not one."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _stopped_by_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`_Stopped` inside the block."""

    def stop(signum: int, _: object) -> None:
        raise _Stopped(signum)

    before = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _transport_args(p: argparse.ArgumentParser) -> None:
    """The directory transport's options, and the wait for each message."""
    p.add_argument("--inbox", default=None, help="folders: this role's inbox folder")
    p.add_argument("--outbox", default=None, help="folders: the outbox (a folder per receiver)")
    p.add_argument(
        "--timeout",
        "--party-timeout",
        dest="timeout",
        type=float,
        default=TIMEOUT,
        help=f"seconds to wait for each message (default {TIMEOUT:g}, an hour: a run's slowest "
        "step, a large table's fit or feature blobs, must fit in it; the wait is said every 10 "
        "s, and a run that fails stops it at once); the server then reports the role that "
        "sent nothing",
    )


def _state_arg(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument(
        "--state-dir",
        default=None,
        help=f"this role's private run state (default: {default}; a re-run resumes from it "
        "and resends what it sent)",
    )


def add_party_run(psub: argparse._SubParsersAction) -> None:
    """The `party run` command."""
    run = psub.add_parser(
        "run",
        help="run all of a party's steps",
        description="Run every step of this party in the run the config names, waiting for "
        "each message it needs (--timeout seconds). With --server it connects out to the "
        "service over mutual TLS (the config pins every role's key and certificate) and "
        "retries with backoff; with --inbox/--outbox it reads its inbox folder and writes what "
        "it sends to the outbox (OUTBOX/RECEIVER/). Its private state (the step record, a "
        "copy of what it sent, the shares) lives in --state-dir: a re-run resumes, resends "
        "the very bytes and spends nothing new; another data file in the same run is refused.",
    )
    run.add_argument("--config", required=True, help="the shared protocol config")
    run.add_argument(
        "--server", default=None, help="the service's URL, https://HOST:PORT (or --inbox/--outbox)"
    )
    run.add_argument(
        "--party", "--name", dest="party", default=None, help="this party's name (default: --keys')"
    )
    party_data_args(run)
    run.add_argument(
        "--keys", default=None, help="this party's NAME.key (its noise derives from it)"
    )
    run.add_argument(
        "--peers", nargs="+", default=None, help="secure, unpinned config: the peers' public keys"
    )
    _transport_args(run)
    _state_arg(run, "$XDG_STATE_HOME/vertimrf/NAME, else ~/.local/state/vertimrf/NAME")
    run.add_argument("--seed", type=int, default=None, help="seed (experiments only)")
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    run.set_defaults(func=cmd_party_run)


def add_server_run(ssub: argparse._SubParsersAction) -> None:
    """The `server run` command."""
    run = ssub.add_parser(
        "run",
        help="run all of the server's steps and write the synthetic table",
        description="Run every step of the server (deal, select, synthesize, as the method has), "
        "then write the synthetic table (CSV or Parquet) and the report and print their "
        "paths. With --listen it is "
        "an HTTPS service (mutual TLS with the identities the config pins) that relays the "
        "parties' messages (the feature blobs stay encrypted between the parties) and shows "
        "the run at /v1/status (`vertimrf status`); with --inbox/--outbox it reads its inbox "
        "folder and writes to the outbox (OUTBOX/PARTY/). Its run state (what each step "
        "received and sent, in SQLite) lives in --state-dir: a restarted server resumes.",
    )
    run.add_argument("--config", required=True, help="the shared protocol config")
    run.add_argument(
        "--listen", default=None, help="serve the run on HOST:PORT (or --inbox/--outbox)"
    )
    run.add_argument(
        "--keys", nargs="+", default=None, help="folders, unpinned config: every party's public key"
    )
    run.add_argument("--keys-dir", default=None, help="secure: a folder with NAME.pub per party")
    run.add_argument(
        "--server-key",
        default=None,
        help="the server's NAME.key (secure: its deal and noise derive from it)",
    )
    run.add_argument(
        "--out",
        default=None,
        help="synthetic table to write, CSV or Parquet by its suffix (.csv, .parquet; "
        "--listen: also in --state-dir)",
    )
    run.add_argument("--report", default=None, help="also write the report as JSON")
    run.add_argument(
        "--exit-when-done", action="store_true", help="--listen: stop when the run ends"
    )
    run.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="--listen: the least event the log shows (default info: one line per event)",
    )
    run.add_argument(
        "--log-file", default=None, help="--listen: append the log here, timed (default: stderr)"
    )
    run.add_argument(
        "--port-file", default=None, help="--listen: write the port listened on here (port 0)"
    )
    run.add_argument(
        "--read-timeout",
        type=float,
        default=60.0,
        help="--listen: drop a client that sends no request (or no next upload chunk) for "
        "this many seconds (default 60)",
    )
    _transport_args(run)
    _state_arg(run, "$XDG_STATE_HOME/vertimrf/server/HASH, else ~/.local/state/...")
    run.add_argument(
        "--seed", type=int, default=None, help="run seed: seeds the DP noise (experiments only)"
    )
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    force_arg(run)
    run.set_defaults(func=cmd_server_run)


def cmd_status(args: argparse.Namespace) -> int:
    from vertimrf.crypto.keys import KeyPair
    from vertimrf.protocol.factory import load_config
    from vertimrf.service.client import fetch_status, format_status

    cfg = load_config(args.config)
    print(format_status(fetch_status(args.server, cfg, KeyPair.load(args.keys))))
    return 0


def add_status(sub: argparse._SubParsersAction) -> None:
    """The `status` command."""
    status = sub.add_parser(
        "status",
        help="show a networked run's state, whom it waits on, and each party's bytes",
        description="Ask the service for the run's state (waiting, running, done, failed and "
        "why), the step it waits for and the roles yet to send in it (e.g. 'waiting on C: "
        "commit'), the paths of the synthetic table and the report once done, and each "
        "party's messages, bytes and last step. Any role of the run may ask: a party with "
        "its key file, the server's operator with the server's.",
    )
    status.add_argument("--server", required=True, help="the service's URL, https://HOST:PORT")
    status.add_argument("--config", required=True, help="the run's config (identities pinned)")
    status.add_argument(
        "--keys", required=True, help="a party's or the server's key file (to authenticate)"
    )
    status.set_defaults(func=cmd_status)
