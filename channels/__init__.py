"""Channel adapters, one per platform. Each translates platform <-> core and renders replies;
the app's registry (``slashgate.registry``) lists them.
"""
