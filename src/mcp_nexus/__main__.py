from mcp_nexus.cli import app

app()
