"""One select-measure-fit engine for Centralized and Secure;
design notes in docs/design/synth.md."""
