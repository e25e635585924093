"""The network service: a long-running HTTPS server that relays the run's messages and runs
the server's steps, and the parties' transport to it (mutual TLS with certificates pinned
in the config). See :mod:`vertimrf.service.app` for the wire protocol and
:mod:`vertimrf.service.tls` for how keys are made and compared."""
