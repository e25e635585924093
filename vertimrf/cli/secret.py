"""``vertimrf secret``: the parties' group secret (``share`` / ``open`` seal it for the peers)."""

from __future__ import annotations

import argparse
from pathlib import Path

from vertimrf.cli.common import (
    check_outputs,
    file_name,
    fingerprints,
    force_arg,
    read_bytes,
    write_all,
)
from vertimrf.errors import (
    ChannelError,
    ConfigError,
    KeyMaterialError,
)


def cmd_secret(args: argparse.Namespace) -> int:
    from vertimrf.party.keys import new_shared_secret

    if args.legacy_out is None:
        raise ConfigError(
            "give --out FILE for a new secret, or use `vertimrf secret share` / `secret open` "
            "to pass one to the peers through the server."
        )
    check_outputs(args, [args.legacy_out])
    write_all({Path(args.legacy_out): (new_shared_secret().hex() + "\n").encode("ascii")})
    print(
        f"wrote a new shared secret to {args.legacy_out}; give it to every party, never the server"
    )
    return 0


def cmd_secret_share(args: argparse.Namespace) -> int:
    from vertimrf.crypto.keys import KeyPair, load_public_keys
    from vertimrf.party.group_secret import share_group_secret

    own = KeyPair.load(args.keys)
    name = file_name(own.name)
    peers = load_public_keys(args.to)
    if name in peers:
        raise KeyMaterialError(f"--to lists {name!r}'s own public key; list the peers only.")
    folder = Path(args.out_dir)
    paths = {peer: folder / f"secret-{name}-to-{file_name(peer)}.sealed" for peer in peers}
    own_copy = folder / f"{name}.secret"
    check_outputs(args, [own_copy, *paths.values()], [args.keys, args.to], make_dirs=True)
    secret, sealed = share_group_secret(own, peers)
    files = {own_copy: (secret.hex() + "\n").encode("ascii")}
    files.update({paths[peer]: data for peer, data in sealed.items()})
    write_all(files)
    print(f"{name} (you): fingerprint {own.public().fingerprint}\nsealed for:")
    print(fingerprints(peers))
    print(
        f"wrote your copy {own_copy} (pass it as --secret) and one sealed file "
        "per peer; the server relays the sealed files (it cannot open them). Each peer runs "
        f"`vertimrf secret open FILE --keys PEER.key --from {name}.pub --out PEER.secret`."
    )
    return 0


def cmd_secret_open(args: argparse.Namespace) -> int:
    from vertimrf.crypto.keys import KeyPair, PublicKey
    from vertimrf.party.group_secret import MAX_SEALED_BYTES, open_group_secret

    check_outputs(args, [args.out], [args.file, args.keys, args.sender])
    own, sender = KeyPair.load(args.keys), PublicKey.load(args.sender)
    out = Path(args.out)
    sealed = read_bytes(args.file, MAX_SEALED_BYTES, "sealed group secret")
    try:
        secret = open_group_secret(own, sender, sealed)
    except ChannelError:
        raise ChannelError(
            f"{args.file}: not a group secret sealed by {sender.name!r} for {own.name!r} (another "
            "sender or recipient, or altered); check --from and compare fingerprints."
        ) from None
    except KeyMaterialError as exc:
        raise KeyMaterialError(f"{args.file}: {exc}") from None
    write_all({out: (secret.hex() + "\n").encode("ascii")})
    print(f"{own.name} (you): fingerprint {own.public().fingerprint}")
    print(f"from {sender.name}: fingerprint {sender.fingerprint}")
    print(f"wrote the group secret to {out} (pass it as --secret; never give it to the server)")
    return 0


def add_secret(sub: argparse._SubParsersAction) -> None:
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
    force_arg(secret)
    secret.set_defaults(func=cmd_secret)
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
    force_arg(share)
    share.set_defaults(func=cmd_secret_share)
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
    force_arg(opn)
    opn.set_defaults(func=cmd_secret_open)
