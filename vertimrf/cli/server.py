"""``vertimrf server``: the server's commands (the parser, and ``synthesize`` of fo, fm
and the paper pipeline)."""

from __future__ import annotations

import argparse

from vertimrf.cli.common import (
    force_arg,
)
from vertimrf.cli.run import add_server_run
from vertimrf.cli.server_steps import STEP_COMMANDS, cmd_server_refit
from vertimrf.protocol.schedule import SYNTHESIZE, Kind


def server_key_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--server-key",
        required=True,
        help="the server's NAME.key (`vertimrf keys --name server`): its deal and its noise "
        "derive from it, so a re-run writes the same bytes",
    )


def _state_dir_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--state-dir",
        "--state",
        dest="state_dir",
        default=None,
        help="secure: the server's run state folder, where `server select` keeps its state "
        "for `server synthesize` (default: $XDG_STATE_HOME/vertimrf/server/HASH, else "
        "~/.local/state/..., as `server run`)",
    )


def add_server(sub: argparse._SubParsersAction) -> None:
    """The `server admit`, `server deal`, `server select` and `server synthesize`
    commands."""
    server = sub.add_parser("server", help="the server's role", description="The server's role.")
    ssub = server.add_subparsers(dest="action", required=True)
    add_server_run(ssub)
    deal = ssub.add_parser(
        Kind.DEAL,
        help="method secure: seal each party's correlated randomness",
        description="Write DIR/NAME.deal for each party, sealed to its public key (with "
        "partial record sets also DIR/NAME.deal-slots, its slot map, which the deal opens; "
        "the deal's randomness derives from the server's key, the run and every party's data "
        "commitment, so a party whose data changed gets other masks; it cannot change the "
        "synthetic table).",
    )
    deal.add_argument("--config", required=True, help="the shared protocol config")
    deal.add_argument("--keys", nargs="+", required=True, help="every party's public key")
    deal.add_argument(
        "--commits",
        nargs="+",
        required=True,
        help="every party's commit file (from `party commit`); the deal is made for them",
    )
    deal.add_argument(
        "--tokens",
        nargs="+",
        default=None,
        help="partial record sets: every party's tokens file (from `party tokens`)",
    )
    server_key_arg(deal)
    _state_dir_arg(deal)
    deal.add_argument(
        "--seed",
        type=int,
        default=None,
        help="run seed: seeds the region counts' noise with partial record sets (experiments only)",
    )
    deal.add_argument("--out-dir", required=True, help="folder for the deals")
    force_arg(deal)
    adm = ssub.add_parser(
        Kind.ADMIT,
        help="method secure, partial record sets: admit the parties' commitments",
        description="Write DIR/NAME.admit for each party: the digest of every party's data "
        "commitment and of every role's public key (public), and the server's public key. "
        "Each party keys its tokens by it and seals them to the server (`party tokens`), so a "
        "changed table or key at any role gives every record a fresh token.",
    )
    adm.add_argument("--config", required=True, help="the shared protocol config")
    adm.add_argument("--keys", nargs="+", required=True, help="every party's public key")
    adm.add_argument(
        "--commits", nargs="+", required=True, help="every party's commit file (`party commit`)"
    )
    server_key_arg(adm)
    adm.add_argument("--out-dir", required=True, help="folder for the admit files")
    force_arg(adm)
    sel = ssub.add_parser(
        Kind.SELECT,
        help="method secure: choose the marginals to re-measure",
        description="Sum the parties' first releases, add the server's noise, choose the model "
        "and the marginals to re-measure; write the request for the parties and each party's "
        "round-2 deal (for the attribute groups the request needs), and keep the "
        "server's select state in --state-dir for `server synthesize`. Once per run: a re-run "
        "writes the recorded request again.",
    )
    sel.add_argument("--config", required=True, help="the shared protocol config")
    sel.add_argument("--releases", nargs="+", required=True, help="every party's first release")
    sel.add_argument("--out", required=True, help="request JSON to write")
    sel.add_argument(
        "--keys",
        nargs="+",
        default=None,
        help="every party's public key: the round-2 deals are sealed to them (unless pinned)",
    )
    sel.add_argument(
        "--select-deals",
        required=True,
        help="folder for the round-2 deals, NAME.select-deal (one per party, sealed to it)",
    )
    _state_dir_arg(sel)
    server_key_arg(sel)
    sel.add_argument(
        "--seed", type=int, default=None, help="run seed: seeds the DP noise (experiments only)"
    )
    sel.add_argument("--quiet", action="store_true", help="no progress bars")
    force_arg(sel)
    syn = ssub.add_parser(
        SYNTHESIZE,
        help="synthesize a table from the parties' messages",
        description="Check the messages, run GraphCom, InitMRF and OptMRF, sample, and write "
        "the synthetic table (CSV or Parquet) and the privacy report. Method secure: --state "
        "from `server select` and the parties' re-measurements (--releases).",
    )
    syn.add_argument("messages", nargs="*", help="the parties' message files")
    syn.add_argument("--releases", nargs="+", default=None, help="the same, as an option")
    _state_dir_arg(syn)
    syn.add_argument("--config", required=True, help="the shared protocol config")
    syn.add_argument(
        "--out",
        required=True,
        help="synthetic table to write, CSV or Parquet by its suffix (.csv, .parquet)",
    )
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
    force_arg(syn)
    for step, command in STEP_COMMANDS.items():
        ssub.choices[step].set_defaults(func=command)
    _add_refit(ssub)


def _add_refit(ssub: argparse._SubParsersAction) -> None:
    """The `server refit` command."""
    refit = ssub.add_parser(
        "refit",
        help="method secure: fit again from a stored run's releases with a smaller model",
        description="Fit the synthetic table's model again from a run the server has "
        "stored (the select state in --state-dir, the parties' re-measurements in its inbox) "
        "with a smaller model, then write the table and the report. Post-processing of the "
        "same releases: the server's noise derives from its key and the releases, so no "
        "noise is drawn and no budget is spent again. For a run whose fit failed, or whose "
        "model was too large for this machine.",
    )
    refit.add_argument("--config", required=True, help="the run's protocol config")
    refit.add_argument(
        "--server-key", required=True, help="the server's NAME.key, the run's (its noise)"
    )
    _state_dir_arg(refit)
    refit.add_argument(
        "--inbox",
        default=None,
        help="the folder where the server received the parties' messages (`server run "
        "--inbox`; default: --state-dir's messages/server, where the HTTPS service keeps them)",
    )
    refit.add_argument(
        "--model-cells",
        type=int,
        default=None,
        metavar="N",
        help="fit a model of at most N cells (default: half the cells of the run's model)",
    )
    refit.add_argument("--out", required=True, help="synthetic table to write (.csv, .parquet)")
    refit.add_argument("--report", default=None, help="also write the report as JSON")
    refit.add_argument("--n", type=int, default=None, help="rows (default: the noisy count)")
    refit.add_argument(
        "--seed", type=int, default=None, help="the run's seed, if it had one (experiments only)"
    )
    refit.add_argument(
        "--sample-seed", type=int, default=None, help="seeds the sampling of the rows only"
    )
    refit.add_argument("--quiet", action="store_true", help="no progress bars")
    force_arg(refit)
    refit.set_defaults(func=cmd_server_refit)
