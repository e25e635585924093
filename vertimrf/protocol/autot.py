"""``t="auto"``: the number of sketch repetitions, chosen from public
information only; design notes in docs/design/protocol.md."""

from __future__ import annotations

import math

from vertimrf.errors import ConfigError
from vertimrf.privacy.fm import fm_noise
from vertimrf.protocol.budget import ProtocolBudget
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.methods import fm_options

CANDIDATES = (1000, 2000, 4000, 8000, 16000, 32000, 64000)
# Measured on the 2-core machine: 45,222 rows x 2000 keys with SipHash in 0.31 s.
HASHES_PER_SECOND = 2.9e8


def predicted_error(config: ProtocolConfig, t: int, n_hint: float) -> float:
    """Predicted relative CarEst cell error (n + k_p * S) / (n sqrt(t)), S = mean over
    cross-party pairs of (u_a - 1) + (u_b - 1) on the binned domains."""
    options = fm_options(config, "t (its sketches' repetitions) is a setting")
    eps_prime = ProtocolBudget.from_config(config, t=t).eps_prime
    k_p = fm_noise(eps_prime, options.gamma).k_p
    sizes = _binned_sizes(config)
    owner = {c: p.name for p in config.parties for c in p.columns}
    pairs = [
        (sizes[a] - 1) + (sizes[b] - 1)
        for a in sizes
        for b in sizes
        if a < b and owner[a] != owner[b]
    ]
    s = sum(pairs) / len(pairs)
    return (n_hint + k_p * s) / (n_hint * math.sqrt(t))


def choose_t(
    config: ProtocolConfig,
    n_hint: float,
    *,
    seconds: float = 10.0,
    max_sketch_bytes: int = 500_000,
    hashes_per_second: float = HASHES_PER_SECOND,
) -> int:
    """The rule's t for ``config`` (whose own t is ignored) and a public row count ``n_hint``."""
    if not (isinstance(n_hint, int | float) and n_hint >= 1 and math.isfinite(n_hint)):
        raise ConfigError(f"n_hint must be a public row count >= 1; got {n_hint!r}.")
    sizes = _binned_sizes(config)
    widest = max(sum(sizes[c] for c in p.columns) for p in config.parties)
    feasible = [
        t
        for t in CANDIDATES
        if n_hint * t / hashes_per_second <= seconds and t * widest <= max_sketch_bytes
    ] or [CANDIDATES[0]]
    return min(feasible, key=lambda t: predicted_error(config, t, n_hint))


def _binned_sizes(config: ProtocolConfig) -> dict[str, int]:
    binned = set(config.binned_columns())
    bins = config.paper_options().bins if binned else 0
    return {c.name: min(c.size, bins) if c.name in binned else c.size for c in config.spec.columns}
