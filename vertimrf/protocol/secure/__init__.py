"""Method "secure": its plan (:mod:`.plan`, on :mod:`.marginals` and :mod:`.widths`) and its
byte formats, one module per message kind:
:mod:`.deal` (deals and round-2 deals), :mod:`.slot_map`, :mod:`.commit` (commit and admit),
:mod:`.tokens`, :mod:`.features` (feature blobs), :mod:`.release` and :mod:`.request`;
:mod:`.wire` holds what they share.


* A **deal** is what the server sends one party, sealed to the party's X25519 key
  (:func:`vertimrf.crypto.keys.seal`) with the run and the party's name as associated
  data: the seed of the party's mask U, the seed of W for each pair where it is the lower
  party, and Z = U_p^T U_q - W for each pair where it is the higher one.
* A **feature blob** is X - U for one peer, encrypted under the two parties' pairwise key
  with the run, the round, the direction and the sender's record-set digest as associated
  data; round 2 holds the groups the request needs, with fresh masks (a **round-2 deal**,
  :class:`GroupDeal`).
* A **release** holds the noisy within-party marginals, the padded noisy shares of each
  product and (first release, count party) the noisy count.
* A **request** is the server's choice of marginals to re-measure: JSON
  ``{"config_hash": ..., "marginals": [[a, b], ...]}`` (public, post-processing of DP values).

Deals are ``.npz`` archives (:func:`~vertimrf.container.npz_bytes`: no clock in
the bytes) read with ``allow_pickle=False`` (inside authenticated encryption); releases are
the bounded message container of :mod:`vertimrf.container`. Nothing here unpickles.
"""
