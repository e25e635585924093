"""``vertimrf party``: the parser of a party's commands."""

from __future__ import annotations

import argparse

from vertimrf.cli.common import force_arg, party_data_args
from vertimrf.cli.party_steps import STEP_COMMANDS
from vertimrf.cli.run import add_party_run
from vertimrf.protocol.schedule import Kind


def party_args(p: argparse.ArgumentParser) -> None:
    """Options of every party command: config, name, data, secret, seed."""
    p.add_argument("--config", required=True, help="the shared protocol config")
    p.add_argument("--party", "--name", dest="party", required=True, help="this party's name")
    party_data_args(p)
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


def own_key_args(p: argparse.ArgumentParser, why: str, required: bool = True) -> None:
    """--keys (``why`` says what derives from it) and --peers (optional)."""
    p.add_argument("--keys", required=required, help=f"this party's NAME.key ({why})")
    p.add_argument(
        "--peers", nargs="+", default=None, help="the peers' public keys (unless pinned)"
    )


def secure_args(p: argparse.ArgumentParser, required: bool, deal: bool = True) -> None:
    """Options of the party commands of method secure."""
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
    p.add_argument(
        "--deal-slots",
        default=None,
        help="partial record sets: this party's NAME.deal-slots (default: the --deal file's "
        "name with -slots added, as `server deal` writes it)",
    )


def add_party(sub: argparse._SubParsersAction) -> None:
    """The `party run` command and the party's step commands, one per step of the
    schedules (:data:`~vertimrf.cli.party_steps.STEP_COMMANDS`)."""
    party = sub.add_parser("party", help="a party's role", description="A party's role.")
    psub = party.add_subparsers(dest="action", required=True)
    add_party_run(psub)
    loc = psub.add_parser(
        Kind.LOCAL,
        help="methods fo and fm, and secure's paper pipeline: the local message",
        description="Run LocMRF and binning on this party's table (methods fo and fm: and "
        "LocEnc) and write its local message for the server. Secure's paper pipeline: the "
        "first party step (the state keeps a copy, for `party features` and `party "
        "release`); once per run: a re-run writes the recorded bytes again and spends "
        "nothing new.",
    )
    party_args(loc)
    own_key_args(loc, "its noise derives from it; needed unless --seed", required=False)
    loc.add_argument("--out", required=True, help="local message file to write")
    loc.add_argument(
        "--count-from",
        default=None,
        help="the count party's local message, for its noisy count (every other party needs it)",
    )
    com = psub.add_parser(
        Kind.COMMIT,
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
    tok = psub.add_parser(
        Kind.TOKENS,
        help="method secure, partial record sets: this party's tokens for the server",
        description="After `party commit` and the server's `server admit`, write this "
        "party's token list for the server: a keyed PRF of each record ID (the server cannot "
        "invert it) and the dummy tokens that hide the size of each region of the record "
        "sets. Give the file to the server only: a peer that read it could tell which of its "
        "own records this party holds.",
    )
    party_args(tok)
    own_key_args(tok, "its state is bound to it")
    tok.add_argument("--admit", required=True, help="the server's NAME.admit file")
    tok.add_argument("--out", required=True, help="tokens file to write (give it to the server)")
    feat = psub.add_parser(
        Kind.FEATURES,
        help="method secure: masked features for each peer",
        description="Open the server's deal, order the rows by a keyed PRF of the record IDs, "
        "pad them to max_rows and write DIR/NAME-to-PEER.features for each peer (X - U under "
        "the pairwise key; the server relays them and cannot open them); with cross_noise "
        "'coins', also DIR/NAME-to-PEER.features-coins (the first release's coins, masked).",
    )
    party_args(feat)
    secure_args(feat, required=True)
    feat.add_argument("--out-dir", required=True, help="folder for the feature blobs")
    rel = psub.add_parser(
        Kind.RELEASE,
        help="method secure: the secure release for the server",
        description="After `party features` (recorded in --state-dir, with the same deal and "
        "data), read the peers' feature blobs (--blobs DIR/PEER-to-NAME.features, and "
        ".features-coins with cross_noise 'coins') and write "
        "the first release (every 2-way marginal, or the workload's); once per run: a re-run "
        "writes the recorded release again and spends nothing new. The shares are kept for `party "
        "measure` in the private state (never give it to anyone). Paper pipeline: the one "
        "release of every binned cross-party pair.",
    )
    party_args(rel)
    secure_args(rel, required=True)
    rel.add_argument("--blobs", required=True, help="folder with the peers' feature blobs")
    rel.add_argument("--out", required=True, help="release file to write")
    rep = psub.add_parser(
        Kind.REPLY,
        help="method secure, product paillier: the masked replies to the peers that encrypt",
        description="After `party features` (recorded in --state-dir), read the peers' "
        "feature blobs (--blobs DIR/PEER-to-NAME.features) and write DIR/NAME-to-PEER.reply "
        "for each peer: for a peer that encrypted its rows for this party, its rows summed "
        "into one ciphertext a value of this party's, every slot masked and re-randomised "
        "(an empty blob to the others). Once per run: a re-run writes the same bytes.",
    )
    party_args(rep)
    secure_args(rep, required=True)
    rep.add_argument("--blobs", required=True, help="folder with the peers' feature blobs")
    rep.add_argument("--out-dir", required=True, help="folder for the replies")
    grp = psub.add_parser(
        Kind.GROUPS,
        help="method secure: round 2, the attribute groups the request needs, for each peer",
        description="Check the request belongs to this run, open the round-2 deal "
        "(--select-deal) and write DIR/NAME-to-PEER.groups for each peer: the attribute "
        "groups that the request's cross marginals with that peer need, masked with fresh "
        "randomness (an empty blob where none), and with cross_noise 'coins' "
        "DIR/NAME-to-PEER.groups-coins. Once per run: a re-run writes the same bytes.",
    )
    party_args(grp)
    secure_args(grp, required=True)
    grp.add_argument("--request", required=True, help="the server's request (`server select`)")
    grp.add_argument("--select-deal", required=True, help="this party's NAME.select-deal")
    grp.add_argument("--out-dir", required=True, help="folder for the round-2 blobs")
    gre = psub.add_parser(
        Kind.GROUP_REPLY,
        help="method secure, product paillier: round 2's masked replies",
        description="After `party groups` (recorded in --state-dir), read the peers' blobs "
        "of both rounds (--blobs DIR/PEER-to-NAME.features, .groups) and write "
        "DIR/NAME-to-PEER.group-reply for each peer that encrypted its groups' rows, or "
        "whose rows meet this party's groups (an empty blob to the others).",
    )
    party_args(gre)
    secure_args(gre, required=True)
    gre.add_argument("--blobs", required=True, help="folder with the peers' blobs of both rounds")
    gre.add_argument("--request", required=True, help="the server's request (`server select`)")
    gre.add_argument("--select-deal", required=True, help="this party's NAME.select-deal")
    gre.add_argument("--out-dir", required=True, help="folder for the round-2 replies")
    mea = psub.add_parser(
        Kind.MEASURE,
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
        help="folder with the peers' blobs of both rounds (PEER-to-NAME.features, .groups; "
        ".groups-coins with cross_noise 'coins')",
    )
    mea.add_argument("--request", required=True, help="the server's request (`server select`)")
    mea.add_argument("--select-deal", default=None, help="this party's NAME.select-deal")
    mea.add_argument("--out", required=True, help="release file to write")
    for step, command in STEP_COMMANDS.items():
        psub.choices[step].set_defaults(func=command)
