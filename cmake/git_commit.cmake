# Writes OUT, a source file that defines palisade::git_commit(): the commit the
# build is made from (base/version.h). Run at every build (base/CMakeLists.txt),
# it rewrites OUT only when the text changes, so that a new commit recompiles
# that one file and relinks, and an unchanged one rebuilds nothing.
#
# cmake -DSOURCE_DIR=... -DGIT=... -DOVERRIDE=... -DOUT=... -P git_commit.cmake
#   OVERRIDE: the text to report instead (-DPALISADE_GIT_COMMIT=..., for a
#   build from a source tarball); GIT: the git program, empty when none.
set(commit "unknown")
if(NOT OVERRIDE STREQUAL "")
  set(commit "${OVERRIDE}")
elseif(GIT)
  execute_process(COMMAND ${GIT} -C ${SOURCE_DIR} rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE head RESULT_VARIABLE failed OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT failed)
    set(commit "${head}")
    # Tracked files changed since the commit; --no-optional-locks: a build
    # never takes the index lock from a git command the user runs meanwhile.
    execute_process(COMMAND ${GIT} -C ${SOURCE_DIR} --no-optional-locks status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes RESULT_VARIABLE failed ERROR_QUIET)
    if(NOT failed AND NOT changes STREQUAL "")
      string(APPEND commit ", dirty")
    endif()
  endif()
endif()

string(REPLACE "\\" "\\\\" literal "${commit}")
string(REPLACE "\"" "\\\"" literal "${literal}")
string(CONCAT text "// Written by cmake/git_commit.cmake at build time.\n#include \"base/version.h\"\n\n"
                   "const char* palisade::git_commit() { return \"${literal}\"; }\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
