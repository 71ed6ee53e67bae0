from mcp_nexus.cli.app import app

app()
