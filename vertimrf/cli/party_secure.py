"""The secure step commands of a party: ``party local``, ``features``, ``release``, ``measure``."""

from __future__ import annotations

import argparse
import mmap
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vertimrf.errors import (
    ChannelError,
    ConfigError,
    MessageError,
)
from vertimrf.io import read_hex_secret

if TYPE_CHECKING:
    from vertimrf.party.secure import SecureParty
    from vertimrf.protocol import ProtocolConfig
    from vertimrf.protocol.channels import PublicKey
    from vertimrf.protocol.secure import SecurePlan
from vertimrf.cli.common import (
    Phases,
    check_outputs,
    file_name,
    fingerprints,
    party_inputs,
    read_bytes,
    read_csv,
    secure_config,
    staged,
)
from vertimrf.driver.steprecord import StepRecord


def _deal_limit(plan: SecurePlan) -> int:
    """Bytes a deal may take: every Z matrix of the run, plus the archive and the seal."""
    return 8 * sum(plan.widths[p] * plan.widths[q] for p, q in plan.pairs()) + (1 << 20)


class _PeerBlobs(Mapping[str, memoryview]):
    """The peers' feature blobs for ``name`` (``folder/<peer>-to-<name>.blob``): checked up
    front (present, within the run's size), read when used, so that one blob at a time is
    in memory (each is rows x width x 8 bytes)."""

    def __init__(self, folder: str, name: str, plan: SecurePlan) -> None:
        self._files: dict[str, tuple[Path, int]] = {}
        for q, peer in enumerate(plan.names):
            if peer == name:
                continue
            path = Path(folder) / f"{peer}-to-{name}.blob"
            if not path.exists():
                raise MessageError(
                    f"{path}: no feature blob from {peer!r}; the server must relay every peer's "
                    "`vertimrf party features` output before this step."
                )
            limit = 8 * plan.rows * plan.widths[q] + 4096
            if path.stat().st_size > limit:
                raise MessageError(
                    f"{path}: {path.stat().st_size:,} bytes is more than any feature blob of "
                    f"this run ({limit:,} bytes)."
                )
            self._files[peer] = (path, limit)

    def __getitem__(self, peer: str) -> memoryview:
        """The blob mapped read-only (decrypted in place: no multi-GB ``bytes`` copy)."""
        path, limit = self._files[peer]
        try:
            with open(path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if size > limit:
                    raise MessageError(
                        f"{path}: {size:,} bytes is more than any feature blob of this run "
                        f"({limit:,} bytes)."
                    )
                if size == 0:
                    return memoryview(b"")
                return memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
        except OSError as exc:
            msg = f"{path}: cannot read the feature blob ({exc.strerror or exc})."
            raise MessageError(msg) from None

    def __contains__(self, peer: object) -> bool:
        return peer in self._files

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)


def _secure_party(
    args: argparse.Namespace,
    cfg: ProtocolConfig,
    plan: SecurePlan,
    *,
    seal: bool = False,
    open_deal: bool = True,
) -> tuple[SecureParty, dict[str, bytearray], dict[str, PublicKey]]:
    """This party with its deal opened, its blobs for the peers (``seal``: the features
    command; else none) and the peers' keys. A release command opens the same deal again
    without sealing: the same deal and data give the same state; a measure command
    (``open_deal=False``) reads the shares from the private state instead."""
    from vertimrf.party.secure import SecureParty
    from vertimrf.protocol.channels import KeyPair, load_public_keys

    name = file_name(args.party)
    keypair = KeyPair.load(args.keys)
    peers = load_public_keys(args.peers)
    if name in peers:
        raise ConfigError(f"--peers lists {name!r}'s own public key; list the other parties'.")
    unknown = sorted(set(peers) - set(plan.names))
    if unknown:
        raise ConfigError(f"--peers holds keys of {unknown}, not parties of {list(plan.names)}.")
    secret = read_hex_secret(args.secret_file)
    deal = read_bytes(args.deal, _deal_limit(plan), "deal")
    party = SecureParty(
        name,
        read_csv(args.data),
        cfg,
        secret,
        keypair,
        peers,
        id_column=args.id_column,
        seed=args.seed,
        bins=_own_bins(args, cfg, plan),
    )
    if not open_deal:
        return party, {}, peers
    try:
        if seal:
            return party, party.features(deal), peers
        party.open_deal(deal)
        return party, {}, peers
    except ChannelError as exc:
        raise ChannelError(f"{args.deal}: {exc}") from None


def _own_bins(args: argparse.Namespace, cfg: ProtocolConfig, plan: SecurePlan) -> dict | None:
    """The paper pipeline: the bin maps in this party's own local message (``--local``, from
    `party local`); the select pipeline has none."""
    from vertimrf.protocol import PartyMessage

    if plan.select:
        if args.local is not None:
            raise ConfigError("--local is an input of the paper pipeline (config --pipeline paper)")
        return None
    if args.local is None:
        raise ConfigError(
            "the paper pipeline needs --local: this party's message from `vertimrf party local` "
            "(its bin maps decide the features)."
        )
    message = PartyMessage.load(args.local, cfg)
    if message.party != args.party:
        raise ConfigError(
            f"{args.local}: the local message of {message.party!r}, not of {args.party!r}; pass "
            "this party's own."
        )
    return dict(message.bins)


def _require_secure_options(args: argparse.Namespace, names: Sequence[str]) -> None:
    """ConfigError naming the secure-only options ``party release`` was not given."""
    missing = [f"--{n}" for n in names if getattr(args, n) is None]
    if missing:
        raise ConfigError(f"method secure needs {missing} for this command.")


def cmd_party_features(args: argparse.Namespace) -> int:
    cfg, plan = secure_config(args.config)
    name = file_name(args.party)
    steps = step_record(args, cfg.config_hash(), Path(args.out_dir))
    blob_paths = [Path(args.out_dir) / f"{name}-to-{q}.blob" for q in plan.names if q != name]
    steps.check("features")
    check_outputs(args, blob_paths, party_inputs(args), records=[steps.path], make_dirs=True)
    with Phases(f"{name} features", ("features", "write"), args.quiet) as phases:
        with phases("features"):
            party, blobs, peers = _secure_party(args, cfg, plan, seal=True)
        with phases("write"):
            files = {Path(args.out_dir) / f"{name}-to-{q}.blob": blob for q, blob in blobs.items()}
            with staged(*files, commit=lambda _: steps.record("features", args.out_dir)) as temps:
                for tmp, blob in zip(temps, files.values(), strict=True):
                    tmp.write_bytes(blob)
    print(f"{name}: sealed features for the peers (the server relays them):")
    print(fingerprints(peers))
    size = sum(len(b) for b in blobs.values())
    print(
        f"{name}: wrote {len(files)} feature blob(s) to {args.out_dir} ({size:,} bytes); "
        f"{phases.summary()}"
    )
    return 0


def release_secure(args: argparse.Namespace, cfg: ProtocolConfig) -> int:
    """``party release`` of method secure: features again, then the first release."""
    from vertimrf.protocol.secure import SecurePlan

    plan = SecurePlan.from_config(cfg)
    _require_secure_options(args, ("keys", "peers", "deal", "blobs"))
    if args.count_from:
        raise ConfigError(
            "method secure takes no --count-from: the count party's noisy count goes to the "
            "server in its own release."
        )
    name = file_name(args.party)
    steps = step_record(args, cfg.config_hash(), Path(args.out).parent)
    paper = not plan.select
    outputs = (args.out,) if paper else (args.out, steps.state_path)
    blob_files = [Path(args.blobs) / f"{q}-to-{name}.blob" for q in plan.names if q != name]
    steps.check("release")
    check_outputs(args, outputs, [*party_inputs(args), blob_files], records=[steps.path])
    with Phases(f"{name} release", ("check", "features", "release", "write"), args.quiet) as ph:
        with ph("check"):
            blobs = _PeerBlobs(args.blobs, name, plan)
        with ph("features"):
            party = _secure_party(args, cfg, plan)[0]
        with ph("release"):
            try:
                release = party.release(blobs)
            except ChannelError as exc:
                raise ChannelError(f"{args.blobs}: {exc}") from None

        # Recorded before the files land: a failed write costs a retry, never budget. The
        # private state (the shares, for `party measure`) lands with the release or not at
        # all; the paper pipeline has no measure step, so no state.
        def record(temps: list[Path]) -> None:
            steps.record("release", args.out, state=None if paper else temps[1])

        with ph("write"), staged(*outputs, commit=record) as temps:
            release.save(temps[0])
            if not paper:
                party.save_state(temps[1], binding=steps.inputs)
    print(f"{name}: wrote {args.out} ({os.path.getsize(args.out):,} bytes); {ph.summary()}")
    return 0


def cmd_party_measure(args: argparse.Namespace) -> int:
    from vertimrf.protocol.securemsg import load_request

    cfg, plan = secure_config(args.config, select_only=True)
    name = file_name(args.party)
    steps = step_record(args, cfg.config_hash(), Path(args.out).parent)
    record = steps.check("measure")
    inputs = [*party_inputs(args), steps.state_path]
    check_outputs(args, [args.out], inputs, records=[steps.path])
    request = load_request(args.request, plan, cfg.config_hash())
    with Phases(f"{name} measure", ("check", "state", "measure", "write"), args.quiet) as ph:
        with ph("check"):
            state = steps.state(record)
            deal = read_bytes(args.deal, _deal_limit(plan), "deal")
        with ph("state"):
            party = _secure_party(args, cfg, plan, open_deal=False)[0]
            party.load_state(state, deal=deal, binding=steps.inputs)
        with ph("measure"):
            release = party.measure(request)
        with (
            ph("write"),
            staged(args.out, commit=lambda _: steps.record("measure", args.out)) as (tmp,),
        ):
            release.save(tmp)
    print(
        f"{name}: measured {len(request.marginals)} marginals ({len(request.bins)} on bins); "
        f"wrote {args.out} "
        f"({os.path.getsize(args.out):,} bytes); {ph.summary()}"
    )
    return 0


def step_record(args: argparse.Namespace, config_hash: str, folder: Path) -> StepRecord:
    """This party's step record: ``--ledger``, or ``folder/NAME.steps.json``."""
    path = Path(args.ledger) if args.ledger else folder / f"{args.party}.steps.json"
    return StepRecord(
        path, args.party, config_hash, data=args.data, deal=getattr(args, "deal", None)
    )
