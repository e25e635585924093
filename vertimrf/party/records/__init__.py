"""A party's data from its source to rows in the run's order.

:func:`~vertimrf.party.records.open.open_records` is the one entry: the table where it is
held (:class:`~vertimrf.party.records.memory.MemoryTable`,
:class:`~vertimrf.party.records.file_table.FileTable`,
:class:`~vertimrf.party.records.dask_table.DaskTable`, behind
:class:`~vertimrf.party.records.aligned.HeldTable`), laid out by buckets or by the deal's
slots (:mod:`vertimrf.party.records.layout`), fresh or read back from an earlier process
(:mod:`vertimrf.party.records.kept_aligned`).
"""
