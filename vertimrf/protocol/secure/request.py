"""The server's request: the marginals to re-measure and their bins, as JSON (public,
post-processing of DP values)."""

from __future__ import annotations

import json

from vertimrf.errors import MessageError
from vertimrf.protocol.secure.marginals import Request
from vertimrf.protocol.secure.plan import SecurePlan

MAX_REQUEST_BYTES = 1 << 22  # a request lists at most a few thousand short marginals


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


def parse_request(data: object, plan: SecurePlan, config_hash: str, path: str) -> Request:
    """A request's parsed JSON ``data`` (read from ``path``, which errors name), checked
    against this run: MessageError when it is malformed, of another run, or asks for
    marginals or bins the plan cannot measure."""
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
