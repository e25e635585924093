"""One select-measure-fit engine for Centralized and Secure.

The engine reads the first release (every 2-way marginal, noisy, with its noise scale, and
the noisy count) and the plan's public numbers (:class:`~.plan.EnginePlan`), and asks an
oracle (:class:`~.oracle.Oracle`) what it can measure:

1. :mod:`.scores`: the record count pooled with every table's sum, pairwise scores;
2. :mod:`.select`: the graph search under model caps, the initial marginal set split into
   what the oracle measures, and the extra pairs to re-measure;
3. :mod:`.fit`: the MRF fitted to both releases, warm-started on the first.

Two oracles: the local one (:mod:`.local`: exact counts plus discrete Gaussian noise, run
end to end by :mod:`.run`, ``PrivMRF(..., selection="engine")``) and the secure product
(:mod:`vertimrf.server.secure.oracle`, whose measurements come from the protocol's rounds).
"""
