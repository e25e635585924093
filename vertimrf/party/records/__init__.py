"""A party's data from its source to rows in the run's order;
design notes in docs/design/party.md."""
