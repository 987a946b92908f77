// Fault injection for tests: a failing fdatasync. Linking this file into a test
// executable puts its fdatasync in front of the C library's, for the code of
// the executable and for the libraries it loads (LMDB included); it calls the
// real one unless told to fail.
#pragma once

namespace palisade::test {

// The next `n` calls of fdatasync in this process fail with EIO.
void fail_next_syncs(int n);

}  // namespace palisade::test
