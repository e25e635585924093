"""Method "secure": its plan and its byte formats, one module per message
kind; design notes in docs/design/protocol.md."""
