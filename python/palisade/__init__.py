"""palisade for Python: the C++ client library (libpalisade) through pybind11.

    import palisade
    cluster = palisade.ClusterFile("cluster.toml", key="keys/admin.key")
    store = palisade.QuorumStore(cluster)
    locks = palisade.LockClient(cluster, store=store)
    lease = locks.acquire("ledger", wait=10)
    store.put("balance", b"100", lease=lease)   # refused (palisade.Fenced) once superseded

Every rule (fenced writes, the read rules, sessions, elections) is the C++
library's; see docs/recipes.md and docs/consistency.md.
"""

from palisade._errors import ERRORS, Error
from palisade._palisade import (ClusterFile, ConditionalStore, Election, Leader, Lease, LockClient, QuorumStore,
                                Timestamp, Version)

globals().update({cls.__name__: cls for cls in ERRORS.values()})

__all__ = ["ClusterFile", "ConditionalStore", "Election", "Error", "Leader", "Lease", "LockClient", "QuorumStore", "Timestamp",
           "Version"] + [cls.__name__ for cls in ERRORS.values()]
