#!/usr/bin/env bash
# Installs every Debian package palisade needs to build, test and benchmark.
# Idempotent: installs only what is missing, so a second run does nothing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  ccache  # ./dev's builds: a rebuild, or CI's five build trees, compile only what changed
  clang  # ./dev replay-check builds palisade-sim with it too
  libclang-rt-14-dev  # clang's sanitizer and libFuzzer runtimes (./dev fuzz); clang only recommends them
  clang-format clang-tidy  # scripts/check-format, scripts/tidy
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev liblmdb-dev lmdb-utils libxxhash-dev
  libcli11-dev libspdlog-dev libfmt-dev
  catch2 libbenchmark-dev
  libsodium-dev libtomlplusplus-dev nlohmann-json3-dev
  libcpp-httplib-dev  # the daemons' --metrics-listen endpoint
  prometheus  # promtool, which checks the daemons' /metrics in the tests
  python3 python3-zmq python3-msgpack python3-cryptography
  python3-dev pybind11-dev python3-pytest  # the Python binding (python/), and its tests
  python3-yaml  # tests/scripts/monitoring_test.py reads the alert rules
  gnuplot-nox  # contrib/grafana/render-dashboard draws the dashboard's picture
  libhiredis-dev libzookeeper-mt-dev libcurl4-openssl-dev  # palisade-peer-bench's clients of the peers
  systemd mmdebstrap  # ./dev packages: systemd-analyze verify, and a clean Debian 12 to install them in
  iproute2 iptables faketime  # scripts/torture: namespaces, partitions, daemons' clocks
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "setup: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
