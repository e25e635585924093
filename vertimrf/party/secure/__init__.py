"""A party's side of method="secure", one module per protocol step.

:class:`~.party.SecureParty` sets up its frozen :class:`~.session.PartySession` (name, plan,
keys, ledger, records, randomness), holds its :class:`~.step_data.StepData` (what the steps
made), commits to its data (:meth:`~.session.PartySession.commitment`: the server deals on
every party's commitment, so other data gets other masks), then runs its steps, each once,
each a function of the session, the step data and its inputs:

1. features (:mod:`.features`): open the server's deal (refused when it was made for other
   data), order the rows by a PRF of the record IDs (keyed by the group secret and the run)
   in PRF buckets padded with all-zero rows to the public capacity, and send X - U to every
   peer under the pairwise key;
2. release (:mod:`.shares`, :mod:`.release`): check each peer's record-set digest, compute
   the share of every product, and release the first, cheap measurement of every 2-way
   marginal (with a workload, of its first release);
3. groups (:mod:`.features`): after the server's request, the round-2 groups each peer needs;
4. measure (:mod:`.release`): the marginals the server requests, with fresh noise and a
   fresh pad, from the kept shares.

Between processes (the command-line roles) the shares are kept in a private state file
(:mod:`.step_data`). :class:`vertimrf.protocol.secure.plan.SecurePlan` fixes every parameter;
the masks and pads are expanded under the labels of :mod:`vertimrf.protocol.masks`. Its
noise is keyed by every input of the step, its pads by both blobs of the pair and the
request, its nonces by what each plaintext depends on (``docs/protocol.md``, "Why nothing
repeats on other data").
"""

from vertimrf.party.secure.features import SealedBlobs
from vertimrf.party.secure.party import SecureParty
from vertimrf.party.secure.session import Blob

__all__ = ["Blob", "SealedBlobs", "SecureParty"]
