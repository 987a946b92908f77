# What `cmake --install` puts in place (docs/install.md): the three programs,
# the public headers (include/palisade) and three libraries, each shared (with
# a versioned SONAME) and static, made of the objects the tree compiles anyway:
#
#   palisade::client     libpalisade           QuorumStore, LockClient, Fence   ZeroMQ, xxHash
#   palisade::sequencer  libpalisade-sequencer checking signed sequencers       libsodium
#   palisade::config     libpalisade-config    ClusterFile (palisade/cluster_file.h)  toml++ (and libpalisade-sequencer)
#
# (the static ones are palisade::client_static, ...), found with
# find_package(palisade) or pkg-config (palisade, palisade-sequencer,
# palisade-config). A program that links palisade::client alone links no
# libsodium, toml++ or LMDB.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# While the major version is 0 every minor release may change the ABI, so the
# SONAME carries both: libpalisade.so.0.1.
set(PALISADE_SOVERSION "${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}")

# The libraries' objects go into shared libraries too.
set_target_properties(palisade_base palisade_wire palisade_transport palisade_client palisade_auth palisade_config
                      palisade_cluster_keys PROPERTIES POSITION_INDEPENDENT_CODE ON)

# palisade_installed_library(NAME file-name EXPORT export-name OBJECTS_OF targets...
#                            [USES export-names...] [LINKS libraries...])
# Makes palisade_<export>_shared and palisade_<export>_static from the objects
# of OBJECTS_OF. USES are installed libraries it builds on (both kinds link the
# same kind), LINKS system libraries by their plain names, so that the exported
# package names no target a consumer would have to find (but Threads).
set(PALISADE_INSTALLED_TARGETS "")
function(palisade_installed_library)
  cmake_parse_arguments(L "" "NAME;EXPORT;DESCRIPTION" "OBJECTS_OF;USES;LINKS" ${ARGN})
  set(objects "")
  foreach(t IN LISTS L_OBJECTS_OF)
    list(APPEND objects $<TARGET_OBJECTS:${t}>)
  endforeach()
  foreach(kind shared static)
    string(TOUPPER ${kind} KIND)
    set(target palisade_${L_EXPORT}_${kind})
    add_library(${target} ${KIND} ${objects})
    set(export_name ${L_EXPORT})
    if(kind STREQUAL "static")
      set(export_name ${L_EXPORT}_static)
    endif()
    set_target_properties(${target} PROPERTIES OUTPUT_NAME ${L_NAME} EXPORT_NAME ${export_name}
                                               LINKER_LANGUAGE CXX)
    if(kind STREQUAL "shared")
      set_target_properties(${target} PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PALISADE_SOVERSION})
      # Outside /usr (a prefix like /opt/palisade, or a staged tree) a library
      # finds the ones it USES beside it: a program's RUNPATH does not reach
      # its libraries' own dependencies. The packages (prefix /usr) need none.
      if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
        set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN")
      endif()
      if(NOT (PALISADE_SANITIZE OR PALISADE_TSAN OR PALISADE_FUZZ))  # their runtimes come with the program
        target_link_options(${target} PRIVATE -Wl,--no-undefined)  # every object it needs is in it
      endif()
    endif()
    target_include_directories(${target} INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                                   $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
    foreach(use IN LISTS L_USES)
      target_link_libraries(${target} PUBLIC palisade_${use}_${kind})
    endforeach()
    target_link_libraries(${target} PRIVATE ${L_LINKS} Threads::Threads)
    list(APPEND PALISADE_INSTALLED_TARGETS ${target})
  endforeach()
  set(PALISADE_INSTALLED_TARGETS ${PALISADE_INSTALLED_TARGETS} PARENT_SCOPE)

  # pkg-config: relative to the .pc file, so that a staged or moved tree works.
  file(RELATIVE_PATH to_prefix "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
  set(requires "")
  foreach(use IN LISTS L_USES)
    if(use STREQUAL "client")
      list(APPEND requires palisade)
    else()
      list(APPEND requires palisade-${use})
    endif()
  endforeach()
  list(JOIN requires " " requires)
  list(TRANSFORM L_LINKS PREPEND "-l")
  list(JOIN L_LINKS " " libs_private)
  set(pc "${PROJECT_BINARY_DIR}/pkgconfig/${L_NAME}.pc")
  file(WRITE "${pc}"
       "prefix=\${pcfiledir}/${to_prefix}\n"
       "libdir=\${prefix}/${CMAKE_INSTALL_LIBDIR}\n"
       "includedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}\n\n"
       "Name: ${L_NAME}\n"
       "Description: ${L_DESCRIPTION}\n"
       "Version: ${PROJECT_VERSION}\n"
       "Requires: ${requires}\n"
       "Libs: -L\${libdir} -l${L_NAME}\n"
       "Libs.private: ${libs_private} -pthread\n"
       "Cflags: -I\${includedir}\n")
  install(FILES "${pc}" DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
endfunction()

palisade_installed_library(NAME palisade EXPORT client
                           DESCRIPTION "palisade client: fenced quorum reads and writes, locks with sessions"
                           OBJECTS_OF palisade_client palisade_transport palisade_wire palisade_base
                           LINKS zmq xxhash)
palisade_installed_library(NAME palisade-sequencer EXPORT sequencer
                           DESCRIPTION "palisade sequencers: check a lock grant's signature offline"
                           OBJECTS_OF palisade_auth USES client LINKS sodium)
palisade_installed_library(NAME palisade-config EXPORT config
                           DESCRIPTION "palisade cluster files: a client's options from the file the daemons read"
                           OBJECTS_OF palisade_config palisade_cluster_keys USES client sequencer LINKS tomlplusplus)

# What an install needs built (./dev packages builds this alone, not the tests).
add_custom_target(installable)
add_dependencies(installable palisade palisade-lockd palisade-replica ${PALISADE_INSTALLED_TARGETS})

install(TARGETS palisade RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
install(TARGETS palisade-lockd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT lockd)
install(TARGETS palisade-replica RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT replica)
install(TARGETS ${PALISADE_INSTALLED_TARGETS} EXPORT palisade-targets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(DIRECTORY include/palisade DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)

set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/palisade)
install(EXPORT palisade-targets NAMESPACE palisade:: DESTINATION ${config_dir} FILE palisade-targets.cmake
        COMPONENT dev)
configure_package_config_file(cmake/palisade-config.cmake.in "${PROJECT_BINARY_DIR}/palisade-config.cmake"
                              INSTALL_DESTINATION ${config_dir})
# 0.x: a package of another minor version may differ in its API.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/palisade-config-version.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/palisade-config.cmake" "${PROJECT_BINARY_DIR}/palisade-config-version.cmake"
        DESTINATION ${config_dir} COMPONENT dev)
