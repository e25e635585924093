"""The server's request: the marginals to re-measure and their bins, as JSON (public,
post-processing of DP values)."""

from __future__ import annotations

import json
import os

from vertimrf.errors import MessageError
from vertimrf.io import atomic_write_text, read_json
from vertimrf.protocol.secure.marginals import Request
from vertimrf.protocol.secure.plan import SecurePlan

MAX_REQUEST_BYTES = 1 << 22  # a request lists at most a few thousand short marginals


def save_request(path: str | os.PathLike, config_hash: str, request: Request) -> None:
    """Write the server's re-measurement request for the run ``config_hash`` (atomically)."""
    atomic_write_text(path, request_text(config_hash, request))


def request_text(config_hash: str, request: Request) -> str:
    """The request's JSON text: the marginals, and the bin maps of the binned ones as
    [position, maps] pairs."""
    position = {m: i for i, m in enumerate(request.marginals)}
    data = {
        "config_hash": config_hash,
        "marginals": [[int(a) for a in m] for m in request.marginals],
        "bins": [
            [position[m], [None if b is None else list(b) for b in maps]]
            for m, maps in request.bins.items()
        ],
    }
    return json.dumps(data) + "\n"


def load_request(path: str | os.PathLike, plan: SecurePlan, config_hash: str) -> Request:
    """The request in a file, checked against this run: MessageError when the file is
    oversized, malformed, of another run, or asks for marginals or bins the plan cannot
    measure."""
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise MessageError(f"{path}: cannot read the request ({exc.strerror or exc}).") from None
    if size > MAX_REQUEST_BYTES:
        raise MessageError(f"{path}: {size:,} bytes is too large for a request.")
    return parse_request(read_json(path, MessageError, "request"), plan, config_hash, str(path))


def parse_request(data: object, plan: SecurePlan, config_hash: str, path: str) -> Request:
    """A request's parsed JSON ``data`` (read from ``path``, which errors name), checked
    against this run as :func:`load_request` says."""
    if not isinstance(data, dict) or set(data) != {"config_hash", "marginals", "bins"}:
        raise MessageError(
            f'{path}: a request is {{"config_hash": ..., "marginals": [...], "bins": [...]}}.'
        )
    if data["config_hash"] != config_hash:
        raise MessageError(
            f"{path}: the request belongs to another run (config hash "
            f"{str(data['config_hash'])[:12]}, this run {config_hash[:12]}): a replayed or "
            "foreign request."
        )
    raw = data["marginals"]
    if not isinstance(raw, list) or not all(
        isinstance(m, list) and all(isinstance(a, int) and not isinstance(a, bool) for a in m)
        for m in raw
    ):
        raise MessageError(f"{path}: the request's marginals must be lists of attribute indices.")
    bins = data["bins"]
    if (
        not isinstance(bins, list)
        or not all(
            isinstance(e, list)
            and len(e) == 2
            and isinstance(e[0], int)
            and not isinstance(e[0], bool)
            and 0 <= e[0] < len(raw)
            for e in bins
        )
        or len({e[0] for e in bins}) != len(bins)
    ):
        raise MessageError(
            f"{path}: the request's bins must be [position, maps] pairs, one per position."
        )
    try:
        return plan.check_request(
            [tuple(m) for m in raw], {tuple(raw[i]): maps for i, maps in bins}
        )
    except MessageError as exc:
        raise MessageError(f"{path}: {exc}") from None
