"""One select-measure-fit engine for Centralized and Secure.

Design notes: docs/design/synth.md."""
