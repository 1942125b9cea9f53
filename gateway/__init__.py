"""slashgate's gateway: the core pipeline, sessions, runtimes and the ports channels implement.

What channels and runtimes see is published in ``gateway.api``. This package imports nothing
itself, so that a process that needs one module (the state store for ``slashgate access``, the
settings for ``slashgate check``) does not pay for the whole core.
"""
