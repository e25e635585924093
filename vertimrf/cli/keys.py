"""``vertimrf keys``: a party's (or the server's, or an own dealer's) key pair."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from vertimrf.cli.common import (
    check_outputs,
    file_name,
    force_arg,
    interrupts_held,
)


def cmd_keys(args: argparse.Namespace) -> int:
    from vertimrf.crypto.keys import KeyPair

    name = file_name(args.name)
    folder = Path(args.out_dir)
    key_path, pub_path = folder / f"{name}.key", folder / f"{name}.pub"
    check_outputs(args, [key_path, pub_path], make_dirs=True)
    pair = KeyPair.generate(name, hosts=args.host or ())
    folder.mkdir(parents=True, exist_ok=True)
    with interrupts_held([key_path, pub_path]):
        pair.save(key_path)
        try:
            pair.public().save(pub_path)
            os.chmod(pub_path, 0o644)
        except BaseException:
            key_path.unlink()
            raise
    from vertimrf.crypto.identity import certificate_fingerprint

    assert pair.tls_certificate is not None
    print(f"{name}: fingerprint {pair.public().fingerprint}")
    print(f"{name}: TLS certificate {certificate_fingerprint(pair.tls_certificate)}")
    print(
        f"wrote {key_path} (private, mode 0600: never share it) and {pub_path} (give it to the "
        "server and every peer); compare fingerprints with the peers out of band (in person or "
        "by phone) before you use their public keys."
    )
    return 0


def add_keys(sub: argparse._SubParsersAction) -> None:
    """The `keys` command."""
    keys = sub.add_parser(
        "keys",
        help="make a role's key pair and TLS identity",
        description="Write NAME.key (private, mode 0600: the X25519 key and the TLS key) and "
        "NAME.pub (the public key and a self-signed TLS certificate, for the config) and print "
        "their fingerprints to compare with the other roles out of band. Never overwrites a "
        "key.",
    )
    keys.add_argument(
        "--name",
        required=True,
        help="this role's name: a party's in the config, 'server', or 'dealer' (a dealer of "
        "its own, config --dealer own)",
    )
    keys.add_argument("--out-dir", required=True, help="folder for NAME.key and NAME.pub")
    keys.add_argument(
        "--host",
        nargs="+",
        default=None,
        help="the server: the host names or IP addresses parties will reach it at (its TLS "
        "certificate names them, beside localhost and 127.0.0.1)",
    )
    force_arg(keys)
    keys.set_defaults(func=cmd_keys)
