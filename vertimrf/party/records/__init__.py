"""A party's data from its source to rows in the run's order.

Design notes: docs/design/party.md."""
