"""Where a role's table is read from, given its path: the command line and the service pass
the path (and a Dask client, if any) and never choose a table class."""

from __future__ import annotations

import os

from vertimrf.domain import DomainSpec, EncodedTable
from vertimrf.errors import ConfigError
from vertimrf.party.records.aligned import HeldTable
from vertimrf.party.records.ids import RecordIds


def table_at(
    path: str | os.PathLike,
    spec: DomainSpec,
    *,
    name: str,
    id_column: str,
    id_type: str = "",
    secure: bool = False,
    select: bool = False,
    client: object | None = None,
) -> tuple[EncodedTable | HeldTable, RecordIds | None]:
    """Party ``name``'s table at ``path`` over ``spec``, and its record IDs when read into
    memory: on the Dask cluster of ``client`` (a Parquet dataset; method secure only),
    streamed from its file (a CSV or Parquet file) for the pipelines that align it where it
    is held (``select``), else read whole."""
    from vertimrf.party.records.table_input import input_format, read_party_table

    if client is not None:
        if not secure or input_format(path) != "parquet":
            raise ConfigError(
                "--scheduler and --workers run method secure on a Parquet dataset (a folder or "
                "a .parquet file): convert the CSV to Parquet first."
            )
        from vertimrf.party.records.dask_table import DaskTable

        return DaskTable(path, client), None
    if select:
        from vertimrf.party.records.file_table import FileTable

        return FileTable(path), None
    return read_party_table(path, spec, id_column, party=name, id_type=id_type)
