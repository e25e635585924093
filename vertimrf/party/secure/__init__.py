"""A party's side of method="secure", one module per protocol
step; design notes in docs/design/party.md."""

from vertimrf.party.secure.features import SealedBlobs
from vertimrf.party.secure.party import SecureParty
from vertimrf.party.secure.session import Blob

__all__ = ["Blob", "SealedBlobs", "SecureParty"]
