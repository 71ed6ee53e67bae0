"""frontends/mcp"""
