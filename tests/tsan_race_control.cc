// The negative control of `./dev tsan`: a data race ThreadSanitizer must
// report. Two threads write one plain int with nothing ordering them. If the
// run writes no report, reports are being lost (a wrong log_path, a build
// without TSan, a suppression that hides everything) and a clean run of the
// tests would prove nothing.
#include <thread>

namespace {
int shared_counter = 0;  // deliberately unsynchronised
}  // namespace

int main() {
  auto bump = [] {
    for (int i = 0; i < 1000; ++i) {
      // volatile: the compiler keeps every access, so TSan sees each one.
      *static_cast<volatile int*>(&shared_counter) = *static_cast<volatile int*>(&shared_counter) + 1;
    }
  };
  std::thread a(bump);
  std::thread b(bump);
  a.join();
  b.join();
  return 0;
}
