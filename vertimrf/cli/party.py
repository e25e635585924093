"""``vertimrf party``: a party's commands (the parser, and ``release`` of methods fo and fm)."""

from __future__ import annotations

import argparse

from vertimrf.cli.common import add_dask_args, force_arg
from vertimrf.cli.party_steps import (
    cmd_party_commit,
    cmd_party_features,
    cmd_party_groups,
    cmd_party_local,
    cmd_party_measure,
    cmd_party_release,
)
from vertimrf.cli.run import add_party_run


def party_args(p: argparse.ArgumentParser) -> None:
    """Options of every party command: config, name, data, secret, seed."""
    p.add_argument("--config", required=True, help="the shared protocol config")
    p.add_argument("--party", "--name", dest="party", required=True, help="this party's name")
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
    p.add_argument("--seed", type=int, default=None, help="seed (experiments only)")
    p.add_argument(
        "--state-dir",
        default=None,
        help="this party's private state for the run: its step record, a copy of what it sent, "
        "its shares and its aligned table (default: $XDG_STATE_HOME/vertimrf/NAME, else "
        "~/.local/state/vertimrf/NAME, as `party run`)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    force_arg(p)


def own_key_args(p: argparse.ArgumentParser, why: str) -> None:
    """--keys (required; ``why`` says what derives from it) and --peers (optional)."""
    p.add_argument("--keys", required=True, help=f"this party's NAME.key ({why})")
    p.add_argument(
        "--peers", nargs="+", default=None, help="the peers' public keys (unless pinned)"
    )


def secure_args(p: argparse.ArgumentParser, required: bool, deal: bool = True) -> None:
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
    p.add_argument(
        "--deal",
        required=required and deal,
        default=None,
        help="this party's NAME.deal" if deal else "ignored (the shares come from the state)",
    )


def add_party(sub: argparse._SubParsersAction) -> None:
    """The `party local`, `commit`, `features`, `release`, `groups` and `measure`
    commands."""
    party = sub.add_parser("party", help="a party's role", description="A party's role.")
    psub = party.add_subparsers(dest="action", required=True)
    add_party_run(psub)
    loc = psub.add_parser(
        "local",
        help="method secure, paper pipeline: the local model and bin maps",
        description="The paper pipeline's first party step: fit the local DP MRF (LocMRF) and "
        "release the noisy value counts that make the bin maps; write the message for the "
        "server (the state keeps a copy, for `party features` and `party release`). Once per "
        "run: a re-run writes the recorded bytes again and spends nothing new.",
    )
    party_args(loc)
    own_key_args(loc, "its noise derives from it")
    loc.add_argument("--out", required=True, help="local message file to write")
    loc.add_argument(
        "--count-from",
        default=None,
        help="the count party's local message, for its noisy count (every other party needs it)",
    )
    loc.set_defaults(func=cmd_party_local)
    com = psub.add_parser(
        "commit",
        help="method secure: commit to this party's data (the server deals on it)",
        description="Write this party's data commitment for the server: an HMAC of a digest "
        "of its records under a key derived from its own key (it reveals nothing of the "
        "data). The server's deal is made for every party's commitment, so other data gets "
        "other masks. Run it before `party features` (after `party local` in the paper "
        "pipeline).",
    )
    party_args(com)
    own_key_args(com, "the commitment's key derives from it")
    com.add_argument("--out", required=True, help="commit file to write (give it to the server)")
    com.set_defaults(func=cmd_party_commit)
    feat = psub.add_parser(
        "features",
        help="method secure: masked features for each peer",
        description="Open the server's deal, order the rows by a keyed PRF of the record IDs, "
        "pad them to max_rows and write DIR/NAME-to-PEER.blob for each peer (X - U under the "
        "pairwise key; the server relays them and cannot open them).",
    )
    party_args(feat)
    secure_args(feat, required=True)
    feat.add_argument("--out-dir", required=True, help="folder for the blobs")
    feat.set_defaults(func=cmd_party_features)
    rel = psub.add_parser(
        "release",
        help="make a party's message (all its DP releases) for the server",
        description="Methods fo and fm: run LocMRF, binning and LocEnc on this party's CSV and "
        "write its message. "
        "Method secure: after `party features` (recorded in --state-dir, with the same deal "
        "and data), read the peers' blobs (--blobs DIR/PEER-to-NAME.blob) and write the first "
        "release of every 2-way marginal; once per run: a re-run writes the recorded release "
        "again and spends nothing new. The shares are kept for `party measure` in the private "
        "state (never give it to anyone). Paper pipeline: the one release of every binned "
        "cross-party pair.",
    )
    party_args(rel)
    rel.add_argument("--out", required=True, help="message file to write")
    rel.add_argument(
        "--count-from",
        default=None,
        help="fo/fm: the count party's message, for its noisy count (every other party needs it)",
    )
    secure_args(rel, required=False)
    rel.add_argument("--blobs", default=None, help="secure: folder with the peers' blobs")
    rel.set_defaults(func=cmd_party_release)
    grp = psub.add_parser(
        "groups",
        help="method secure: round 2, the attribute groups the request needs, for each peer",
        description="Check the request belongs to this run, open the round-2 deal "
        "(--group-deal) and write DIR/NAME-to-PEER.group-blob for each peer: the attribute "
        "groups that the request's cross marginals with that peer need, masked with fresh "
        "randomness (an empty blob where none). Once per run: a re-run writes the same bytes.",
    )
    party_args(grp)
    secure_args(grp, required=True)
    grp.add_argument("--request", required=True, help="the server's request.json")
    grp.add_argument("--group-deal", required=True, help="this party's NAME.group-deal")
    grp.add_argument("--out-dir", required=True, help="folder for the round-2 blobs")
    grp.set_defaults(func=cmd_party_groups)
    mea = psub.add_parser(
        "measure",
        help="method secure: re-measure the marginals the server requests",
        description="Check the request belongs to this run, read the shares from the private "
        "state that `party release` kept in --state-dir (checked against the run, the party "
        "and the data), add the blocks of the round-2 groups (from the peers' blobs of both "
        "rounds in --blobs), and write the re-measurement with fresh noise; once per run: a "
        "re-run writes the recorded bytes again.",
    )
    party_args(mea)
    secure_args(mea, required=True)
    mea.add_argument(
        "--blobs",
        default=None,
        help="folder with the peers' blobs of both rounds (PEER-to-NAME.blob, .group-blob)",
    )
    mea.add_argument("--request", required=True, help="the server's request.json")
    mea.add_argument("--group-deal", default=None, help="this party's NAME.group-deal")
    mea.add_argument("--out", required=True, help="release file to write")
    mea.set_defaults(func=cmd_party_measure)
