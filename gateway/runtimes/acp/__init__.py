"""The ACP runtime: any Agent Client Protocol agent over stdio, through the official SDK.

The runtime is ``.runtime.AcpRuntime``, built from its settings (``.settings``). The
package itself imports nothing, so that the app reads this runtime's settings without loading
the SDK.
"""
