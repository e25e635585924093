"""LocEnc: a party's FM sketches of its (possibly binned) columns;
design notes in docs/design/party.md."""

from __future__ import annotations

import numpy as np

from vertimrf.domain import Domain, EncodedTable
from vertimrf.party.keys import HashKeys
from vertimrf.party.phantoms import UniformSource, privatize
from vertimrf.party.registers import compute_registers, registers_to_geometric
from vertimrf.privacy.fm import fm_noise
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.protocol.sketchset import SketchSet


def sketch_from_registers(
    registers: np.ndarray,
    domain: Domain,
    key_fingerprint: str,
    *,
    eps_prime: float,
    rng: UniformSource,
    ledger: PrivacyLedger,
    gamma: float = 1.0,
    party: str | None = None,
) -> SketchSet:
    """Release sketches (each eps'-DP alone, NOT DP jointly) from (merged) registers; the
    t*d sketches are charged to ``ledger`` as ``"fm_sketch"``, which marks it as not DP."""
    noise = fm_noise(eps_prime, gamma)
    t = int(registers.shape[0])
    ledger.charge_pure(
        "fm_sketch",
        eps_prime,
        count=t * len(domain),
        party=party,
        description=f"FM sketches of {len(domain)} attributes x {t} keys",
        gamma=gamma,
        k_p=noise.k_p,
        alpha_min=noise.alpha_min,
    )
    values = privatize(registers_to_geometric(registers, gamma), noise, rng)
    return SketchSet(values, domain, noise, key_fingerprint)


def locenc(
    table: EncodedTable,
    fingerprints: np.ndarray,
    keys: HashKeys,
    *,
    eps_prime: float,
    rng: UniformSource,
    ledger: PrivacyLedger,
    gamma: float = 1.0,
    party: str | None = None,
    hash: str | None = None,
) -> SketchSet:
    """Encode a party's table as FM sketches (one pass; NOT DP jointly)."""
    registers = compute_registers(table.codes, table.domain, fingerprints, keys, hash=hash)
    return sketch_from_registers(
        registers,
        table.domain,
        keys.fingerprint(),
        eps_prime=eps_prime,
        rng=rng,
        ledger=ledger,
        gamma=gamma,
        party=party,
    )
