"""OAuth to upstream servers: Nexus as the OAuth client of an MCP server that answers 401 (docs/OAUTH.md).

The MCP SDK's `OAuthClientProvider` does the protocol (discovery, registration, PKCE, the
`resource` parameter, the `iss` check, refresh, step-up scopes). Nexus adds what a gateway
needs around it: logins that persist encrypted (storage.py, upstream/oauth/vault.py), a refresh
on 401 and ahead of expiry (provider.py), a server that waits for a login in NEEDS_AUTH
instead of failing (manager.py), and the login itself through the gateway's `/oauth/callback`.
"""
