# The layering the folders promise, checked at configure time (docs/design.md,
# "Layout"): a core target that links ZeroMQ or LMDB, even through another
# library, stops the configure with the chain that brings it in.

# palisade_link_closure(TARGET OUT): every library TARGET links, directly or
# through the libraries it links (static libraries pass their private links on
# too), each as "name<-what linked it<-...".
function(palisade_link_closure target out)
  set(result "")
  set(seen ${target})
  set(queue ${target})
  set(via_${target} ${target})
  while(queue)
    list(POP_FRONT queue t)
    set(deps "")
    get_target_property(type ${t} TYPE)
    get_target_property(imported ${t} IMPORTED)
    if(NOT type STREQUAL "INTERFACE_LIBRARY" AND NOT imported)
      get_target_property(direct ${t} LINK_LIBRARIES)
      if(direct)
        list(APPEND deps ${direct})
      endif()
    endif()
    get_target_property(iface ${t} INTERFACE_LINK_LIBRARIES)
    if(iface)
      list(APPEND deps ${iface})
    endif()
    foreach(d IN LISTS deps)
      # $<LINK_ONLY:x> is a private link of a static library; "::@(dir)" marks
      # where a link was made. Other generator expressions are kept as text.
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" d "${d}")
      if(d MATCHES "^::@" OR d STREQUAL "" OR d IN_LIST seen)
        continue()
      endif()
      list(APPEND seen ${d})
      set(via_${d} "${d}<-${via_${t}}")
      list(APPEND result "${via_${d}}")
      if(TARGET ${d})
        list(APPEND queue ${d})
      endif()
    endforeach()
  endwhile()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# palisade_forbid_links(TARGETS t... [MATCHING regex...] [ONLY name...]): fails
# when a TARGET links, at any depth, a library whose name (lowercase) matches one
# of the regexes, or, with ONLY, any library not listed there.
function(palisade_forbid_links)
  cmake_parse_arguments(F "" "" "TARGETS;MATCHING;ONLY" ${ARGN})
  foreach(target IN LISTS F_TARGETS)
    palisade_link_closure(${target} closure)
    foreach(chain IN LISTS closure)
      string(REGEX REPLACE "<-.*" "" lib "${chain}")
      string(TOLOWER "${lib}" name)
      set(bad "")
      foreach(re IN LISTS F_MATCHING)
        if(name MATCHES "${re}")
          set(bad "a library that matches '${re}'")
        endif()
      endforeach()
      if(F_ONLY AND NOT lib IN_LIST F_ONLY)
        set(bad "a library other than ${F_ONLY}")
      endif()
      if(bad)
        message(FATAL_ERROR "layout: ${target} must not link ${bad}, but links ${lib} (${chain}). "
                            "See docs/design.md, \"Layout\".")
      endif()
    endforeach()
  endforeach()
endfunction()
