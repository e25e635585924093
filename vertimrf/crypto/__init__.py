"""The cryptography of vertimrf, apart from any protocol; all primitives come from ``cryptography``.

Design notes: docs/design/crypto.md."""
