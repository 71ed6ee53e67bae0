"""Who is calling: the principal an access token names, and how such a token is checked.

This package sits low (it imports nothing of the gateway's layers), so the pipeline's `Caller`
can carry a `Principal` and every per-caller rule can key on it (docs/IDENTITY.md).
"""
