"""Shared pieces of the commands: output checks, staged (all-or-none) writes, Ctrl-C
handling, progress phases and the readers of the command's input files."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vertimrf.errors import (
    ConfigError,
    MessageError,
)
from vertimrf.protocol.seeds import SERVER

if TYPE_CHECKING:
    import pandas as pd

    from vertimrf.crypto.keys import KeyPair, PublicKey
    from vertimrf.domain import DomainSpec
    from vertimrf.driver.files import FileTransport
    from vertimrf.driver.role import RoleDriver
    from vertimrf.party.roles import Party
    from vertimrf.protocol.config import ProtocolConfig
    from vertimrf.protocol.setup import RunSetup
    from vertimrf.vertical_model import VerticalModel


_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def check_outputs(
    args: argparse.Namespace,
    outputs: Iterable[str | os.PathLike | None],
    inputs: Iterable[str | os.PathLike | Sequence[str | os.PathLike] | None] = (),
    *,
    records: Iterable[str | os.PathLike] = (),
    make_dirs: bool = False,
) -> None:
    """The command's outputs checked before it does any work (``vertimrf.io.check_outputs``:
    no output is an input, a key, a secret, a state, a step record or a config, nor lies in
    a role's state folder (``--state-dir``, the per-user default ones, or any other that
    holds the state marker); none exists unless ``--force``; every output folder exists and
    is writable). ``inputs`` may hold None (an option not given) and lists (an option given
    several files)."""
    from vertimrf.driver.state import default_state_dir
    from vertimrf.io import check_outputs

    flat: list[str | os.PathLike] = []
    for item in inputs:
        if isinstance(item, str | os.PathLike):
            flat.append(item)
        elif item is not None:
            flat.extend(item)
    check_outputs(
        [p for p in outputs if p is not None],
        flat,
        force=args.force,
        records=records,
        states=[  # this command's own, and every role's default (all in one folder)
            *([args.state_dir] if getattr(args, "state_dir", None) else []),
            default_state_dir("server").parent,
        ],
        make_dirs=make_dirs,
    )


def load_spec(args: argparse.Namespace) -> DomainSpec:
    from vertimrf.datasets import load_dataset
    from vertimrf.domain import DomainSpec

    if bool(args.dataset) == bool(args.spec):
        raise ConfigError("give exactly one of --dataset NAME or --spec SPEC.json.")
    return load_dataset(args.dataset)[1] if args.dataset else DomainSpec.from_json(args.spec)


def read_table(path: str) -> pd.DataFrame:
    """The whole table at ``path``: a CSV file, or a Parquet file or dataset directory."""
    from vertimrf.party.records.table_input import read_frame

    return read_frame(path)


def spec_columns(frame: pd.DataFrame, spec: DomainSpec, path: str) -> pd.DataFrame:
    """The columns of ``spec`` in the table read from ``path``, in the spec's order (others
    are ignored); ConfigError when it lacks any."""
    missing = [c for c in spec.names if c not in frame.columns]
    if missing:
        raise ConfigError(
            f"{path} lacks the spec's columns {missing}; give a table with every column of "
            "the spec (others are ignored)."
        )
    return frame[list(spec.names)]


def server_key(args: argparse.Namespace) -> KeyPair:
    """The server's key pair (``--server-key``): its deal and its noise derive from it."""
    from vertimrf.crypto.keys import KeyPair

    if args.server_key is None:
        raise ConfigError(
            "method secure needs --server-key, the server's private key (make it once with "
            "`vertimrf keys --name server --out-dir DIR`)."
        )
    return KeyPair.load(args.server_key)


# ------------------------------------------------------------------ method="secure"
# Each role is a separate process: the files it reads and writes are the only state it
# shares with the others, and the party keeps a private step record so that a rerun cannot
# release twice.


def file_name(name: str) -> str:
    """``name`` if it can be part of a file name (party names name keys, deals and blobs)."""
    if not _FILE_NAME.fullmatch(name):
        raise ConfigError(
            f"party name {name!r} cannot name files (A.key, A-to-B.features): use letters, digits, "
            "'_', '.' and '-', starting with a letter or digit."
        )
    return name


class Interrupted(KeyboardInterrupt):
    """Ctrl-C held back while a command committed its outputs: they are complete."""

    def __init__(self, written: Sequence[Path]) -> None:
        super().__init__()
        self.written = list(written)


@contextlib.contextmanager
def interrupts_held(written: Sequence[Path]) -> Iterator[None]:
    """Hold back Ctrl-C while the block commits ``written`` (the step record, then the
    renames), so that a command's outputs land all or none; a Ctrl-C held back is raised
    after the block as :class:`Interrupted`, which names them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        raise Interrupted(written)


@contextlib.contextmanager
def staged(
    *paths: str | os.PathLike, commit: Callable[[list[Path]], None] | None = None
) -> Iterator[list[Path]]:
    """Temporary files next to ``paths``, renamed over them only when the block succeeds, so
    a failed command leaves no output file, not even part of a set. ``commit(temps)`` (e.g.
    the step record) runs just before the renames; Ctrl-C waits until both are done."""
    targets = [Path(p) for p in paths]
    if len({t.resolve() for t in targets}) != len(targets):
        raise ConfigError(f"two outputs of one command share a path: {[str(t) for t in targets]}.")
    temps: list[Path] = []
    try:
        for target in targets:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, part = tempfile.mkstemp(
                prefix=f".{target.name}.", suffix=".part", dir=target.parent
            )
            os.close(fd)
            temps.append(Path(part))
        yield temps
        with interrupts_held(targets):
            if commit is not None:
                commit(temps)
            for tmp, target in zip(temps, targets, strict=True):
                os.replace(tmp, target)
    finally:
        for tmp in temps:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()


def run_file_step(
    driver: RoleDriver, transport: FileTransport, step: str, ph: Phases
) -> list[Path]:
    """Run ``driver``'s ``step`` over the command's files: its outputs land together once it
    succeeds (Ctrl-C waits for them), or none does. The files written."""
    with transport:
        with ph(step):
            driver.run_step(step)
        with ph("write"), interrupts_held(transport.targets):
            return transport.commit()


def write_all(files: Mapping[Path, bytes | bytearray]) -> None:
    """Write every file or none (mode 0600: secrets, deals and blobs are not for others)."""
    with staged(*files) as temps:
        for tmp, data in zip(temps, files.values(), strict=True):
            tmp.write_bytes(data)


def read_bytes(path: str | os.PathLike, limit: int, what: str) -> bytes:
    """The bytes of ``path``, refused before reading when larger than ``limit``."""
    try:
        size = os.path.getsize(path)
        if size > limit:
            raise MessageError(
                f"{path}: {size:,} bytes is more than any {what} of this run ({limit:,} bytes)."
            )
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise MessageError(f"{path}: cannot read the {what} ({exc.strerror or exc}).") from None


def fingerprints(keys: dict[str, PublicKey]) -> str:
    """One indented line per key: its party and fingerprint, to compare out of band."""
    return "\n".join(f"  {name}: fingerprint {key.fingerprint}" for name, key in keys.items())


class Phases:
    """A command's named phases: a progress bar on stderr (on a terminal, unless --quiet)
    and the seconds of each phase, for the summary line."""

    def __init__(self, desc: str, names: Sequence[str], quiet: bool) -> None:
        from tqdm.auto import tqdm

        self.seconds: dict[str, float] = {}
        self._bar = tqdm(
            total=len(names),
            desc=desc,
            unit="step",
            leave=False,
            file=sys.stderr,
            disable=True if quiet else None,
        )

    def __enter__(self) -> Phases:
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.close()

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        self._bar.set_postfix_str(name)
        start = time.perf_counter()
        yield
        self.seconds[name] = time.perf_counter() - start
        self._bar.update()

    def summary(self) -> str:
        """The seconds of each phase, for the command's last line."""
        return ", ".join(f"{k} {v:.2f} s" for k, v in self.seconds.items())


def step_config(path: str, role: str, step: str) -> RunSetup:
    """The run's setup from the config at ``path`` (checked once); ConfigError unless
    ``role`` (a party's name, or the server) takes ``step`` in its schedule."""
    from vertimrf.protocol.factory import load_setup
    from vertimrf.protocol.schedule import PARTIES

    setup = load_setup(path)
    run = setup.schedule
    if not run.takes(step, role):
        who = SERVER if role == SERVER else "party"
        steps = ", ".join(f"{'party' if s.by == PARTIES else s.by} {s.name}" for s in run.rules)
        raise ConfigError(
            f"{path}: `{who} {step}` is not a step of method {run.method}, whose steps are: "
            f"{steps}."
        )
    return setup


def run_state_dir(args: argparse.Namespace, role: str, cfg: ProtocolConfig) -> Path:
    """``--state-dir``, else ``role``'s per-user folder of the run of ``cfg`` (named by its
    hash): the server's or an own dealer's run state."""
    from vertimrf.driver.state import default_state_dir

    return Path(args.state_dir or default_state_dir(role) / cfg.config_hash()[:16])


def spec_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dataset", default=None, help="a bundled dataset's spec (adult, nltcs, adult_labeled)"
    )
    p.add_argument("--spec", default=None, help="a DomainSpec JSON file")


def force_arg(p: argparse.ArgumentParser) -> None:
    """``--force``: replace an existing output file (never an input, a key, a secret, a
    private state, a step record or a config)."""
    p.add_argument(
        "--force",
        action="store_true",
        help="replace existing output files (never an input, a key, a secret, a private "
        "state, a step record or a config)",
    )


def party_inputs(args: argparse.Namespace) -> list:
    """The files a party command reads (options it was not given are None)."""
    names = ("config", "data", "secret_file", "keys", "peers", "deal", "count_from")
    return [getattr(args, n, None) for n in names] + [getattr(args, "request", None)]


def own_key(args: argparse.Namespace) -> KeyPair:
    """This party's key pair (``--keys``): its secret makes the party's noise, so that a
    re-run on the same inputs writes the same release and spends nothing new (a seeded
    experiment's noise comes from its seed instead)."""
    from vertimrf.crypto.keys import KeyPair

    if args.keys is None:
        raise ConfigError(
            "give --keys NAME.key, this party's private key (make it once with `vertimrf keys "
            "--name NAME --out-dir DIR`): its noise derives from it, so a re-run writes the "
            "same release and spends nothing new."
        )
    pair = KeyPair.load(args.keys)
    if pair.name != args.party:
        raise ConfigError(f"{args.keys} is the key of {pair.name!r}, not of {args.party!r}.")
    return pair


def add_dask_args(p: argparse.ArgumentParser) -> None:
    """``--scheduler`` / ``--workers``: run the party's table on a Dask cluster."""
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="align and stream --data (a Parquet dataset) on this party's Dask cluster at "
        "ADDRESS (method secure; needs vertimrf[dask])",
    )
    group.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="the same on a local Dask cluster of N worker processes",
    )


def party_data_args(p: argparse.ArgumentParser) -> None:
    """A party's table (``--data``, ``--id-column``, the Dask options) and group secret
    (``--secret-file``)."""
    p.add_argument(
        "--data",
        required=True,
        help="CSV or Parquet file (or Parquet folder) with the ID column and own columns",
    )
    p.add_argument("--id-column", default="id", help="record-ID column (default 'id')")
    add_dask_args(p)
    p.add_argument(
        "--secret-file", "--secret", dest="secret_file", required=True, help="the group secret"
    )


@contextlib.contextmanager
def dask_client(args: argparse.Namespace) -> Iterator[object | None]:
    """The Dask client of ``--scheduler`` or of a local cluster of ``--workers`` processes
    (closed on exit), or None without either."""
    scheduler, workers = getattr(args, "scheduler", None), getattr(args, "workers", None)
    if scheduler is None and workers is None:
        yield None
        return
    if workers is not None and workers < 1:
        raise ConfigError(f"--workers must be at least 1; got {workers}.")
    try:
        import distributed
    except ImportError:
        raise ConfigError("--scheduler and --workers need Dask: install vertimrf[dask].") from None
    with contextlib.ExitStack() as stack:
        if scheduler is not None:
            try:
                client = stack.enter_context(distributed.Client(scheduler, timeout=30))
            except OSError as exc:
                raise ConfigError(
                    f"cannot reach the Dask scheduler at {scheduler}: {exc}."
                ) from None
        else:
            cluster = stack.enter_context(
                distributed.LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                    dashboard_address="127.0.0.1:0", silence_logs=40,
                )
            )  # fmt: skip
            client = stack.enter_context(distributed.Client(cluster))
        yield client


def party_role(
    args: argparse.Namespace,
    setup: RunSetup,
    keypair: KeyPair | None,
    *,
    progress: bool | None,
    client: object | None = None,
) -> Party:
    """This party (``--name``, ``--data``: a CSV or Parquet file read in batches, or with a
    Dask ``client`` a Parquet dataset on its cluster; ``--secret``), its peers' public keys
    pinned in the config or given as ``--peers``; ``setup``: the run's (its config checked
    once)."""
    from vertimrf.crypto.keys import load_public_keys
    from vertimrf.io import read_hex_secret
    from vertimrf.party.records.source import table_at
    from vertimrf.party.roles import Party

    cfg, method = setup.config, setup.method
    name = file_name(args.party)
    peers = setup.keys(name, keypair, load_public_keys(args.peers) if args.peers else None)
    if peers is None and method.secure_product:  # checked before the table is read
        raise ConfigError("method secure needs --peers: the other parties' public keys.")
    spec = cfg.spec.subset(cfg.party(name).columns)
    data, ids = table_at(
        args.data, spec, name=name, id_column=args.id_column, id_type=cfg.id_type,
        secure=method.secure_product, select=method.selects, client=client,
    )  # fmt: skip
    return Party(
        name, data, setup, read_hex_secret(args.secret_file), keypair=keypair, peers=peers,
        id_column=args.id_column, ids=ids, seed=args.seed, progress=progress,
    )  # fmt: skip


def write_synthetic(
    args: argparse.Namespace,
    ph: Phases,
    model: VerticalModel,
    n: int | None = None,
    seed: int | None = None,
) -> None:
    """The synthetic table (``--out``: CSV or Parquet by its suffix, sampled and written chunk
    by chunk) and (``--report``) the report's JSON, its seconds with the sampling's, both or
    neither; then print the report and the paths written."""
    import dataclasses

    from vertimrf.synth.table_file import check_table_file, write_table

    fmt = check_table_file(args.out, model.spec)
    outputs = [args.out, *([args.report] if args.report else [])]
    with staged(*outputs) as temps:
        with ph("sample"), open(temps[0], "wb") as fh:
            rows = write_table(fh, fmt, model.sample_chunks(n, seed), model.spec)
        seconds = {**model.report.seconds, "sample": ph.seconds["sample"]}
        report = dataclasses.replace(model.report, seconds=seconds)
        if args.report:
            temps[1].write_text(json.dumps(report.to_dict(), indent=2), encoding="utf-8")
    print(report)
    written = f" and the report to {args.report}" if args.report else ""
    print(f"\nwrote {rows} synthetic rows to {args.out}{written}; {ph.summary()}")
