"""The cryptography of vertimrf, apart from any protocol; all primitives come from
``cryptography``; design notes in docs/design/crypto.md."""
