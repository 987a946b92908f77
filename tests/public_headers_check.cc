// Compiled with nothing but include/ on the include path: libpalisade's
// public headers stand alone and keep ZeroMQ, MessagePack and LMDB out of users' builds.
#include "palisade/quorum_store.h"
#include "palisade/status.h"
#include "palisade/timestamp.h"

#if defined(ZMQ_VERSION) || defined(CPPZMQ_VERSION)
#error "a public header pulls in ZeroMQ"
#endif
#if defined(MSGPACK_VERSION) || defined(MSGPACK_DEFAULT_API_VERSION)
#error "a public header pulls in MessagePack"
#endif
#if defined(MDB_VERSION_MAJOR)
#error "a public header pulls in LMDB"
#endif
