"""The ``vertimrf`` command: the demo, the protocol roles, and evaluation."""

from __future__ import annotations

import argparse
import json
import os
import sys
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


DEMO_LABELS = {
    "fo": "VertiMRF-FO (DP)",
    "fm": "VertiMRF-FM (NOT DP)",
    "central": "Centralized (DP)",
}


def _cmd_demo(args: argparse.Namespace) -> int:
    from vertimrf import load_dataset

    df, spec = load_dataset("adult")
    names = list(spec.names)
    print(
        f"VertiMRF demo: bundled Adult (n={len(df)}), 2 parties (columns {names[0]}-{names[7]} "
        f"and {names[8]}-{names[-1]}), epsilon={args.epsilon}, delta=1/n, {os.cpu_count()} "
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
                "delta": 1.0 / len(df),
                "seed": args.seed,
                "tvd": {DEMO_LABELS[k]: {str(w): v for w, v in t.items()} for k, t in tvds.items()},
                "seconds": {DEMO_LABELS[k]: v for k, v in seconds.items()},
                "reports": {DEMO_LABELS[k]: r.to_dict() for k, r in reports.items()},
                "cores": os.cpu_count(),
            },
        )
    return 0


def _demo_runs(args: argparse.Namespace, df, spec) -> tuple[dict, dict, dict]:
    """FO (and with --fm the FM path) through the protocol, and Centralized PrivMRF: the
    l-way TVDs, the seconds and the protocol reports of each."""
    from vertimrf import PrivMRF, simulate
    from vertimrf.metrics import tvd

    names, delta = list(spec.names), 1.0 / len(df)
    tvds, seconds, reports = {}, {}, {}
    for method in ["fo", "fm"] if args.fm else ["fo"]:
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
            progress=not args.quiet,
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
    from vertimrf.io import atomic_open
    from vertimrf.party.keys import new_shared_secret

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


def _parse_t(value: str) -> int | str:
    if value == "auto":
        return value
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"--t must be a positive integer or 'auto'; got {value!r}.") from None


def _cmd_config(args: argparse.Namespace) -> int:
    from vertimrf.protocol import ProtocolConfig

    spec = _load_spec(args)
    given = {
        "t": None if args.t is None else _parse_t(args.t),
        "count_party": args.count_party,
        "max_rows": args.max_rows,
        "allow_non_dp": args.allow_non_dp or None,
    }
    cfg = ProtocolConfig.from_preset(
        args.preset,
        epsilon=args.epsilon,
        delta=args.delta,
        spec=spec,
        parties=_parse_parties(args.party),
        method=args.method,
        **{k: v for k, v in given.items() if v is not None},
    )
    cfg.save(args.out)
    label = "" if cfg.dp_guarantee else "; NOT differentially private (allow_non_dp)"
    print(
        f"wrote the protocol config to {args.out} (hash {cfg.config_hash()[:16]}, t {cfg.t}, "
        f"fresh run nonce){label}"
    )
    return 0


def _read_secret(path: str) -> bytes:
    try:
        with open(path, encoding="ascii") as fh:
            return bytes.fromhex(fh.read().strip())
    except OSError as exc:
        raise ConfigError(f"cannot read the secret file {path}: {exc.strerror}.") from None
    except ValueError:
        raise ConfigError(f"{path}: not a hex secret (make one with `vertimrf secret`).") from None


def _cmd_party_release(args: argparse.Namespace) -> int:
    from vertimrf.party import Party
    from vertimrf.protocol import PartyMessage, ProtocolConfig

    cfg = ProtocolConfig.load(args.config)
    secret = _read_secret(args.secret_file)
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
    noisy = None
    if args.count_from:
        noisy = PartyMessage.load(args.count_from, cfg).noisy_count
        if noisy is None:
            raise ConfigError(
                f"{args.count_from} holds no noisy count: pass the message of the count party "
                f"{cfg.count_party!r}."
            )
    message = party.release(noisy_count=noisy)
    message.save(args.out)
    print(
        f"{args.party}: wrote {args.out} ({os.path.getsize(args.out):,} bytes); "
        + ", ".join(f"{k} {v:.2f} s" for k, v in party.timings.items())
    )
    return 0


def _cmd_server_synthesize(args: argparse.Namespace) -> int:
    from vertimrf.io import atomic_open
    from vertimrf.protocol import PartyMessage, ProtocolConfig
    from vertimrf.server import Server

    cfg = ProtocolConfig.load(args.config)
    messages = [PartyMessage.load(p, cfg) for p in args.messages]
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


def _add_demo(sub: argparse._SubParsersAction) -> None:
    """The `demo` command."""
    demo = sub.add_parser(
        "demo",
        help="VertiMRF on bundled Adult (2 parties) against the Centralized baseline",
        description="Run VertiMRF-FO (DP) on bundled Adult split over 2 parties (columns 0-7 "
        "and 8-14) and the Centralized baseline (PrivMRF on the whole table); print 3-, 4- and "
        "5-way TVD, the time per phase, the message sizes and the privacy reports. With --fm, "
        "also the paper's FM sketches, labelled NOT differentially private.",
    )
    demo.add_argument("--epsilon", type=float, default=1.6, help="total budget (default 1.6)")
    demo.add_argument(
        "--fm", action="store_true", help="also run the paper's FM path (NOT DP; for comparison)"
    )
    demo.add_argument("--t", type=int, default=None, help="FM sketch repetitions (preset's t)")
    demo.add_argument("--seed", type=int, default=None, help="seed for reproducible runs")
    demo.add_argument("--json", default=None, help="also write the figures to this JSON file")
    demo.add_argument("--quiet", action="store_true", help="no progress bars")
    demo.set_defaults(func=_cmd_demo)


def _add_secret(sub: argparse._SubParsersAction) -> None:
    """The `secret` command."""
    secret = sub.add_parser(
        "secret",
        help="make a shared secret for the parties",
        description="Write 32 random bytes (hex) to a file; the parties derive their hash keys "
        "from it. Share it among the parties only, never with the server.",
    )
    secret.add_argument("--out", required=True, help="file to write")
    secret.set_defaults(func=_cmd_secret)


def _add_config(sub: argparse._SubParsersAction) -> None:
    """The `config` command."""
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
    config.add_argument("--method", choices=("fo", "fm"), default="fo")
    config.add_argument("--preset", choices=("default", "paper"), default="default")
    config.add_argument("--t", default=None, help="FM repetitions, or 'auto' (default: preset)")
    config.add_argument(
        "--max-rows", type=int, default=None, help="public upper bound on the record count"
    )
    config.add_argument(
        "--allow-non-dp",
        action="store_true",
        help="accept a method that is NOT differentially private (FM sketches, xxh64)",
    )
    config.add_argument("--count-party", default=None, help="party releasing the noisy count")
    config.add_argument("--out", required=True, help="config JSON to write")
    config.set_defaults(func=_cmd_config)


def _add_party(sub: argparse._SubParsersAction) -> None:
    """The `party release` command."""
    party = sub.add_parser("party", help="a party's role", description="A party's role.")
    psub = party.add_subparsers(dest="action", required=True)
    rel = psub.add_parser(
        "release",
        help="make a party's message (all its DP releases) for the server",
        description="Run LocMRF, binning and LocEnc on this party's CSV and write its message.",
    )
    rel.add_argument("--config", required=True, help="the shared protocol config")
    rel.add_argument("--party", required=True, help="this party's name in the config")
    rel.add_argument("--data", required=True, help="CSV with the ID column and own columns")
    rel.add_argument("--id-column", default="id", help="record-ID column (default 'id')")
    rel.add_argument("--secret-file", required=True, help="the parties' shared secret")
    rel.add_argument("--out", required=True, help="message file to write")
    rel.add_argument(
        "--count-from",
        default=None,
        help="the count party's message, for its noisy count (every other party needs it)",
    )
    rel.add_argument("--seed", type=int, default=None, help="seed (experiments only)")
    rel.add_argument("--quiet", action="store_true", help="no progress bars")
    rel.set_defaults(func=_cmd_party_release)


def _add_server(sub: argparse._SubParsersAction) -> None:
    """The `server synthesize` command."""
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
    syn.add_argument("--seed", type=int, default=None, help="seed for sampling")
    syn.add_argument("--quiet", action="store_true", help="no progress bars")
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
    ev.set_defaults(func=_cmd_evaluate)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="vertimrf",
        description="Differentially private synthetic data for vertically partitioned tables.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_demo, _add_secret, _add_config, _add_party, _add_server, _add_evaluate):
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``vertimrf`` command."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except VertimrfError as exc:
        print(f"vertimrf: error: {exc}", file=sys.stderr)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"vertimrf: error: {where}{exc.strerror or exc}", file=sys.stderr)
    return 2
