"""The ``vertimrf`` command: the demo, the protocol roles, and evaluation."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import hashlib
import json
import mmap
import os
import re
import signal
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vertimrf.errors import (
    ChannelError,
    ConfigError,
    KeyMaterialError,
    MessageError,
    PrivacyBudgetError,
    VertimrfError,
)
from vertimrf.io import read_hex_secret

if TYPE_CHECKING:
    import pandas as pd

    from vertimrf.domain import DomainSpec
    from vertimrf.party import LocalParty
    from vertimrf.party.secure import SecureParty
    from vertimrf.protocol import PartyMessage, ProtocolConfig
    from vertimrf.protocol.channels import KeyPair, PublicKey
    from vertimrf.protocol.report import ProtocolReport
    from vertimrf.protocol.secure import SecurePlan

WAYS = (3, 4, 5)
GROUP_SECRET_CONTEXT = b"vertimrf/group-secret"
STEPS_FORMAT = "vertimrf-party-steps/1"
SECURE_OPTIONS = ("peers", "deal", "blobs", "ledger")
_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _write_json(path: str, data: dict) -> None:
    _write_all({Path(path): json.dumps(data, indent=2).encode("utf-8")})


def _check_outputs(
    args: argparse.Namespace,
    outputs: Iterable[str | os.PathLike | None],
    inputs: Iterable[str | os.PathLike | Sequence[str | os.PathLike] | None] = (),
    *,
    records: Iterable[str | os.PathLike] = (),
    make_dirs: bool = False,
) -> None:
    """The command's outputs checked before it does any work (``vertimrf.io.check_outputs``:
    no output is an input, a key, a secret, a state, a step record or a config; none exists
    unless ``--force``; every output folder exists and is writable). ``inputs`` may hold
    None (an option not given) and lists (an option given several files)."""
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
        make_dirs=make_dirs,
    )


def _party_inputs(args: argparse.Namespace) -> list:
    """The files a party command reads (options it was not given are None)."""
    names = ("config", "data", "secret_file", "keys", "peers", "deal", "local", "count_from")
    return [getattr(args, n, None) for n in names] + [getattr(args, "request", None)]


def _load_spec(args: argparse.Namespace) -> DomainSpec:
    from vertimrf.datasets import load_dataset
    from vertimrf.domain import DomainSpec

    if bool(args.dataset) == bool(args.spec):
        raise ConfigError("give exactly one of --dataset NAME or --spec SPEC.json.")
    return load_dataset(args.dataset)[1] if args.dataset else DomainSpec.from_json(args.spec)


def _read_csv(path: str) -> pd.DataFrame:
    import pandas as pd

    try:
        with open(path, "rb") as fh:
            parquet = fh.read(4) == b"PAR1"
    except OSError as exc:
        raise ConfigError(f"cannot read CSV {path}: {exc.strerror or exc}.") from None
    if parquet:
        raise ConfigError(
            f"{path} is a Parquet file; Parquet input is not supported as CSV: convert it to "
            "CSV (a header row, then one row per record)."
        )
    try:
        df = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read CSV {path}: {exc}") from None
    df.columns = [str(c) for c in df.columns]
    return df


DEMO_LABELS = {
    "secure": "VertiMRF-Secure (DP)",
    "fo": "VertiMRF-FO (DP)",
    "fm": "VertiMRF-FM (NOT DP)",
    "central": "Centralized (DP)",
}


def _cmd_demo(args: argparse.Namespace) -> int:
    from vertimrf import load_dataset
    from vertimrf.privacy import DEFAULT_DELTA

    _check_outputs(args, [args.json])
    df, spec = load_dataset("adult")
    names = list(spec.names)
    print(
        f"VertiMRF demo: bundled Adult (n={len(df)}), 2 parties (columns {names[0]}-{names[7]} "
        f"and {names[8]}-{names[-1]}), epsilon={args.epsilon}, delta={DEFAULT_DELTA:g}, "
        f"{os.cpu_count()} "
        "cores. First use compiles or loads the Numba kernels.",
        flush=True,
    )
    tvds, seconds, reports = _demo_runs(args, df, spec)
    print("\nl-way TVD against the real data (300 random marginals each):")
    print(f"{'':<22}" + "".join(f"{w}-way".rjust(9) for w in WAYS) + "  seconds")
    for key, row in tvds.items():
        cells = "".join(f"{row[w]:9.4f}" for w in WAYS)
        print(f"{DEMO_LABELS[key]:<22}{cells}  {seconds[key]:7.1f}")
    for method, report in reports.items():
        phases = ", ".join(f"{k} {v:.2f} s" for k, v in report.seconds.items())
        sizes = ", ".join(f"{k} {v:,} B" for k, v in report.message_bytes.items())
        print(f"\n--- {DEMO_LABELS[method]} ---\nper phase: {phases}\nmessage sizes: {sizes}")
        print(report)
    if args.json:
        _write_json(
            args.json,
            {
                "dataset": "adult",
                "epsilon": args.epsilon,
                "delta": DEFAULT_DELTA,
                "seed": args.seed,
                "tvd": {DEMO_LABELS[k]: {str(w): v for w, v in t.items()} for k, t in tvds.items()},
                "seconds": {DEMO_LABELS[k]: v for k, v in seconds.items()},
                "reports": {DEMO_LABELS[k]: r.to_dict() for k, r in reports.items()},
                "cores": os.cpu_count(),
            },
        )
    return 0


def _demo_runs(
    args: argparse.Namespace, df: pd.DataFrame, spec: DomainSpec
) -> tuple[dict, dict, dict]:
    """Secure and FO (and with --fm the FM path) through the protocol, and Centralized
    PrivMRF: the l-way TVDs, the seconds and the protocol reports of each."""
    from vertimrf import PrivMRF, simulate
    from vertimrf.metrics import tvd
    from vertimrf.privacy import DEFAULT_DELTA

    names, delta = list(spec.names), DEFAULT_DELTA
    tvds, seconds, reports = {}, {}, {}
    for method in ["secure", "fo", "fm"] if args.fm else ["secure", "fo"]:
        start = time.perf_counter()
        fm = {"allow_non_dp": True, **({"t": args.t} if args.t else {})} if method == "fm" else {}
        synth, reports[method] = simulate(
            df,
            spec,
            [names[:8], names[8:]],
            args.epsilon,
            delta,
            method=method,
            seed=args.seed,
            progress=not args.quiet and sys.stderr.isatty(),
            **fm,
        )
        seconds[method] = time.perf_counter() - start
        tvds[method] = {w: tvd(df, synth, spec, ways=w) for w in WAYS}
    start = time.perf_counter()
    central = PrivMRF(args.epsilon, delta, seed=args.seed, progress=False).fit(df, spec).sample()
    seconds["central"] = time.perf_counter() - start
    tvds["central"] = {w: tvd(df, central, spec, ways=w) for w in WAYS}
    return tvds, seconds, reports


def _cmd_secret(args: argparse.Namespace) -> int:
    from vertimrf.party.keys import new_shared_secret

    if args.legacy_out is None:
        raise ConfigError(
            "give --out FILE for a new secret, or use `vertimrf secret share` / `secret open` "
            "to pass one to the peers through the server."
        )
    _check_outputs(args, [args.legacy_out])
    _write_all({Path(args.legacy_out): (new_shared_secret().hex() + "\n").encode("ascii")})
    print(
        f"wrote a new shared secret to {args.legacy_out}; give it to every party, never the server"
    )
    return 0


def _parse_parties(items: Sequence[str]) -> list[tuple[str, list[str]]]:
    out = []
    for item in items:
        name, sep, cols = item.partition("=")
        if not sep or not name or not cols:
            raise ConfigError(f"--party needs NAME=col1,col2,...; got {item!r}.")
        out.append((name, [c for c in cols.split(",") if c]))
    return out


def _parse_t(value: str) -> int | str:
    if value == "auto":
        return value
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"--t must be a positive integer or 'auto'; got {value!r}.") from None


def _cmd_config(args: argparse.Namespace) -> int:
    from vertimrf.protocol import ProtocolConfig
    from vertimrf.protocol.options import PRESETS, FMOptions, SecureOptions

    _check_outputs(args, [args.out], [args.spec])
    spec = _load_spec(args)
    given = {
        "t": None if args.t is None else _parse_t(args.t),
        "count_party": args.count_party,
        "max_rows": args.max_rows,
        "max_memory_gb": args.max_memory_gb,
        "allow_non_dp": args.allow_non_dp or None,
        "secure_feature_width": args.feature_width,
        "secure_binning": args.binning,
        "secure_pipeline": args.pipeline,
        "method": args.method,
    }
    method = args.method or PRESETS[args.preset]["method"]
    secure_flags = (
        ("--feature-width", args.feature_width),
        ("--binning", args.binning),
        ("--pipeline", args.pipeline),
    )
    for flag, value in secure_flags:
        if value is not None and method != "secure":
            raise ConfigError(f"{flag} is an option of --method secure.")
    if args.pipeline == "paper":
        for flag, value in secure_flags[:2]:
            if value is not None:
                raise ConfigError(f"{flag} is an option of --pipeline select.")
    if args.t is not None and method != "fm":
        raise ConfigError("--t is an option of --method fm (the sketch repetitions).")
    cfg = ProtocolConfig.from_preset(
        args.preset,
        epsilon=args.epsilon,
        delta=args.delta,
        spec=spec,
        parties=_parse_parties(args.party),
        **{k: v for k, v in given.items() if v is not None},
    )
    options = cfg.options
    if options.PADS_ROWS:  # the secure methods: party names name the secure files
        for p in cfg.parties:
            _file_name(p.name)
    with _staged(args.out) as (tmp,):
        cfg.save(tmp)
    label = "" if cfg.dp_guarantee else "; NOT differentially private (allow_non_dp)"
    if isinstance(options, SecureOptions):
        from vertimrf.protocol.secure import feature_width

        width = options.feature_width
        cap = f" ({feature_width(cfg)})" if width == "auto" else ""
        size = (
            f"max_rows {cfg.max_rows}, feature width {width}{cap}, pipeline select, "
            f"binning {options.binning}"
        )
    elif isinstance(options, FMOptions):
        size = f"t {options.t}"
    else:
        size = f"pipeline {cfg.pipeline}" + (f", max_rows {cfg.max_rows}" if cfg.max_rows else "")
    print(
        f"wrote the protocol config to {args.out} (hash {cfg.config_hash()[:16]}, method "
        f"{cfg.method}, {size}, fresh run nonce){label}"
    )
    print(cfg.plan().describe())
    return 0


def _cmd_party_release(args: argparse.Namespace) -> int:
    from vertimrf.protocol import ProtocolConfig

    cfg = ProtocolConfig.load(args.config)
    if cfg.options.PADS_ROWS:  # the secure methods
        return _party_release_secure(args, cfg)
    given = [f"--{k}" for k in SECURE_OPTIONS if getattr(args, k) is not None]
    if given:
        raise ConfigError(
            f"{given} are options of method secure; the config's method is {cfg.method!r}."
        )
    _check_outputs(args, [args.out], _party_inputs(args))
    party, message = _local_message(args, cfg)
    with _staged(args.out) as (tmp,):
        message.save(tmp)
    print(
        f"{args.party}: wrote {args.out} ({os.path.getsize(args.out):,} bytes); "
        + ", ".join(f"{k} {v:.2f} s" for k, v in party.timings.items())
    )
    return 0


def _local_message(
    args: argparse.Namespace, cfg: ProtocolConfig
) -> tuple[LocalParty, PartyMessage]:
    """This party's LocMRF, binning and (fo, fm) LocEnc: the party and its message."""
    from vertimrf.party import LocalParty
    from vertimrf.protocol import PartyMessage

    names = [p.name for p in cfg.parties]
    if args.party in names and args.party != cfg.count_party and not args.count_from:
        raise ConfigError(
            f"party {args.party!r} needs the noisy count of the count party "
            f"{cfg.count_party!r}: give --count-from with {cfg.count_party!r}'s message."
        )
    party = LocalParty(
        args.party,
        _read_csv(args.data),
        cfg,
        read_hex_secret(args.secret_file),
        id_column=args.id_column,
        seed=args.seed,
        local_secret=None if args.seed is not None else _own_key(args).local_secret(),
        progress=False if args.quiet else None,
    )
    noisy = None
    if args.count_from:
        noisy = PartyMessage.load(args.count_from, cfg).noisy_count
        if noisy is None:
            raise ConfigError(
                f"{args.count_from} holds no noisy count: pass the message of the count party "
                f"{cfg.count_party!r}."
            )
    return party, party.release(noisy_count=noisy)


def _own_key(args: argparse.Namespace) -> KeyPair:
    """This party's key pair (``--keys``): its secret makes the party's noise, so that a
    re-run on the same inputs writes the same release and spends nothing new (a seeded
    experiment's noise comes from its seed instead)."""
    from vertimrf.protocol.channels import KeyPair

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


def _server_key(args: argparse.Namespace) -> KeyPair:
    """The server's key pair (``--server-key``): its deal and its noise derive from it."""
    from vertimrf.protocol.channels import KeyPair

    if args.server_key is None:
        raise ConfigError(
            "method secure needs --server-key, the server's private key (make it once with "
            "`vertimrf keys --name server --out-dir DIR`)."
        )
    return KeyPair.load(args.server_key)


def _cmd_party_local(args: argparse.Namespace) -> int:
    """``party local``: the paper pipeline's local message (LocMRF and the bin maps)."""
    from vertimrf.protocol import ProtocolConfig
    from vertimrf.protocol.options import SecurePaperOptions, describe

    cfg = ProtocolConfig.load(args.config)
    if not isinstance(cfg.options, SecurePaperOptions):
        raise ConfigError(
            f"`party local` is the first step of method secure's paper pipeline; this config "
            f"is {describe(type(cfg.options))}: run `party features` (secure) or `party "
            "release` (fo, fm)."
        )
    name = _file_name(args.party)
    steps = _StepRecord(args, cfg.config_hash(), Path(args.out).parent)
    steps.check("local")
    _check_outputs(args, [args.out], _party_inputs(args), records=[steps.path])
    party, message = _local_message(args, cfg)
    with _staged(args.out, commit=lambda _: steps.record("local", args.out)) as (tmp,):
        message.save(tmp)
    print(
        f"{name}: wrote its local message {args.out} ({os.path.getsize(args.out):,} bytes; "
        "give it to the server, and pass it as --local to `party features` and `party "
        "release`); " + ", ".join(f"{k} {v:.2f} s" for k, v in party.timings.items())
    )
    return 0


def _cmd_server_synthesize(args: argparse.Namespace) -> int:
    from vertimrf.protocol import PartyMessage, ProtocolConfig
    from vertimrf.protocol.options import SecureOptions, SecurePaperOptions
    from vertimrf.server import PaperServer

    cfg = ProtocolConfig.load(args.config)
    files = [*args.messages, *(args.releases or [])]
    if not files:
        raise ConfigError("give the parties' message files (or --releases FILE ...).")
    _check_outputs(
        args, [args.out, args.report], [args.config, *files, args.state, args.server_key]
    )
    if isinstance(cfg.options, SecurePaperOptions):
        return _server_synthesize_paper(args, cfg)
    if isinstance(cfg.options, SecureOptions):
        return _server_synthesize_secure(args, cfg, files)
    if args.state is not None:
        raise ConfigError(f"--state is for method secure; the config's method is {cfg.method!r}.")
    with _Phases("server synthesize", ("read", "synthesize", "write"), args.quiet) as ph:
        with ph("read"):
            messages = [PartyMessage.load(p, cfg) for p in files]
            _one_per_party([m.party for m in messages], files, "messages")
        with ph("synthesize"):
            synth, report = PaperServer(cfg, progress=False if args.quiet else None).synthesize(
                messages, n=args.n, seed=args.seed, sample_seed=args.sample_seed
            )
        _write_synthetic(args, ph, synth, report)
    return 0


def _one_per_party(parties: Sequence[str], files: Sequence[str], what: str) -> None:
    """A ConfigError naming the party when two of ``files`` (its ``what``) are from one."""
    first: dict[str, str] = {}
    for party, path in zip(parties, files, strict=True):
        if party in first:
            raise ConfigError(
                f"two {what} from party {party} ({first[party]} and {path}); give each "
                f"party's {what.removesuffix('s')} once."
            )
        first[party] = path


# ------------------------------------------------------------------ method="secure"
# Each role is a separate process: the files it reads and writes are the only state it
# shares with the others, and the party keeps a private step record so that a rerun cannot
# release twice.


def _file_name(name: str) -> str:
    """``name`` if it can be part of a file name (party names name keys, deals and blobs)."""
    if not _FILE_NAME.fullmatch(name):
        raise ConfigError(
            f"party name {name!r} cannot name files (A.key, A-to-B.blob): use letters, digits, "
            "'_', '.' and '-', starting with a letter or digit."
        )
    return name


class _Interrupted(KeyboardInterrupt):
    """Ctrl-C held back while a command committed its outputs: they are complete."""

    def __init__(self, written: Sequence[Path]) -> None:
        super().__init__()
        self.written = list(written)


@contextlib.contextmanager
def _interrupts_held(written: Sequence[Path]) -> Iterator[None]:
    """Hold back Ctrl-C while the block commits ``written`` (the step record, then the
    renames), so that a command's outputs land all or none; a Ctrl-C held back is raised
    after the block as :class:`_Interrupted`, which names them."""
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
        raise _Interrupted(written)


@contextlib.contextmanager
def _staged(
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
        with _interrupts_held(targets):
            if commit is not None:
                commit(temps)
            for tmp, target in zip(temps, targets, strict=True):
                os.replace(tmp, target)
    finally:
        for tmp in temps:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()


def _write_all(files: Mapping[Path, bytes | bytearray]) -> None:
    """Write every file or none (mode 0600: secrets, deals and blobs are not for others)."""
    with _staged(*files) as temps:
        for tmp, data in zip(temps, files.values(), strict=True):
            tmp.write_bytes(data)


def _read_bytes(path: str | os.PathLike, limit: int, what: str) -> bytes:
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


def _fingerprints(keys: dict[str, PublicKey]) -> str:
    """One indented line per key: its party and fingerprint, to compare out of band."""
    return "\n".join(f"  {name}: fingerprint {key.fingerprint}" for name, key in keys.items())


class _Phases:
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

    def __enter__(self) -> _Phases:
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


def _cmd_keys(args: argparse.Namespace) -> int:
    from vertimrf.protocol.channels import KeyPair

    name = _file_name(args.name)
    folder = Path(args.out_dir)
    key_path, pub_path = folder / f"{name}.key", folder / f"{name}.pub"
    _check_outputs(args, [key_path, pub_path], make_dirs=True)
    pair = KeyPair.generate(name)
    folder.mkdir(parents=True, exist_ok=True)
    with _interrupts_held([key_path, pub_path]):
        pair.save(key_path)
        try:
            pair.public().save(pub_path)
            os.chmod(pub_path, 0o644)
        except BaseException:
            key_path.unlink()
            raise
    print(f"{name}: fingerprint {pair.public().fingerprint}")
    print(
        f"wrote {key_path} (private, mode 0600: never share it) and {pub_path} (give it to the "
        "server and every peer); compare fingerprints with the peers out of band (in person or "
        "by phone) before you use their public keys."
    )
    return 0


def _group_secret_aad(sender: str, receiver: str) -> bytes:
    """Associated data of the group secret ``sender`` seals for ``receiver``."""
    return f"group-secret/{sender}->{receiver}".encode()


def _cmd_secret_share(args: argparse.Namespace) -> int:
    from vertimrf.party.keys import new_shared_secret
    from vertimrf.protocol.channels import KeyPair, encrypt, load_public_keys, pairwise_key

    own = KeyPair.load(args.keys)
    name = _file_name(own.name)
    peers = load_public_keys(args.to)
    if name in peers:
        raise KeyMaterialError(f"--to lists {name!r}'s own public key; list the peers only.")
    folder = Path(args.out_dir)
    paths = {peer: folder / f"secret-{name}-to-{_file_name(peer)}.sealed" for peer in peers}
    own_copy = folder / f"{name}.secret"
    _check_outputs(args, [own_copy, *paths.values()], [args.keys, args.to], make_dirs=True)
    secret = new_shared_secret()
    files = {own_copy: (secret.hex() + "\n").encode("ascii")}
    for peer, key in peers.items():
        sealed = encrypt(
            pairwise_key(own, key, GROUP_SECRET_CONTEXT), secret, _group_secret_aad(name, peer)
        )
        files[paths[peer]] = sealed
    _write_all(files)
    print(f"{name} (you): fingerprint {own.public().fingerprint}\nsealed for:")
    print(_fingerprints(peers))
    print(
        f"wrote your copy {folder / f'{name}.secret'} (pass it as --secret) and one sealed file "
        "per peer; the server relays the sealed files (it cannot open them). Each peer runs "
        f"`vertimrf secret open FILE --keys PEER.key --from {name}.pub --out PEER.secret`."
    )
    return 0


def _cmd_secret_open(args: argparse.Namespace) -> int:
    from vertimrf.party.keys import MIN_SECRET_BYTES
    from vertimrf.protocol.channels import KeyPair, PublicKey, decrypt, pairwise_key

    _check_outputs(args, [args.out], [args.file, args.keys, args.sender])
    own, sender = KeyPair.load(args.keys), PublicKey.load(args.sender)
    out = Path(args.out)
    sealed = _read_bytes(args.file, 1024, "sealed group secret")
    key = pairwise_key(own, sender, GROUP_SECRET_CONTEXT)
    try:
        secret = decrypt(key, sealed, _group_secret_aad(sender.name, own.name))
    except ChannelError:
        raise ChannelError(
            f"{args.file}: not a group secret sealed by {sender.name!r} for {own.name!r} (another "
            "sender or recipient, or altered); check --from and compare fingerprints."
        ) from None
    if len(secret) != MIN_SECRET_BYTES:
        raise KeyMaterialError(f"{args.file}: the sealed secret is not {MIN_SECRET_BYTES} bytes.")
    _write_all({out: (secret.hex() + "\n").encode("ascii")})
    print(f"{own.name} (you): fingerprint {own.public().fingerprint}")
    print(f"from {sender.name}: fingerprint {sender.fingerprint}")
    print(f"wrote the group secret to {out} (pass it as --secret; never give it to the server)")
    return 0


PAPER_STEPS = "server deal, party local, party features, party release, server synthesize"


def _secure_config(path: str, *, select_only: bool = False) -> tuple[ProtocolConfig, SecurePlan]:
    """The config at ``path`` and its secure plan (method secure only; ``select_only``: a
    step of the select pipeline, which the paper pipeline does not have)."""
    from vertimrf.protocol import ProtocolConfig
    from vertimrf.protocol.options import SecureOptions
    from vertimrf.protocol.secure import SecurePlan

    cfg = ProtocolConfig.load(path)
    if not cfg.options.PADS_ROWS:  # not a secure method
        raise ConfigError(
            f"{path}: this command is for method secure; the config's method is {cfg.method!r}."
        )
    if select_only and not isinstance(cfg.options, SecureOptions):
        raise ConfigError(
            f"{path}: this command is a step of the select pipeline; the config's pipeline is "
            f"{cfg.pipeline!r}, whose steps are: {PAPER_STEPS}."
        )
    return cfg, SecurePlan.from_config(cfg)


def _deal_limit(plan: SecurePlan) -> int:
    """Bytes a deal may take: every Z matrix of the run, plus the archive and the seal."""
    return 8 * sum(plan.widths[p] * plan.widths[q] for p, q in plan.pairs()) + (1 << 20)


class _PeerBlobs(Mapping[str, memoryview]):
    """The peers' feature blobs for ``name`` (``folder/<peer>-to-<name>.blob``): checked up
    front (present, within the run's size), read when used, so that one blob at a time is
    in memory (each is rows x width x 8 bytes)."""

    def __init__(self, folder: str, name: str, plan: SecurePlan) -> None:
        self._files: dict[str, tuple[Path, int]] = {}
        for q, peer in enumerate(plan.names):
            if peer == name:
                continue
            path = Path(folder) / f"{peer}-to-{name}.blob"
            if not path.exists():
                raise MessageError(
                    f"{path}: no feature blob from {peer!r}; the server must relay every peer's "
                    "`vertimrf party features` output before this step."
                )
            limit = 8 * plan.rows * plan.widths[q] + 4096
            if path.stat().st_size > limit:
                raise MessageError(
                    f"{path}: {path.stat().st_size:,} bytes is more than any feature blob of "
                    f"this run ({limit:,} bytes)."
                )
            self._files[peer] = (path, limit)

    def __getitem__(self, peer: str) -> memoryview:
        """The blob mapped read-only (decrypted in place: no multi-GB ``bytes`` copy)."""
        path, limit = self._files[peer]
        try:
            with open(path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if size > limit:
                    raise MessageError(
                        f"{path}: {size:,} bytes is more than any feature blob of this run "
                        f"({limit:,} bytes)."
                    )
                if size == 0:
                    return memoryview(b"")
                return memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
        except OSError as exc:
            msg = f"{path}: cannot read the feature blob ({exc.strerror or exc})."
            raise MessageError(msg) from None

    def __contains__(self, peer: object) -> bool:
        return peer in self._files

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)


def _secure_party(
    args: argparse.Namespace,
    cfg: ProtocolConfig,
    plan: SecurePlan,
    *,
    seal: bool = False,
    open_deal: bool = True,
) -> tuple[SecureParty, dict[str, bytearray], dict[str, PublicKey]]:
    """This party with its deal opened, its blobs for the peers (``seal``: the features
    command; else none) and the peers' keys. A release command opens the same deal again
    without sealing: the same deal and data give the same state; a measure command
    (``open_deal=False``) reads the shares from the private state instead."""
    from vertimrf.party.secure import SecureParty
    from vertimrf.protocol.channels import KeyPair, load_public_keys

    name = _file_name(args.party)
    keypair = KeyPair.load(args.keys)
    peers = load_public_keys(args.peers)
    if name in peers:
        raise ConfigError(f"--peers lists {name!r}'s own public key; list the other parties'.")
    unknown = sorted(set(peers) - set(plan.names))
    if unknown:
        raise ConfigError(f"--peers holds keys of {unknown}, not parties of {list(plan.names)}.")
    secret = read_hex_secret(args.secret_file)
    deal = _read_bytes(args.deal, _deal_limit(plan), "deal")
    party = SecureParty(
        name,
        _read_csv(args.data),
        cfg,
        secret,
        keypair,
        peers,
        id_column=args.id_column,
        seed=args.seed,
        bins=_own_bins(args, cfg, plan),
    )
    if not open_deal:
        return party, {}, peers
    try:
        if seal:
            return party, party.features(deal), peers
        party.open_deal(deal)
        return party, {}, peers
    except ChannelError as exc:
        raise ChannelError(f"{args.deal}: {exc}") from None


def _own_bins(args: argparse.Namespace, cfg: ProtocolConfig, plan: SecurePlan) -> dict | None:
    """The paper pipeline: the bin maps in this party's own local message (``--local``, from
    `party local`); the select pipeline has none."""
    from vertimrf.protocol import PartyMessage

    if plan.select:
        if args.local is not None:
            raise ConfigError("--local is an input of the paper pipeline (config --pipeline paper)")
        return None
    if args.local is None:
        raise ConfigError(
            "the paper pipeline needs --local: this party's message from `vertimrf party local` "
            "(its bin maps decide the features)."
        )
    message = PartyMessage.load(args.local, cfg)
    if message.party != args.party:
        raise ConfigError(
            f"{args.local}: the local message of {message.party!r}, not of {args.party!r}; pass "
            "this party's own."
        )
    return dict(message.bins)


def _require_secure_options(args: argparse.Namespace, names: Sequence[str]) -> None:
    """ConfigError naming the secure-only options ``party release`` was not given."""
    missing = [f"--{n}" for n in names if getattr(args, n) is None]
    if missing:
        raise ConfigError(f"method secure needs {missing} for this command.")


def _inputs_digest(deal: str | None, data: str) -> str:
    """SHA-256 over the deal (if the command has one) and the data file of a party command."""
    outer = hashlib.sha256()
    for path in (deal, data):
        if path is not None:
            outer.update(bytes.fromhex(_file_digest(path)))
    return outer.hexdigest()


def _file_digest(path: str | os.PathLike) -> str:
    """SHA-256 of one file."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class _StepRecord:
    """A party's private record of its steps in each run (by config hash), kept between its
    commands: ``local`` (the paper pipeline's), ``release`` and ``measure`` run once per run
    (a second one would spend the budget again); ``release`` recomputes the state of
    ``features`` from the very deal and data file it used (others would give shares that do
    not add up, silently) and keeps the shares in the private state file next to the record
    (``state_path``: NAME.state.vmrf, mode 0600, never sent), whose SHA-256 it records, for
    ``measure``."""

    def __init__(self, args: argparse.Namespace, config_hash: str, folder: Path) -> None:
        self.path = Path(args.ledger) if args.ledger else folder / f"{args.party}.steps.json"
        self.party, self.config_hash = args.party, config_hash
        self._files = (getattr(args, "deal", None), args.data)
        stem = self.path.name.removesuffix(".json").removesuffix(".steps")
        self.state_path = self.path.with_name(f"{stem}.state.vmrf")

    @functools.cached_property
    def inputs(self) -> str:
        """SHA-256 over the deal and the data file this command was given."""
        return _inputs_digest(*self._files)

    def check(self, step: str) -> dict:
        """The record; an error when ``step`` may not run now."""
        from vertimrf.io import read_json

        data = {"format": STEPS_FORMAT, "party": self.party, "runs": {}}
        if self.path.exists():
            data = read_json(self.path, ConfigError, "step record")
        if not (
            isinstance(data, dict)
            and data.get("format") == STEPS_FORMAT
            and isinstance(data.get("runs"), dict)
        ):
            raise ConfigError(f"{self.path}: not a vertimrf step record; pass your own --ledger.")
        if data.get("party") != self.party:
            raise ConfigError(
                f"{self.path}: the step record of party {data.get('party')!r}, not "
                f"{self.party!r}; pass your own --ledger."
            )
        run = data["runs"].get(self.config_hash, {})
        if step != "features" and step in run:
            raise PrivacyBudgetError(
                f"party {self.party!r} already ran {step!r} in this run (config "
                f"{self.config_hash[:12]}, wrote {run[step].get('out')} at {run[step].get('at')}, "
                f"recorded in {self.path}); a second one would spend the budget again. Make a "
                "new config for a new run."
            )
        if step == "local":  # before features: it makes the bins the features are made of
            return data
        features = run.get("features")
        if step != "features" and features is None:
            raise ConfigError(
                f"{self.path} records no `party features` of this run (config "
                f"{self.config_hash[:12]}): run it first, with the same --ledger."
            )
        if features is not None and features.get("inputs") != self.inputs:
            raise ConfigError(
                "the deal or the data file differs from the one `party features` used in this "
                f"run (recorded in {self.path}): pass the same --deal and --data (a new deal "
                "needs a new config)."
            )
        return data

    def record(self, step: str, out: str, state: str | os.PathLike | None = None) -> None:
        """Mark ``step`` done (checked again: another command may have run meanwhile), with
        the SHA-256 of the private ``state`` file it wrote, if any."""
        from vertimrf.io import atomic_write_text

        data = self.check(step)
        entry: dict[str, object] = {
            "out": str(out),
            "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "inputs": self.inputs,
        }
        if state is not None:
            entry["state"] = {"path": str(self.state_path), "sha256": _file_digest(state)}
        data["runs"].setdefault(self.config_hash, {})[step] = entry
        atomic_write_text(self.path, json.dumps(data, indent=1) + "\n")

    def state(self, data: dict) -> Path:
        """The private state file of this run's ``release``, checked against its recorded
        SHA-256 (MessageError when missing, or written by another run or command)."""
        release = data["runs"].get(self.config_hash, {}).get("release")
        if release is None:
            raise ConfigError(
                f"{self.path} records no `party release` of this run (config "
                f"{self.config_hash[:12]}): run it first, with the same --ledger."
            )
        recorded = release.get("state", {}).get("sha256") if isinstance(release, dict) else None
        if not self.state_path.exists():
            raise MessageError(
                f"{self.state_path}: no private state of this party's `party release` (it keeps "
                "the shares that `party measure` needs); run measure with the --ledger that "
                "release used."
            )
        if recorded is None or _file_digest(self.state_path) != recorded:
            raise MessageError(
                f"{self.state_path}: this state file is not the one `party release` wrote in "
                f"this run (recorded in {self.path}): another run's, another party's or altered."
            )
        return self.state_path


def _cmd_party_features(args: argparse.Namespace) -> int:
    cfg, plan = _secure_config(args.config)
    name = _file_name(args.party)
    steps = _StepRecord(args, cfg.config_hash(), Path(args.out_dir))
    blob_paths = [Path(args.out_dir) / f"{name}-to-{q}.blob" for q in plan.names if q != name]
    steps.check("features")
    _check_outputs(args, blob_paths, _party_inputs(args), records=[steps.path], make_dirs=True)
    with _Phases(f"{name} features", ("features", "write"), args.quiet) as phases:
        with phases("features"):
            party, blobs, peers = _secure_party(args, cfg, plan, seal=True)
        with phases("write"):
            files = {Path(args.out_dir) / f"{name}-to-{q}.blob": blob for q, blob in blobs.items()}
            with _staged(*files, commit=lambda _: steps.record("features", args.out_dir)) as temps:
                for tmp, blob in zip(temps, files.values(), strict=True):
                    tmp.write_bytes(blob)
    print(f"{name}: sealed features for the peers (the server relays them):")
    print(_fingerprints(peers))
    size = sum(len(b) for b in blobs.values())
    print(
        f"{name}: wrote {len(files)} feature blob(s) to {args.out_dir} ({size:,} bytes); "
        f"{phases.summary()}"
    )
    return 0


def _party_release_secure(args: argparse.Namespace, cfg: ProtocolConfig) -> int:
    """``party release`` of method secure: features again, then the first release."""
    from vertimrf.protocol.secure import SecurePlan

    plan = SecurePlan.from_config(cfg)
    _require_secure_options(args, ("keys", "peers", "deal", "blobs"))
    if args.count_from:
        raise ConfigError(
            "method secure takes no --count-from: the count party's noisy count goes to the "
            "server in its own release."
        )
    name = _file_name(args.party)
    steps = _StepRecord(args, cfg.config_hash(), Path(args.out).parent)
    paper = not plan.select
    outputs = (args.out,) if paper else (args.out, steps.state_path)
    blob_files = [Path(args.blobs) / f"{q}-to-{name}.blob" for q in plan.names if q != name]
    steps.check("release")
    _check_outputs(args, outputs, [*_party_inputs(args), blob_files], records=[steps.path])
    with _Phases(f"{name} release", ("check", "features", "release", "write"), args.quiet) as ph:
        with ph("check"):
            blobs = _PeerBlobs(args.blobs, name, plan)
        with ph("features"):
            party = _secure_party(args, cfg, plan)[0]
        with ph("release"):
            try:
                release = party.release(blobs)
            except ChannelError as exc:
                raise ChannelError(f"{args.blobs}: {exc}") from None

        # Recorded before the files land: a failed write costs a retry, never budget. The
        # private state (the shares, for `party measure`) lands with the release or not at
        # all; the paper pipeline has no measure step, so no state.
        def record(temps: list[Path]) -> None:
            steps.record("release", args.out, state=None if paper else temps[1])

        with ph("write"), _staged(*outputs, commit=record) as temps:
            release.save(temps[0])
            if not paper:
                party.save_state(temps[1], binding=steps.inputs)
    print(f"{name}: wrote {args.out} ({os.path.getsize(args.out):,} bytes); {ph.summary()}")
    return 0


def _cmd_party_measure(args: argparse.Namespace) -> int:
    from vertimrf.protocol.securemsg import load_request

    cfg, plan = _secure_config(args.config, select_only=True)
    name = _file_name(args.party)
    steps = _StepRecord(args, cfg.config_hash(), Path(args.out).parent)
    record = steps.check("measure")
    inputs = [*_party_inputs(args), steps.state_path]
    _check_outputs(args, [args.out], inputs, records=[steps.path])
    request = load_request(args.request, plan, cfg.config_hash())
    with _Phases(f"{name} measure", ("check", "state", "measure", "write"), args.quiet) as ph:
        with ph("check"):
            state = steps.state(record)
            deal = _read_bytes(args.deal, _deal_limit(plan), "deal")
        with ph("state"):
            party = _secure_party(args, cfg, plan, open_deal=False)[0]
            party.load_state(state, deal=deal, binding=steps.inputs)
        with ph("measure"):
            release = party.measure(request)
        with (
            ph("write"),
            _staged(args.out, commit=lambda _: steps.record("measure", args.out)) as (tmp,),
        ):
            release.save(tmp)
    print(
        f"{name}: measured {len(request.marginals)} marginals ({len(request.bins)} on bins); "
        f"wrote {args.out} "
        f"({os.path.getsize(args.out):,} bytes); {ph.summary()}"
    )
    return 0


def _cmd_server_deal(args: argparse.Namespace) -> int:
    from vertimrf.protocol.channels import load_public_keys
    from vertimrf.server.secure import SecureServer

    cfg, plan = _secure_config(args.config)
    keys = load_public_keys(args.keys)
    unknown = sorted(set(keys) - set(plan.names))
    if unknown:
        raise ConfigError(f"--keys holds keys of {unknown}, not parties of {list(plan.names)}.")
    folder = Path(args.out_dir)
    paths = {name: folder / f"{_file_name(name)}.deal" for name in plan.names}
    _check_outputs(args, paths.values(), [args.config, args.keys, args.server_key], make_dirs=True)
    deals = SecureServer(cfg, keypair=_server_key(args)).deal(keys)
    _write_all({paths[name]: deal for name, deal in deals.items()})
    print("dealt to (each party checks its fingerprint):")
    print(_fingerprints({name: keys[name] for name in plan.names}))
    print(f"wrote {len(deals)} sealed deals to {folder} ({sum(map(len, deals.values())):,} bytes)")
    return 0


def _cmd_server_select(args: argparse.Namespace) -> int:
    from vertimrf.protocol.securemsg import SecureRelease, save_request
    from vertimrf.server.secure import SecureServer

    cfg, plan = _secure_config(args.config, select_only=True)
    _check_outputs(args, [args.out, args.state], [args.config, args.releases, args.server_key])
    server = SecureServer(cfg, seed=args.seed, keypair=_server_key(args))
    with _Phases("server select", ("read", "select", "write"), args.quiet) as ph:
        with ph("read"):
            releases = [SecureRelease.load(p, plan) for p in args.releases]
            _one_per_party([r.party for r in releases], args.releases, "releases")
        with ph("select"):
            request = server.select(releases)
        with ph("write"), _staged(args.out, args.state) as (request_tmp, state_tmp):
            save_request(request_tmp, cfg.config_hash(), request)
            server.save_state(state_tmp)
    cross = sum(plan.kind(m) == "cross" for m in request.marginals)
    print(
        f"server: {len(request.marginals)} marginals to re-measure ({cross} across parties, "
        f"{len(request.bins)} on bins); wrote "
        f"{args.out} (give it to every party) and {args.state} (keep it); {ph.summary()}"
    )
    return 0


def _server_synthesize_secure(
    args: argparse.Namespace, cfg: ProtocolConfig, files: list[str]
) -> int:
    """``server synthesize`` of method secure: from the state of ``server select``."""
    from vertimrf.protocol.securemsg import SecureRelease
    from vertimrf.server.secure import SecureServer

    if args.state is None:
        raise ConfigError("method secure needs --state (the file `vertimrf server select` wrote).")
    with _Phases("server synthesize", ("read", "synthesize", "write"), args.quiet) as ph:
        with ph("read"):
            server = SecureServer.load_state(
                cfg, args.state, seed=args.seed, keypair=_server_key(args)
            )
            releases = [SecureRelease.load(p, server.plan) for p in files]
            _one_per_party([r.party for r in releases], files, "releases")
        with ph("synthesize"):
            synth = server.synthesize(releases, rows=args.n, sample_seed=args.sample_seed)
        sizes = {r.party: os.path.getsize(p) for r, p in zip(releases, files, strict=True)}
        report = server.report(seconds=dict(ph.seconds), message_bytes=sizes)
        _write_synthetic(args, ph, synth, report)
    return 0


def _write_synthetic(
    args: argparse.Namespace, ph: _Phases, synth: pd.DataFrame, report: ProtocolReport
) -> None:
    """The synthetic CSV and (``--report``) the report's JSON, both or neither; then print."""
    outputs = [args.out, *([args.report] if args.report else [])]
    with ph("write"), _staged(*outputs) as temps:
        with open(temps[0], "w", encoding="utf-8") as fh:
            synth.to_csv(fh, index=False)
        if args.report:
            temps[1].write_text(json.dumps(report.to_dict(), indent=2), encoding="utf-8")
    print(report)
    print(f"\nwrote {len(synth)} synthetic rows to {args.out}; {ph.summary()}")


def _server_synthesize_paper(args: argparse.Namespace, cfg: ProtocolConfig) -> int:
    """``server synthesize`` of the paper pipeline: the parties' local messages (positional)
    and their secure releases of the binned cross-party pairs (``--releases``)."""
    from vertimrf.protocol import PartyMessage
    from vertimrf.protocol.secure import SecurePlan
    from vertimrf.protocol.securemsg import SecureRelease
    from vertimrf.server import PaperServer

    if args.state is not None:
        raise ConfigError("the paper pipeline has no --state (it has no `server select`).")
    if not args.messages or not args.releases:
        raise ConfigError(
            "the paper pipeline needs every party's local message (from `party local`, as "
            "positional files) and its release (from `party release`, after --releases)."
        )
    plan = SecurePlan.from_config(cfg)
    with _Phases("server synthesize", ("read", "synthesize", "write"), args.quiet) as ph:
        with ph("read"):
            messages = [PartyMessage.load(p, cfg) for p in args.messages]
            releases = [SecureRelease.load(p, plan) for p in args.releases]
            _one_per_party([m.party for m in messages], args.messages, "local messages")
            _one_per_party([r.party for r in releases], args.releases, "releases")
        with ph("synthesize"):
            server = PaperServer(
                cfg, progress=False if args.quiet else None, keypair=_server_key(args)
            )
            synth, report = server.synthesize(
                messages,
                n=args.n,
                seed=args.seed,
                secure_releases=releases,
                sample_seed=args.sample_seed,
            )
        sizes = dict.fromkeys(plan.names, 0)
        for m, path in zip(messages, args.messages, strict=True):
            sizes[m.party] += os.path.getsize(path)
        for r, path in zip(releases, args.releases, strict=True):
            sizes[r.party] += os.path.getsize(path)
        report = dataclasses.replace(report, message_bytes=sizes)
        _write_synthetic(args, ph, synth, report)
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from vertimrf.metrics import svm_misclassification, tvd

    _check_outputs(args, [args.json], [args.spec, args.real, args.synth])
    spec = _load_spec(args)
    ways = _parse_ways(args.ways, len(spec))
    if args.label is not None and args.label not in spec.names:
        raise ConfigError(f"--label {args.label!r} is not a column of the spec {list(spec.names)}.")
    real, synth = _read_csv(args.real), _read_csv(args.synth)
    for path, frame in ((args.real, real), (args.synth, synth)):
        missing = [c for c in spec.names if c not in frame.columns]
        if missing:
            raise ConfigError(
                f"{path} lacks the spec's columns {missing}; give a CSV with every column of "
                "the spec (others are ignored)."
            )
    real, synth = real[list(spec.names)], synth[list(spec.names)]
    out = {f"tvd{w}": tvd(real, synth, spec, ways=w) for w in ways}
    if args.label:
        # The synthetic file was made from all real rows; every fold tests on real rows.
        res = svm_misclassification(real, lambda _: synth, spec, args.label)
        out["svm_misclassification"] = res.mean
    for k, v in out.items():
        print(f"{k}: {v:.4f}")
    if args.json:
        _write_json(args.json, out)
    return 0


def _parse_ways(value: str, columns: int) -> list[int]:
    """``--ways``: comma-separated marginal sizes, each from 1 to the number of columns."""
    try:
        ways = [int(w) for w in value.split(",")]
    except ValueError:
        ways = []
    if not ways or any(not 1 <= w <= columns for w in ways):
        raise ConfigError(
            f"--ways must be comma-separated integers from 1 to {columns} (the spec's columns), "
            f"e.g. 3,4,5; got {value!r}."
        )
    return ways


def _spec_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default=None, help="a bundled dataset's spec (adult, nltcs)")
    p.add_argument("--spec", default=None, help="a DomainSpec JSON file")


def _add_demo(sub: argparse._SubParsersAction) -> None:
    """The `demo` command."""
    demo = sub.add_parser(
        "demo",
        help="VertiMRF on bundled Adult (2 parties) against the FO and Centralized baselines",
        description="Run, in one process, on the bundled Adult data (45,222 rows, 15 columns) "
        "split over two parties (columns 0-7 and 8-14): VertiMRF-Secure, the secure method "
        "(the default; DP), the VertiMRF-FO baseline (GRR frequency oracle; DP) and the "
        "Centralized baseline (PrivMRF on the whole table, as if one party held it; DP), each "
        "at the same epsilon with the public delta = 1e-6. Print the 3-, 4- and 5-way TVD of each "
        "synthetic table against the real one (300 random marginals), the seconds of each, "
        "and for the two protocol runs the seconds per phase, the message sizes and the "
        "privacy report. With --fm, also the paper's FM sketches, labelled NOT differentially "
        "private. Takes a few minutes; the first run also compiles the Numba kernels.",
    )
    demo.add_argument("--epsilon", type=float, default=1.6, help="total budget (default 1.6)")
    demo.add_argument(
        "--fm", action="store_true", help="also run the paper's FM path (NOT DP; for comparison)"
    )
    demo.add_argument("--t", type=int, default=None, help="FM sketch repetitions (preset's t)")
    demo.add_argument("--seed", type=int, default=None, help="seed for reproducible runs")
    demo.add_argument("--json", default=None, help="also write the figures to this JSON file")
    demo.add_argument("--quiet", action="store_true", help="no progress bars")
    _force_arg(demo)
    demo.set_defaults(func=_cmd_demo)


def _add_keys(sub: argparse._SubParsersAction) -> None:
    """The `keys` command."""
    keys = sub.add_parser(
        "keys",
        help="make a party's X25519 key pair (method secure)",
        description="Write NAME.key (private, mode 0600) and NAME.pub (for the server and the "
        "peers) and print the fingerprint to compare with the peers out of band. Never "
        "overwrites a key.",
    )
    keys.add_argument("--name", required=True, help="this party's name in the config")
    keys.add_argument("--out-dir", required=True, help="folder for NAME.key and NAME.pub")
    _force_arg(keys)
    keys.set_defaults(func=_cmd_keys)


def _add_secret(sub: argparse._SubParsersAction) -> None:
    """The `secret` command, and `secret share` / `secret open` of the group secret."""
    secret = sub.add_parser(
        "secret",
        help="make a shared secret for the parties",
        description="Write 32 random bytes (hex) to a file; the parties derive their hash keys "
        "from it. Share it among the parties only, never with the server. `secret share` and "
        "`secret open` pass it to the peers through the server, sealed under pairwise keys.",
    )
    secret.add_argument(
        "--out", dest="legacy_out", metavar="FILE", default=None, help="file to write"
    )
    _force_arg(secret)
    secret.set_defaults(func=_cmd_secret)
    ssub = secret.add_subparsers(dest="action", metavar="{share,open}")
    share = ssub.add_parser(
        "share",
        help="draw the group secret and seal it for each peer",
        description="Draw a fresh 32-byte group secret; write your copy to DIR/NAME.secret and, "
        "for each peer, DIR/secret-NAME-to-PEER.sealed (AES-GCM under your pairwise key, so "
        "the peer knows it came from you). The server relays the sealed files.",
    )
    share.add_argument("--keys", required=True, help="your key pair (NAME.key)")
    share.add_argument("--to", nargs="+", required=True, help="the peers' public keys (.pub)")
    share.add_argument("--out-dir", required=True, help="folder for the secret and sealed files")
    _force_arg(share)
    share.set_defaults(func=_cmd_secret_share)
    opn = ssub.add_parser(
        "open",
        help="open a group secret a peer sealed for you",
        description="Open secret-SENDER-to-YOU.sealed with your key and the sender's public "
        "key, and write the secret in the format --secret reads.",
    )
    opn.add_argument("file", help="the sealed secret file")
    opn.add_argument("--keys", required=True, help="your key pair (NAME.key)")
    opn.add_argument("--from", dest="sender", required=True, help="the sender's public key")
    opn.add_argument("--out", required=True, help="secret file to write")
    _force_arg(opn)
    opn.set_defaults(func=_cmd_secret_open)


def _add_config(sub: argparse._SubParsersAction) -> None:
    """The `config` command."""
    config = sub.add_parser(
        "config",
        help="write a protocol config every role shares",
        description="Write the public protocol config (budget, parties, method and its settings) "
        "and print its plan: every release, the worst-case ledger total, bytes and memory.",
    )
    _spec_args(config)
    config.add_argument(
        "--party", action="append", required=True, help="NAME=col1,col2,... (repeat once per party)"
    )
    config.add_argument("--epsilon", type=float, required=True)
    config.add_argument("--delta", type=float, required=True)
    config.add_argument(
        "--method",
        choices=("fo", "fm", "secure"),
        default=None,
        help="secure (secure cross-party product, DP; needs --max-rows; the default preset's), "
        "fo (GRR, DP; the paper preset's) or fm (the paper's sketches, NOT DP)",
    )
    config.add_argument("--preset", choices=("default", "paper"), default="default")
    config.add_argument("--t", default=None, help="FM repetitions, or 'auto' (default: preset)")
    config.add_argument(
        "--max-rows",
        type=int,
        default=None,
        help="public upper bound on the record count (method secure pads every party to it)",
    )
    config.add_argument(
        "--allow-non-dp",
        action="store_true",
        help="accept a method that is NOT differentially private (FM sketches, xxh64)",
    )
    config.add_argument(
        "--feature-width",
        type=_feature_width,
        default=None,
        help="secure: each party's one-hot width cap (attribute pairs and triples fill it; "
        "party time and memory grow with it), an integer or 'auto' (the default: "
        "min(576, 2^26 / max-rows) as a power of two, at least the widest attribute)",
    )
    config.add_argument(
        "--binning",
        choices=("auto", "off"),
        default=None,
        help="secure: 'auto' (the default) re-measures a 2-way marginal on bins where the "
        "server estimates a lower error than at its full domain (fitted as bin sums); 'off' "
        "measures every marginal at its full domain",
    )
    config.add_argument(
        "--pipeline",
        choices=("select", "paper"),
        default=None,
        help="secure: 'select' (the default: one budget, the server's selection over the whole "
        "table) or 'paper' (the paper's LocMRF -> GraphCom -> InitMRF -> OptMRF on secure "
        "estimates of the binned cross-party pairs; its parties run `party local` first)",
    )
    config.add_argument(
        "--max-memory-gb",
        type=float,
        default=None,
        help="the memory any one role may need (GB; default 16): a config whose estimated "
        "peak is larger is refused",
    )
    config.add_argument("--count-party", default=None, help="party releasing the noisy count")
    config.add_argument("--out", required=True, help="config JSON to write")
    _force_arg(config)
    config.set_defaults(func=_cmd_config)


def _feature_width(value: str) -> int | str:
    """``--feature-width``: 'auto' or an integer."""
    if value == "auto":
        return value
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'auto' or an integer, not {value!r}") from None


def _party_args(p: argparse.ArgumentParser) -> None:
    """Options of every party command: config, name, data, secret, seed."""
    p.add_argument("--config", required=True, help="the shared protocol config")
    p.add_argument("--party", "--name", dest="party", required=True, help="this party's name")
    p.add_argument("--data", required=True, help="CSV with the ID column and own columns")
    p.add_argument("--id-column", default="id", help="record-ID column (default 'id')")
    p.add_argument(
        "--secret-file", "--secret", dest="secret_file", required=True, help="the group secret"
    )
    p.add_argument("--seed", type=int, default=None, help="seed (experiments only)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    _force_arg(p)


def _force_arg(p: argparse.ArgumentParser) -> None:
    """``--force``: replace an existing output file (never an input, a key, a secret, a
    private state, a step record or a config)."""
    p.add_argument(
        "--force",
        action="store_true",
        help="replace existing output files (never an input, a key, a secret, a private "
        "state, a step record or a config)",
    )


def _secure_args(p: argparse.ArgumentParser, required: bool) -> None:
    """Options of the party commands of method secure (optional in `party release`)."""
    p.add_argument(
        "--keys",
        required=required,
        default=None,
        help="this party's NAME.key (its noise derives from it; every method needs it)",
    )
    p.add_argument(
        "--peers", nargs="+", required=required, default=None, help="the peers' public keys"
    )
    p.add_argument("--deal", required=required, default=None, help="this party's NAME.deal")
    p.add_argument(
        "--local",
        default=None,
        help="paper pipeline: this party's local message (from `party local`; its bin maps)",
    )


def _add_party(sub: argparse._SubParsersAction) -> None:
    """The `party local`, `party features`, `party release` and `party measure` commands."""
    party = sub.add_parser("party", help="a party's role", description="A party's role.")
    psub = party.add_subparsers(dest="action", required=True)
    loc = psub.add_parser(
        "local",
        help="method secure, paper pipeline: the local model and bin maps",
        description="The paper pipeline's first party step: fit the local DP MRF (LocMRF) and "
        "release the noisy value counts that make the bin maps; write the message for the "
        "server, which this party also passes as --local to `party features` and `party "
        "release`. Once per run (the step record refuses a second one).",
    )
    _party_args(loc)
    loc.add_argument(
        "--keys", required=True, help="this party's NAME.key (its noise derives from it)"
    )
    loc.add_argument("--out", required=True, help="local message file to write")
    loc.add_argument(
        "--count-from",
        default=None,
        help="the count party's local message, for its noisy count (every other party needs it)",
    )
    loc.add_argument("--ledger", default=None, help="step record (default OUT_DIR/NAME.steps.json)")
    loc.set_defaults(func=_cmd_party_local)
    feat = psub.add_parser(
        "features",
        help="method secure: masked features for each peer",
        description="Open the server's deal, order the rows by a keyed PRF of the record IDs, "
        "pad them to max_rows and write DIR/NAME-to-PEER.blob for each peer (X - U under the "
        "pairwise key; the server relays them and cannot open them).",
    )
    _party_args(feat)
    _secure_args(feat, required=True)
    feat.add_argument("--out-dir", required=True, help="folder for the blobs")
    feat.add_argument(
        "--ledger", default=None, help="step record (default OUT_DIR/NAME.steps.json)"
    )
    feat.set_defaults(func=_cmd_party_features)
    rel = psub.add_parser(
        "release",
        help="make a party's message (all its DP releases) for the server",
        description="Methods fo and fm: run LocMRF, binning and LocEnc on this party's CSV and "
        "write its message. "
        "Method secure: recompute the features from the same deal, read the peers' blobs "
        "(--blobs DIR/PEER-to-NAME.blob) and write the first release of every 2-way marginal; "
        "once per run (the step record refuses a second release). The shares are kept for "
        "`party measure` in a private file next to the step record (NAME.state.vmrf, mode "
        "0600; never give it to anyone). Paper pipeline (--local from `party local`): the one "
        "release of every binned cross-party pair, and no state (it has no measure step).",
    )
    _party_args(rel)
    rel.add_argument("--out", required=True, help="message file to write")
    rel.add_argument(
        "--count-from",
        default=None,
        help="fo/fm: the count party's message, for its noisy count (every other party needs it)",
    )
    _secure_args(rel, required=False)
    rel.add_argument("--blobs", default=None, help="secure: folder with the peers' blobs")
    rel.add_argument(
        "--ledger", default=None, help="secure: step record (default OUT_DIR/NAME.steps.json)"
    )
    rel.set_defaults(func=_cmd_party_release)
    mea = psub.add_parser(
        "measure",
        help="method secure: re-measure the marginals the server requests",
        description="Check the request belongs to this run, read the shares from the private "
        "state that `party release` kept next to the step record (NAME.state.vmrf; checked "
        "against the record, the run, the deal and the data), and write the re-measurement "
        "with fresh noise; once per run (the step record refuses a second measure). Neither "
        "the deal is opened nor the peers' blobs are read again.",
    )
    _party_args(mea)
    _secure_args(mea, required=True)
    mea.add_argument(
        "--blobs", default=None, help="ignored (the shares come from release's private state)"
    )
    mea.add_argument("--request", required=True, help="the server's request.json")
    mea.add_argument("--out", required=True, help="release file to write")
    mea.add_argument("--ledger", default=None, help="step record (default OUT_DIR/NAME.steps.json)")
    mea.set_defaults(func=_cmd_party_measure)


def _server_key_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--server-key",
        required=True,
        help="the server's NAME.key (`vertimrf keys --name server`): its deal and its noise "
        "derive from it, so a re-run writes the same bytes",
    )


def _add_server(sub: argparse._SubParsersAction) -> None:
    """The `server deal`, `server select` and `server synthesize` commands."""
    server = sub.add_parser("server", help="the server's role", description="The server's role.")
    ssub = server.add_subparsers(dest="action", required=True)
    deal = ssub.add_parser(
        "deal",
        help="method secure: seal each party's correlated randomness",
        description="Write DIR/NAME.deal for each party, sealed to its public key (the deal's "
        "randomness derives from the server's key and the run; it cannot change the synthetic "
        "table).",
    )
    deal.add_argument("--config", required=True, help="the shared protocol config")
    deal.add_argument("--keys", nargs="+", required=True, help="every party's public key")
    _server_key_arg(deal)
    deal.add_argument("--out-dir", required=True, help="folder for the deals")
    _force_arg(deal)
    deal.set_defaults(func=_cmd_server_deal)
    sel = ssub.add_parser(
        "select",
        help="method secure: choose the marginals to re-measure",
        description="Sum the parties' first releases, add the server's noise, choose the model "
        "and the marginals to re-measure; write the request for the parties and the server's "
        "private state for `server synthesize`.",
    )
    sel.add_argument("--config", required=True, help="the shared protocol config")
    sel.add_argument("--releases", nargs="+", required=True, help="every party's first release")
    sel.add_argument("--out", required=True, help="request JSON to write")
    sel.add_argument("--state", required=True, help="server state to write (keep it)")
    _server_key_arg(sel)
    sel.add_argument(
        "--seed", type=int, default=None, help="run seed: seeds the DP noise (experiments only)"
    )
    sel.add_argument("--quiet", action="store_true", help="no progress bars")
    _force_arg(sel)
    sel.set_defaults(func=_cmd_server_select)
    syn = ssub.add_parser(
        "synthesize",
        help="synthesize a table from the parties' messages",
        description="Check the messages, run GraphCom, InitMRF and OptMRF, sample, and write "
        "the synthetic CSV and the privacy report. Method secure: --state from `server select` "
        "and the parties' re-measurements (--releases).",
    )
    syn.add_argument("messages", nargs="*", help="the parties' message files")
    syn.add_argument("--releases", nargs="+", default=None, help="the same, as an option")
    syn.add_argument("--state", default=None, help="secure: the state `server select` wrote")
    syn.add_argument("--config", required=True, help="the shared protocol config")
    syn.add_argument("--out", required=True, help="synthetic CSV to write")
    syn.add_argument("--report", default=None, help="also write the report as JSON")
    syn.add_argument("--n", type=int, default=None, help="rows (default: the noisy count)")
    syn.add_argument(
        "--server-key",
        default=None,
        help="secure: the server's NAME.key (`vertimrf keys --name server`); its noise "
        "derives from it",
    )
    syn.add_argument(
        "--seed",
        type=int,
        default=None,
        help="run seed: seeds the DP noise and the sampling (experiments only; the report says so)",
    )
    syn.add_argument(
        "--sample-seed",
        type=int,
        default=None,
        help="seeds the sampling of the synthetic rows only (no effect on the privacy)",
    )
    syn.add_argument("--quiet", action="store_true", help="no progress bars")
    _force_arg(syn)
    syn.set_defaults(func=_cmd_server_synthesize)


def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    """The `evaluate` command."""
    ev = sub.add_parser(
        "evaluate",
        help="TVD and SVM metrics of a synthetic CSV against the real one",
        description="l-way TVD (300 random marginals) and, with --label, the misclassification "
        "rate of an RBF SVM trained on the synthetic rows and tested on real folds.",
    )
    _spec_args(ev)
    ev.add_argument("--real", required=True, help="real CSV")
    ev.add_argument("--synth", required=True, help="synthetic CSV")
    ev.add_argument("--ways", default="3,4,5", help="marginal sizes (default 3,4,5)")
    ev.add_argument("--label", default=None, help="label column for the SVM metric")
    ev.add_argument("--json", default=None, help="also write the figures as JSON")
    _force_arg(ev)
    ev.set_defaults(func=_cmd_evaluate)


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
        _add_demo,
        _add_keys,
        _add_secret,
        _add_config,
        _add_party,
        _add_server,
        _add_evaluate,
    ):
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``vertimrf`` command: one line on stderr for an error (exit 2),
    a warning (each once) or Ctrl-C (exit 130)."""
    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
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
    except _Interrupted as exc:
        written = ", ".join(str(p) for p in exc.written)
        print(f"vertimrf: interrupted after writing {written} (complete)", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("vertimrf: interrupted; nothing was written; safe to re-run", file=sys.stderr)
        return 130
    return 2


def _one_line_warning(shown: set[str]) -> Callable[..., None]:
    """A ``warnings.showwarning`` that prints each warning's text once, on one line."""

    def show(message: Warning | str, *_: object, **__: object) -> None:
        text = str(message)
        if text not in shown:
            shown.add(text)
            print(f"vertimrf: warning: {text}", file=sys.stderr, flush=True)

    return show
