"""Profiles (virtual servers): named views of the catalog bound to identities (docs/IDENTITY.md)."""
