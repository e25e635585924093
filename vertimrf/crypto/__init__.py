"""The cryptography of vertimrf, apart from any protocol: X25519 key pairs and pairwise keys
(:mod:`~vertimrf.crypto.keys`), sealed boxes (:mod:`~vertimrf.crypto.seal`), AES-256-GCM
blobs, whole or streamed (:mod:`~vertimrf.crypto.aead`), the AES-256-CTR PRG
(:mod:`~vertimrf.crypto.prg`) and the TLS identities of the network service
(:mod:`~vertimrf.crypto.identity`). All primitives come from ``cryptography``.

Security argument, in short: a deal is sealed with an ephemeral X25519 key and AES-256-GCM, so
only the holder of the recipient's private key can open it. A pairwise key is an X25519 secret
the server never learns (it relays public keys only; a swapped key shows in the fingerprints),
passed through HKDF-SHA256 with the run context and both public keys, so it differs per pair
and per run. Every key serves one purpose: a distinct HKDF label derives the subkey of each
use. AES-GCM authenticates the ciphertext together with its associated data (run and purpose),
so a replayed, foreign or altered blob is refused rather than misread. ``expand`` is
AES-256-CTR from nonce zero under a subkey used for that label alone, so no keystream repeats.

It imports nothing of the package but :mod:`vertimrf.errors` and :mod:`vertimrf.io`.
"""
