# Debian packages (docs/install.md, "Debian packages"), with -DPALISADE_PACKAGES=ON
# and the prefix /usr; `./dev packages` builds them with CPack and tests them.
#
#   palisade           the command line
#   palisade-lockd     the lock group daemon, its systemd unit, /etc/palisade/lockd.conf
#   palisade-replica   the replica daemon, its systemd unit, /etc/palisade/replica.conf
#   libpalisade0.1     the shared libraries (their SONAME's version)
#   libpalisade-dev    headers, static libraries, the CMake package, pkg-config files
#   python3-palisade   the Python package `palisade` (with -DPALISADE_PYTHON=ON, the default)
#
# The daemons run as the system user palisade, which their postinst makes.
# Installing a daemon does not start it: it needs a cluster file and keys first.
set(units_dir "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
set(script_dir "${PROJECT_BINARY_DIR}/packaging")
foreach(daemon lockd replica)
  set(DAEMON palisade-${daemon})
  set(CONF ${daemon}.conf)
  if(daemon STREQUAL "lockd")
    set(WHAT "lock group node")
  else()
    set(WHAT "quorum store replica")
  endif()
  configure_file(packaging/systemd/palisade-daemon.service.in "${script_dir}/${DAEMON}.service" @ONLY)
  configure_file(packaging/debian/prerm.in "${script_dir}/${daemon}/prerm" @ONLY FILE_PERMISSIONS OWNER_READ
                 OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  file(WRITE "${script_dir}/${daemon}/conffiles" "/etc/palisade/${CONF}\n")
  install(FILES "${script_dir}/${DAEMON}.service" DESTINATION "${units_dir}" COMPONENT ${daemon})
  install(FILES packaging/etc/${CONF} DESTINATION /etc/palisade COMPONENT ${daemon})
  string(TOUPPER ${daemon} COMPONENT)
  set(CPACK_DEBIAN_${COMPONENT}_PACKAGE_NAME ${DAEMON})
  set(CPACK_DEBIAN_${COMPONENT}_PACKAGE_SECTION net)
  set(CPACK_DEBIAN_${COMPONENT}_PACKAGE_DEPENDS "passwd")
  set(CPACK_DEBIAN_${COMPONENT}_PACKAGE_RECOMMENDS "palisade (= ${PROJECT_VERSION}-1)")
  set(CPACK_DEBIAN_${COMPONENT}_PACKAGE_CONTROL_EXTRA
      "${PROJECT_SOURCE_DIR}/packaging/debian/postinst;${script_dir}/${daemon}/prerm;${script_dir}/${daemon}/conffiles")
endforeach()
set(CPACK_COMPONENT_LOCKD_DESCRIPTION
    "palisade lock group node\nA node of palisade's Paxos lock group: named locks as leases with sessions,\n each grant with a strictly increasing fencing token and a signed sequencer.")
set(CPACK_COMPONENT_REPLICA_DESCRIPTION
    "palisade quorum store replica\nA replica of palisade's leaderless quorum store on LMDB, which refuses\n the writes of a superseded lock holder (fence floors per lock).")
set(CPACK_COMPONENT_CLI_DESCRIPTION
    "palisade command line\npalisade: locks, fenced reads and writes, status, repair, key generation,\n and a local cluster in one command.")
set(CPACK_COMPONENT_LIB_DESCRIPTION
    "palisade client libraries\nlibpalisade (quorum store and lock client), libpalisade-sequencer and\n libpalisade-config.")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "palisade client libraries: development files\nHeaders, static libraries, the CMake package (find_package(palisade)) and\n pkg-config files.")

# cpack packs what the target `installable` built, not the tests too.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME palisade)
set(CPACK_PACKAGE_VENDOR "palisade")
set(CPACK_PACKAGE_CONTACT "palisade maintainers <palisade@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL cli lockd replica lib dev)
if(PALISADE_PYTHON_VERSION)
  list(APPEND CPACK_COMPONENTS_ALL python)
  set(CPACK_COMPONENT_PYTHON_DESCRIPTION
      "palisade client for Python\nThe Python package palisade: locks with sessions, fenced puts and gets,\n prefix reads, elections, conditional writes and watches, through the C++ client.")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-palisade)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
  # The native module is built for one Python's ABI; dpkg-shlibdeps adds the libraries it links.
  string(REPLACE "." ";" python_version_parts ${PALISADE_PYTHON_VERSION})
  list(GET python_version_parts 0 python_major)
  list(GET python_version_parts 1 python_minor)
  math(EXPR python_next_minor "${python_minor} + 1")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
      "python3 (>= ${PALISADE_PYTHON_VERSION}), python3 (<< ${python_major}.${python_next_minor})")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_EXTRA
      "${PROJECT_SOURCE_DIR}/packaging/debian/python/postinst;${PROJECT_SOURCE_DIR}/packaging/debian/python/prerm")
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends from what the binaries link (dpkg-shlibdeps)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)  # as dh_strip does; the build tree keeps the debug information
set(CPACK_DEBIAN_CLI_PACKAGE_NAME palisade)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION net)
set(CPACK_DEBIAN_LIB_PACKAGE_NAME libpalisade${PALISADE_SOVERSION})
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIB_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libpalisade-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The static libraries and the .pc files' Libs.private need the libraries' own -dev packages.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libpalisade${PALISADE_SOVERSION} (= ${PROJECT_VERSION}-1), libzmq3-dev, libxxhash-dev, libsodium-dev, libtomlplusplus-dev")
# The package's own libraries, which dpkg-shlibdeps would look for in the system.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${PROJECT_BINARY_DIR}")
include(CPack)
