"""``vertimrf config``: the protocol config every role shares."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vertimrf.cli.common import (
    check_outputs,
    file_name,
    force_arg,
    load_spec,
    spec_args,
    staged,
)
from vertimrf.errors import (
    ConfigError,
)
from vertimrf.protocol.seeds import DEALER

if TYPE_CHECKING:
    from vertimrf.domain import DomainSpec
    from vertimrf.protocol import ProtocolConfig
    from vertimrf.protocol.plan import RunPlan

# A party that sends more than this many times its table's bytes is told so.
TRAFFIC_RATIO = 10


def parse_parties(items: Sequence[str]) -> list[tuple[str, list[str]]]:
    out = []
    for item in items:
        name, sep, cols = item.partition("=")
        if not sep or not name or not cols:
            raise ConfigError(f"--party needs NAME=col1,col2,...; got {item!r}.")
        out.append((name, [c for c in cols.split(",") if c]))
    return out


def refuse_positions(parties: Sequence[tuple[str, list[str]]], spec: DomainSpec) -> None:
    """ConfigError when ``--party`` gives column positions: it takes column names (a bundled
    data set's columns are named "0", "1", ..., which are names)."""
    positions = [
        c for _, cols in parties for c in cols if c not in spec.names and c.isdigit()
        and int(c) < len(spec)
    ]  # fmt: skip
    if positions:
        raise ConfigError(
            f"--party takes column names, not positions: no column is named {positions}; "
            f"the spec's columns are {list(spec.names)}."
        )


def _parse_t(value: str) -> int | str:
    if value == "auto":
        return value
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"--t must be a positive integer or 'auto'; got {value!r}.") from None


def cmd_config(args: argparse.Namespace) -> int:
    from vertimrf.protocol.factory import from_preset
    from vertimrf.protocol.methods import rules
    from vertimrf.protocol.options import PRESETS, describe, options_class
    from vertimrf.protocol.plan import run_plan

    check_outputs(args, [args.out], [args.spec, args.workload, *(args.pin or [])])
    spec = load_spec(args)
    parties = parse_parties(args.party)
    refuse_positions(parties, spec)
    given = {
        "t": None if args.t is None else _parse_t(args.t),
        "count_party": args.count_party,
        "max_rows": args.max_rows,
        "max_memory_gb": args.memory or machine_memory_gb(),
        "secure_max_total_cells": args.model_cells,
        "allow_non_dp": args.allow_non_dp or None,
        "secure_feature_width": args.feature_width,
        "secure_binning": args.binning,
        "secure_buckets": args.buckets,
        "secure_workload": None if args.workload is None else _read_workload(args.workload),
        "secure_values": args.values,
        "secure_numeric_share": args.numeric_share,
        "secure_pipeline": args.pipeline,
        "method": args.method,
        "record_sets": args.record_sets,
        "population": args.population,
        "region_share": args.region_share,
        "id_type": args.id_type,
        "expected_shared": args.expected_shared,
        "dealer": args.dealer,
        "cross_noise": args.cross_noise,
        "coin_weight": args.coin_weight,
        "product": args.product,
    }
    method = args.method or PRESETS[args.preset]["method"]
    if args.pipeline is not None and "secure_pipeline" not in options_class(method).SELECT:
        raise ConfigError(f"--pipeline is not an option of method {method!r}.")
    cls = options_class(method, args.pipeline)
    flags = {"--feature-width": "secure_feature_width", "--binning": "secure_binning",
             "--buckets": "secure_buckets", "--t": "t",
             "--workload": "secure_workload",
             "--model-cells": "secure_max_total_cells", "--values": "secure_values",
             "--numeric-share": "secure_numeric_share"}  # fmt: skip
    for flag, name in flags.items():
        if given[name] is not None and name not in cls.FLAT:
            raise ConfigError(f"{flag} is not an option of {describe(cls)}.")
    cfg = from_preset(
        args.preset,
        epsilon=args.epsilon,
        delta=args.delta,
        spec=spec,
        parties=parties,
        **{k: v for k, v in given.items() if v is not None},
    )
    if args.pin:
        from vertimrf.crypto.keys import load_public_keys

        cfg = cfg.with_identities(load_public_keys(args.pin).values())
    if cfg.dealer_role == DEALER and cfg.identities is None:
        raise ConfigError(
            "--dealer own needs every role's public key pinned, the dealer's included: add "
            "--pin with each party's, the server's and the dealer's .pub (`vertimrf keys "
            "--name dealer` makes the dealer's)."
        )
    if rules(cfg).secure_product:  # party names name the secure files
        for p in cfg.parties:
            file_name(p.name)
    with staged(args.out) as (tmp,):
        cfg.save(tmp)
    label = "" if cfg.dp_guarantee else "; NOT differentially private (allow_non_dp)"
    size = rules(cfg).summary(cfg)
    print(
        f"wrote the protocol config to {args.out} (hash {cfg.config_hash()[:16]}, method "
        f"{cfg.method}, {size}, fresh run nonce){label}"
    )
    if cfg.identities is not None:
        print("pinned identities (each role compares its own, and every role the config hash):")
        for name, key in cfg.public_keys().items():
            print(
                f"  {name}: key {key.fingerprint}; certificate {cfg.identities[name].fingerprint}"
            )
    plan = run_plan(cfg)
    print(plan.describe())
    for line in traffic_warnings(cfg, plan):
        print(f"vertimrf: warning: {line}", file=sys.stderr)
    return 0


def traffic_warnings(cfg: ProtocolConfig, plan: RunPlan) -> list[str]:
    """One line for each party whose planned bytes sent exceed :data:`TRAFFIC_RATIO` times
    its table's size: max_rows rows of its columns as codes (1 or 2 bytes a cell). Method
    secure only, whose parties send their rows."""
    from vertimrf.encoding import TableEncoder
    from vertimrf.protocol.plan import size

    max_rows = cfg.max_rows  # the config's public bound, not the table's size
    if max_rows is None or not plan.blob_bytes:
        return []
    lines = []
    for party in cfg.parties:
        sends = plan.role(party.name).sends
        cell = TableEncoder(cfg.spec.subset(party.columns)).dtype.itemsize
        table = max_rows * len(party.columns) * cell
        if sends > TRAFFIC_RATIO * table:
            lines.append(
                f"party {party.name} sends {size(sends)} in all, {sends / table:,.0f} times its "
                f"table ({max_rows:,} rows of max_rows x {len(party.columns)} columns x "
                f"{cell} byte{'s' * (cell > 1)} a cell = {size(table)}): the secure method "
                "sends masked one-hot features of every row; a smaller --max-rows or "
                "--feature-width sends less."
            )
    return lines


def add_config(sub: argparse._SubParsersAction) -> None:
    """The `config` command."""
    config = sub.add_parser(
        "config",
        help="write a protocol config every role shares",
        description="Write the public protocol config (budget, parties, method and its settings) "
        "and print its plan: every release, the worst-case ledger total, bytes and memory.",
    )
    spec_args(config)
    config.add_argument(
        "--party",
        action="append",
        required=True,
        help="NAME=col1,col2,...: a party and its columns by NAME, never position (repeat once "
        "per party)",
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
        "--buckets",
        type=int,
        default=None,
        help="secure: PRF buckets of the aligned rows, a power of two (default 1); a party "
        "on Dask (--workers, --scheduler) aligns and streams its rows bucket by bucket",
    )
    config.add_argument(
        "--workload",
        default=None,
        metavar="WORKLOAD.json",
        help="secure: the marginals the synthetic table should answer, a JSON list whose "
        'items are lists of column names (weight 1) or [columns, weight], e.g. [["age", '
        '"sex"], [["race", "income"], 2]]; the server\'s selection favours the pairs they '
        "hold (default: every 3-way marginal, weight 1)",
    )
    config.add_argument(
        "--values",
        choices=("fine", "uniform", "midpoint"),
        default=None,
        help="secure: where a synthetic number lies inside its bin: 'fine' (the default: "
        "each party releases a noisy fine histogram of each numeric column, about 256 "
        "sub-bins, and numbers are drawn by it), 'uniform' or 'midpoint' (nothing released)",
    )
    config.add_argument(
        "--numeric-share",
        type=float,
        default=None,
        help="secure, with --values fine: the fraction of the budget the fine histograms "
        "take in all (default 0.05)",
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
        "--dealer",
        choices=("server", "own"),
        default=None,
        help="method secure: who deals the masks, 'server' (the default) or 'own' (a role of "
        "its own, `vertimrf dealer run`, with its own key pair: pin dealer.pub too)",
    )
    config.add_argument(
        "--cross-noise",
        choices=("auto", "split", "coins"),
        default=None,
        help="method secure: a cross-party count's noise, 'auto' (the default: coins where "
        "the plan bounds their bytes within 30%% of the features', else split; the plan "
        "prints the rule), "
        "'split' (three discrete Gaussians, one per viewer; each viewer faces sigma^2, the "
        "count carries 1.5 sigma^2) or 'coins' (--coin-weight of sigma^2 in coins that no "
        "viewer knows, exchanged by each pair: less noise in the count, more bytes)",
    )
    config.add_argument(
        "--product",
        choices=("dealer", "paillier"),
        default=None,
        help="method secure: the cross product's backend, 'dealer' (the default: the server "
        "deals the masks, so the server with any party recovers the other's table) or "
        "'paillier' (no role deals: each pair's encrypter sends its rows under a Paillier key "
        "of its own; the server with one party learns only DP outputs; split noise, or "
        "coins at weight 1; docs/two-organisations.md)",
    )
    config.add_argument(
        "--coin-weight",
        type=float,
        default=None,
        metavar="W",
        help="with --cross-noise coins: the fraction in (0, 1] of sigma^2 the coins carry "
        "(default 1: the count carries sigma^2; 0.5: 1.25 sigma^2 with half the coins)",
    )
    config.add_argument(
        "--record-sets",
        choices=("equal", "partial"),
        default=None,
        help="'partial' (the default of method secure's select pipeline: the parties' records "
        "may differ; they are aligned without revealing who is shared, and the server sees "
        "only noisy counts of each region of the record sets) or 'equal' (every party holds "
        "the same record IDs, checked; the default of every other method)",
    )
    config.add_argument(
        "--population",
        choices=("intersection", "union"),
        default=None,
        help="with --record-sets partial: the synthetic rows, those every party holds (the "
        "default) or every record (empty cells where a party holds none)",
    )
    config.add_argument(
        "--region-share",
        type=float,
        default=None,
        help="with --record-sets partial: the fraction of the budget spent on the noisy "
        "region counts (default 0.02)",
    )
    config.add_argument(
        "--id-type",
        choices=("integer", "text"),
        default=None,
        help="every party's record-ID column, checked on every row it reads: integer (7, 7.0 "
        "and 007 are one ID) or text (as written); default: each party's IDs as its table "
        "gives them, all integers or all text",
    )
    config.add_argument(
        "--expected-shared",
        type=float,
        default=None,
        metavar="FRACTION",
        help="with --record-sets partial: the fraction of all records you expect every party "
        "to hold (public, e.g. split's --overlap); the server warns when the noisy count is "
        "under a quarter of it (IDs of another type or format at some party)",
    )
    config.add_argument(
        "--memory",
        "--max-memory-gb",
        dest="memory",
        type=_memory,
        default=None,
        metavar="GB",
        help="the memory any one role may use, in GB (10^9 bytes; 64, or 64GB, 512MB, 1TB); "
        "default: this machine's physical memory. The config states it; a config whose "
        "estimated peak (the server's with the largest model its cap allows) is larger is "
        "refused, naming the levers",
    )
    config.add_argument(
        "--model-cells",
        type=int,
        default=None,
        metavar="N",
        help="secure (select pipeline): the ceiling of the server's model cells (default "
        "4,000,000; with partial record sets the model over the union may hold 4 times it)",
    )
    config.add_argument("--count-party", default=None, help="party releasing the noisy count")
    config.add_argument(
        "--pin",
        nargs="+",
        default=None,
        metavar="NAME.pub",
        help="pin every party's and the server's public key file (key and TLS certificate) "
        "into the config, for the network service",
    )
    config.add_argument("--out", required=True, help="config JSON to write")
    force_arg(config)
    config.set_defaults(func=cmd_config)


UNITS = {"": 1.0, "gb": 1.0, "g": 1.0, "mb": 1e-3, "m": 1e-3, "tb": 1e3, "t": 1e3}


def _memory(value: str) -> float:
    """``--memory``: GB, with an optional unit (GB, MB, TB)."""
    text = value.strip().lower().replace(" ", "")
    number = text.rstrip("gmbt")
    try:
        gb = float(number) * UNITS[text[len(number) :]]
    except (KeyError, ValueError):
        raise argparse.ArgumentTypeError(
            f"GB as a number (64, 64GB, 512MB), not {value!r}"
        ) from None
    if not 0 < gb < float("inf"):
        raise argparse.ArgumentTypeError(f"a positive size, not {value!r}")
    return gb


def machine_memory_gb() -> float:
    """This machine's physical memory in GB (10^9 bytes), from the OS."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    except (AttributeError, ValueError, OSError):
        pass
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024 / 1e9
    except OSError:
        pass
    raise ConfigError("cannot read this machine's memory: give `--memory GB`.")


def _read_workload(path: str) -> object:
    """The JSON value of the ``--workload`` file (checked by the config)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"the workload file {path} is not JSON: {exc}.") from None


def _feature_width(value: str) -> int | str:
    """``--feature-width``: 'auto' or an integer."""
    if value == "auto":
        return value
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'auto' or an integer, not {value!r}") from None
