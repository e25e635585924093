"""``vertimrf keys``: a party's (or the server's) key pair."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass
from vertimrf.cli.common import (
    check_outputs,
    file_name,
    force_arg,
    interrupts_held,
)


def cmd_keys(args: argparse.Namespace) -> int:
    from vertimrf.protocol.channels import KeyPair

    name = file_name(args.name)
    folder = Path(args.out_dir)
    key_path, pub_path = folder / f"{name}.key", folder / f"{name}.pub"
    check_outputs(args, [key_path, pub_path], make_dirs=True)
    pair = KeyPair.generate(name)
    folder.mkdir(parents=True, exist_ok=True)
    with interrupts_held([key_path, pub_path]):
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


def add_keys(sub: argparse._SubParsersAction) -> None:
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
    force_arg(keys)
    keys.set_defaults(func=cmd_keys)
