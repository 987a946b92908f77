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

import time

from palisade._errors import ERRORS, Error
from palisade._palisade import (ClusterFile, ConditionalStore, Election, Leader, Lease, LockClient, LockWatcher,
                                QuorumStore, Timestamp, Version, Watcher, WatchEvent)

globals().update({cls.__name__: cls for cls in ERRORS.values()})


def _events(watcher, every=0.5):
    """Yields each change as the rounds tell it, a round every `every` seconds, for ever; a round that fails
    Unavailable or Timeout is tried again at the next."""
    while True:
        try:
            yield from watcher.poll()
        except (ERRORS["unavailable"], ERRORS["timeout"]):
            pass
        time.sleep(every)


Watcher.events = _events

__all__ = ["ClusterFile", "ConditionalStore", "Election", "Error", "Leader", "Lease", "LockClient", "LockWatcher",
           "QuorumStore", "Timestamp", "Version", "Watcher", "WatchEvent"] + [cls.__name__ for cls in ERRORS.values()]
