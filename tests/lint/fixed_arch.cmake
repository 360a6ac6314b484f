# tests/lint/fixed_arch.cmake — "the architecture is fixed at creation" (DESIGN.md §3, issue 10):
# no std::variant / std::visit on a submission path. A runtime queue branches on the agent's
# family once, when it is made (arch::visit_family), and keeps a typed ring or a function table
# filled then; a variant visited per submission is the run-time branch this forbids. Scans every
# header of the layers that submit work (queue/, runtime/, graph/) below ${ROOT}/aqueduct/.
#
#   cmake -DROOT=<dir that holds aqueduct/> -P fixed_arch.cmake
#
# Exit status: 0 when clean, 1 (FATAL_ERROR) naming file:line of each use.
cmake_minimum_required(VERSION 3.25)
if(NOT DEFINED ROOT OR NOT IS_DIRECTORY "${ROOT}/aqueduct")
  message(FATAL_ERROR "fixed_arch.cmake: pass -DROOT=<directory that contains aqueduct/> (got '${ROOT}')")
endif()
set(found 0)
foreach(layer queue runtime graph)
  file(GLOB_RECURSE headers "${ROOT}/aqueduct/${layer}/*.hpp" "${ROOT}/aqueduct/${layer}.hpp")
  foreach(path IN LISTS headers)
    file(STRINGS "${path}" lines)
    set(n 0)
    foreach(l IN LISTS lines)
      math(EXPR n "${n} + 1")
      string(REGEX REPLACE "//.*$" "" code "${l}")
      if(code MATCHES "std::visit|std::variant|#[ \t]*include[ \t]*<variant>")
        message("${path}:${n}: error: [fixed-arch] '${CMAKE_MATCH_0}' in a submitting layer: branch on the architecture once, when the queue is made (a typed queue from arch::visit_family, or a function table filled then), not per submission")
        math(EXPR found "${found} + 1")
      endif()
    endforeach()
  endforeach()
endforeach()
if(found GREATER 0)
  message(FATAL_ERROR "${found} use(s) of std::variant/std::visit in queue/, runtime/ or graph/")
endif()
