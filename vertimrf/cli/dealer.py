"""``vertimrf dealer run``: an own dealer's steps (config ``dealer="own"``), in one command,
over the network service (``--server URL``) or folders (``--inbox``/``--outbox``)."""

from __future__ import annotations

import argparse
import sys

from vertimrf.cli.common import run_state_dir
from vertimrf.cli.run import (
    _progress,
    _state_arg,
    _telling,
    _transport_args,
    client_transport,
)
from vertimrf.driver.lock import state_lock
from vertimrf.errors import ConfigError
from vertimrf.protocol.seeds import DEALER, SERVER


def cmd_dealer_run(args: argparse.Namespace) -> int:
    from vertimrf.crypto.keys import KeyPair
    from vertimrf.driver.dealer import DealerDriver
    from vertimrf.protocol.factory import load_setup

    setup = load_setup(args.config)
    cfg = setup.config
    if cfg.dealer_role != DEALER or cfg.identities is None:
        raise ConfigError(
            f"{args.config}: `dealer run` needs a config with dealer 'own' that pins every "
            "role's identity, the dealer's included (`vertimrf config --dealer own --pin`)."
        )
    keypair = KeyPair.load(args.keys)
    state = run_state_dir(args, DEALER, cfg)
    names = [p.name for p in cfg.parties]
    transport = client_transport(args, cfg, keypair, DEALER, state / "received", [SERVER, *names])
    with state_lock(state, lambda line: print(f"vertimrf dealer: {line}", file=sys.stderr)):
        driver = DealerDriver(setup, transport, keypair=keypair, seed=args.seed, state_dir=state)
        try:
            with _telling(transport, DEALER, lambda: driver.step):
                driver.run(progress=_progress(args))
        finally:
            driver.close()
    print(
        f"dealer: ran {', '.join(driver.done)}; sent {driver.sent_bytes:,} bytes; state in {state}"
    )
    return 0


def add_dealer(sub: argparse._SubParsersAction) -> None:
    """The `dealer run` command."""
    dealer = sub.add_parser(
        "dealer", help="an own dealer's role", description="A dealer of its own's role."
    )
    dsub = dealer.add_subparsers(dest="action", required=True)
    run = dsub.add_parser(
        "run",
        help="run all of an own dealer's steps",
        description="Run every step of a dealer of its own (a config with dealer 'own'): it "
        "reads the parties' data commitments (and token lists), seals each party's deal "
        "(and slot map; the region counts go to the server) and, after the server's request, "
        "each party's round-2 deal. It reads no release, and the server then holds no mask. "
        "With --server it connects out to the service over mutual TLS (the config pins the "
        "dealer's key and certificate); with --inbox/--outbox it works over folders. Its run "
        "state lives in --state-dir: a re-run resumes and resends the very bytes.",
    )
    run.add_argument("--config", required=True, help="the shared protocol config")
    run.add_argument(
        "--keys", required=True, help="the dealer's dealer.key (its deal derives from it)"
    )
    run.add_argument(
        "--server", default=None, help="the service's URL, https://HOST:PORT (or --inbox/--outbox)"
    )
    _transport_args(run)
    _state_arg(run, "$XDG_STATE_HOME/vertimrf/dealer/HASH, else ~/.local/state/...")
    run.add_argument("--seed", type=int, default=None, help="seed (experiments only)")
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    run.set_defaults(func=cmd_dealer_run)
