"""The pi runtime: ``pi --mode rpc`` per conversation, JSON lines over stdio.

The runtime is ``.runtime.PiRuntime``, built from its settings (``.settings``). The
package itself imports nothing, so that the app reads this runtime's settings without loading
the runtime.
"""
