"""The audit log: who called which tool and who changed what, as a hash-chained JSON-lines file.

Records come from the gateway's typed events (a finished tools/call, an admin action), never
from hooks in the pipeline; they are queued and written off the call's path (writer.py), each
line carrying the hash of the one before it (chain.py), so `nexus audit verify` finds an
edited, removed or reordered line (docs/IDENTITY.md).
"""
