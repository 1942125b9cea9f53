"""An MCP server (stdio) with one tool, run by fast-agent's own Python in the fast-agent
test: MCP tools are what fast-agent asks the client's permission for.
"""

from fastmcp import FastMCP

app = FastMCP("cleaner")


@app.tool()
def clean(path: str) -> str:
    """Delete a build directory."""
    return f"cleaned {path}"


app.run(show_banner=False)
