"""Method "secure": its plan and its byte formats, one module per message kind.

Design notes: docs/design/protocol.md."""
