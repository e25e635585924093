"""The ``vertimrf`` command: the demo, the protocol roles, and evaluation."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence

from vertimrf.errors import ConfigError, VertimrfError

WAYS = (3, 4, 5)


def _write_json(path: str, data: dict) -> None:
    from vertimrf.io import atomic_write_text

    atomic_write_text(path, json.dumps(data, indent=2))


def _load_spec(args: argparse.Namespace):
    from vertimrf.datasets import load_dataset
    from vertimrf.domain import DomainSpec

    if bool(args.dataset) == bool(args.spec):
        raise ConfigError("give exactly one of --dataset NAME or --spec SPEC.json.")
    return load_dataset(args.dataset)[1] if args.dataset else DomainSpec.from_json(args.spec)


def _read_csv(path: str):
    import pandas as pd

    try:
        df = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read CSV {path}: {exc}") from None
    df.columns = [str(c) for c in df.columns]
    return df


def _cmd_demo(args: argparse.Namespace) -> int:
    from vertimrf import PrivMRF, load_dataset, simulate
    from vertimrf.metrics import tvd

    df, spec = load_dataset("adult")
    names = list(spec.names)
    parties = [names[:8], names[8:]]
    delta = 1.0 / len(df)
    print(
        f"VertiMRF demo: bundled Adult (n={len(df)}), 2 parties (columns {names[0]}-{names[7]} "
        f"and {names[8]}-{names[-1]}), epsilon={args.epsilon}, delta=1/n, t={args.t}, "
        f"{os.cpu_count()} cores. First use compiles or loads the Numba kernels.",
        flush=True,
    )
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        synth, report = simulate(
            df,
            spec,
            parties,
            args.epsilon,
            delta,
            seed=args.seed,
            t=args.t,
            progress=not args.quiet,
            message_dir=tmp,
        )
    fm_seconds = time.perf_counter() - start
    start = time.perf_counter()
    central = PrivMRF(args.epsilon, delta, seed=args.seed, progress=False).fit(df, spec).sample()
    central_seconds = time.perf_counter() - start
    fm = {w: tvd(df, synth, spec, ways=w) for w in WAYS}
    ce = {w: tvd(df, central, spec, ways=w) for w in WAYS}
    print("\nl-way TVD against the real data (300 random marginals each):")
    print(f"{'':<22}" + "".join(f"{w}-way".rjust(9) for w in WAYS))
    print(f"{'VertiMRF-FM':<22}" + "".join(f"{fm[w]:9.4f}" for w in WAYS))
    print(f"{'Centralized (PrivMRF)':<22}" + "".join(f"{ce[w]:9.4f}" for w in WAYS))
    print(f"\nwall time: VertiMRF {fm_seconds:.1f} s, Centralized {central_seconds:.1f} s")
    print("per phase: " + ", ".join(f"{k} {v:.2f} s" for k, v in report.seconds.items()))
    print("message sizes: " + ", ".join(f"{k} {v:,} B" for k, v in report.message_bytes.items()))
    print()
    print(report.ledger.report(report.delta))
    if args.json:
        _write_json(
            args.json,
            {
                "dataset": "adult",
                "epsilon": args.epsilon,
                "delta": delta,
                "t": args.t,
                **{f"fm_tvd{w}": fm[w] for w in WAYS},
                **{f"central_tvd{w}": ce[w] for w in WAYS},
                "seconds_total": fm_seconds,
                "central_seconds": central_seconds,
                "seconds": report.seconds,
                "message_bytes": report.message_bytes,
                "total_epsilon": report.total_epsilon,
                "cores": os.cpu_count(),
            },
        )
    return 0


def _cmd_secret(args: argparse.Namespace) -> int:
    from vertimrf.io import atomic_open
    from vertimrf.sketch.keys import new_shared_secret

    with atomic_open(args.out, "w") as fh:
        fh.write(new_shared_secret().hex() + "\n")
    os.chmod(args.out, 0o600)
    print(f"wrote a new shared secret to {args.out}; give it to every party, never the server")
    return 0


def _parse_parties(items: Sequence[str]) -> list[tuple[str, list[str]]]:
    out = []
    for item in items:
        name, sep, cols = item.partition("=")
        if not sep or not name or not cols:
            raise ConfigError(f"--party needs NAME=col1,col2,...; got {item!r}.")
        out.append((name, [c for c in cols.split(",") if c]))
    return out


def _cmd_config(args: argparse.Namespace) -> int:
    from vertimrf.vertical import ProtocolConfig

    spec = _load_spec(args)
    t = args.t if args.t == "auto" else int(args.t)
    cfg = ProtocolConfig.from_preset(
        args.preset,
        epsilon=args.epsilon,
        delta=args.delta,
        spec=spec,
        parties=_parse_parties(args.party),
        method=args.method,
        t=t,
        **({"count_party": args.count_party} if args.count_party else {}),
    )
    cfg.save(args.out)
    print(f"wrote the protocol config to {args.out} (hash {cfg.config_hash()[:16]})")
    return 0


def _cmd_party_encode(args: argparse.Namespace) -> int:
    from vertimrf.vertical import Party, PartyMessage, ProtocolConfig, resolve_t

    cfg = ProtocolConfig.load(args.config)
    if cfg.t == "auto":
        if args.n_hint is None:
            raise ConfigError("the config has t='auto'; pass --n-hint (a public row count).")
        cfg = resolve_t(cfg, args.n_hint)
    with open(args.secret_file, encoding="utf-8") as fh:
        try:
            secret = bytes.fromhex(fh.read().strip())
        except ValueError:
            raise ConfigError(
                f"{args.secret_file}: not a hex secret (make one with `vertimrf secret`)."
            ) from None
    df = _read_csv(args.data)
    party = Party(
        args.party,
        df,
        cfg,
        secret,
        id_column=args.id_column,
        seed=args.seed,
        progress=not args.quiet,
    )
    noisy = PartyMessage.load(args.count_from).noisy_count if args.count_from else None
    message = party.encode(noisy_count=noisy)
    message.save(args.out)
    print(
        f"{args.party}: wrote {args.out} ({os.path.getsize(args.out):,} bytes); "
        + ", ".join(f"{k} {v:.2f} s" for k, v in party.timings.items())
    )
    return 0


def _cmd_server_synthesize(args: argparse.Namespace) -> int:
    from vertimrf.io import atomic_open
    from vertimrf.vertical import PartyMessage, ProtocolConfig, Server, resolve_t

    cfg = ProtocolConfig.load(args.config)
    messages = [PartyMessage.load(p) for p in args.messages]
    if cfg.t == "auto":
        if args.n_hint is None:
            raise ConfigError("the config has t='auto'; pass the parties' --n-hint.")
        cfg = resolve_t(cfg, args.n_hint)
    synth, report = Server(cfg, progress=not args.quiet).synthesize(
        messages, n=args.n, seed=args.seed
    )
    with atomic_open(args.out, "w") as fh:
        synth.to_csv(fh, index=False)
    if args.report:
        _write_json(args.report, report.to_dict())
    print(report)
    print(f"\nwrote {len(synth)} synthetic rows to {args.out}")
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from vertimrf.metrics import svm_misclassification, tvd

    spec = _load_spec(args)
    real, synth = _read_csv(args.real), _read_csv(args.synth)
    real = real[list(spec.names)] if set(spec.names) <= set(real.columns) else real
    ways = [int(w) for w in args.ways.split(",")]
    out = {f"tvd{w}": tvd(real, synth[list(spec.names)], spec, ways=w) for w in ways}
    if args.label:
        # The synthetic file was made from all real rows; every fold tests on real rows.
        res = svm_misclassification(real, lambda _: synth[list(spec.names)], spec, args.label)
        out["svm_misclassification"] = res.mean
    for k, v in out.items():
        print(f"{k}: {v:.4f}")
    if args.json:
        _write_json(args.json, out)
    return 0


def _spec_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default=None, help="a bundled dataset's spec (adult, nltcs)")
    p.add_argument("--spec", default=None, help="a DomainSpec JSON file")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="vertimrf",
        description="Differentially private synthetic data for vertically partitioned tables.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser(
        "demo",
        help="VertiMRF on bundled Adult (2 parties) against the Centralized baseline",
        description="Run VertiMRF-FM on bundled Adult split over 2 parties (columns 0-7 and "
        "8-14) and the Centralized baseline (PrivMRF on the whole table); print 3-, 4- and "
        "5-way TVD, the time per phase, the message sizes and the privacy report.",
    )
    demo.add_argument("--epsilon", type=float, default=1.6, help="total budget (default 1.6)")
    demo.add_argument("--t", type=int, default=2000, help="sketch repetitions (default 2000)")
    demo.add_argument("--seed", type=int, default=None, help="seed for reproducible runs")
    demo.add_argument("--json", default=None, help="also write the figures to this JSON file")
    demo.add_argument("--quiet", action="store_true", help="no progress bars")
    demo.set_defaults(func=_cmd_demo)

    secret = sub.add_parser(
        "secret",
        help="make a shared secret for the parties",
        description="Write 32 random bytes (hex) to a file; the parties derive their hash keys "
        "from it. Share it among the parties only, never with the server.",
    )
    secret.add_argument("--out", required=True, help="file to write")
    secret.set_defaults(func=_cmd_secret)

    config = sub.add_parser(
        "config",
        help="write a protocol config every role shares",
        description="Write the public protocol config (budget, parties, sketch settings).",
    )
    _spec_args(config)
    config.add_argument(
        "--party", action="append", required=True, help="NAME=col1,col2,... (repeat once per party)"
    )
    config.add_argument("--epsilon", type=float, required=True)
    config.add_argument("--delta", type=float, required=True)
    config.add_argument("--method", choices=("fm", "fo"), default="fm")
    config.add_argument("--preset", choices=("default", "paper"), default="default")
    config.add_argument("--t", default="2000", help="repetitions, or 'auto'")
    config.add_argument("--count-party", default=None, help="party releasing the noisy count")
    config.add_argument("--out", required=True, help="config JSON to write")
    config.set_defaults(func=_cmd_config)

    party = sub.add_parser("party", help="a party's role", description="A party's role.")
    psub = party.add_subparsers(dest="action", required=True)
    enc = psub.add_parser(
        "encode",
        help="encode a party's columns into a message for the server",
        description="Run LocMRF, binning and LocEnc on this party's CSV and write its message.",
    )
    enc.add_argument("--config", required=True, help="the shared protocol config")
    enc.add_argument("--party", required=True, help="this party's name in the config")
    enc.add_argument("--data", required=True, help="CSV with the ID column and own columns")
    enc.add_argument("--id-column", default="id", help="record-ID column (default 'id')")
    enc.add_argument("--secret-file", required=True, help="the parties' shared secret")
    enc.add_argument("--out", required=True, help="message file to write")
    enc.add_argument(
        "--count-from",
        default=None,
        help="FO variant: the count party's message (for its noisy count)",
    )
    enc.add_argument("--n-hint", type=float, default=None, help="public row count for t=auto")
    enc.add_argument("--seed", type=int, default=None, help="seed (experiments only)")
    enc.add_argument("--quiet", action="store_true", help="no progress bars")
    enc.set_defaults(func=_cmd_party_encode)

    server = sub.add_parser("server", help="the server's role", description="The server's role.")
    ssub = server.add_subparsers(dest="action", required=True)
    syn = ssub.add_parser(
        "synthesize",
        help="synthesize a table from the parties' messages",
        description="Check the messages, run GraphCom, InitMRF and OptMRF, sample, and write "
        "the synthetic CSV and the privacy report.",
    )
    syn.add_argument("messages", nargs="+", help="the parties' message files")
    syn.add_argument("--config", required=True, help="the shared protocol config")
    syn.add_argument("--out", required=True, help="synthetic CSV to write")
    syn.add_argument("--report", default=None, help="also write the report as JSON")
    syn.add_argument("--n", type=int, default=None, help="rows (default: the noisy count)")
    syn.add_argument("--n-hint", type=float, default=None, help="public row count for t=auto")
    syn.add_argument("--seed", type=int, default=None, help="seed for sampling")
    syn.add_argument("--quiet", action="store_true", help="no progress bars")
    syn.set_defaults(func=_cmd_server_synthesize)

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
    ev.set_defaults(func=_cmd_evaluate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``vertimrf`` command."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except VertimrfError as exc:
        print(f"vertimrf: error: {exc}", file=sys.stderr)
        return 2
