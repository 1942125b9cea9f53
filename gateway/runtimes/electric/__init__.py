"""The Electric Agents runtime: each conversation is an entity on an Electric Agents server.

The runtime is ``.runtime.ElectricRuntime``, built from its settings (``.settings``).
The package itself imports nothing, so that the app reads this runtime's settings without
loading the runtime.
"""
