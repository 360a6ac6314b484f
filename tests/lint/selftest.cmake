# tests/lint/selftest.cmake — proves that lint.cmake can fail: runs it over fixtures/, a tree
# with deliberate violations of every rule next to clean headers built to trip a careless lint
# (includes and #if inside comments, braces in strings, using-directives in function bodies, a
# namespace alias, quoted relative includes, layer umbrellas). Passes only if the lint exits
# non-zero and reports exactly the findings listed in fixtures/expected.txt ("file:line: error:
# [rule]" each, written by hand from the fixtures), no more and no fewer.
#   cmake -DLINT=<lint.cmake> -DFIXTURES=<fixtures dir> -P selftest.cmake
cmake_minimum_required(VERSION 3.25)

execute_process(
  COMMAND "${CMAKE_COMMAND}" -DROOT=${FIXTURES}/include -DDISPLAY_BASE=${FIXTURES} -P "${LINT}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")

set(problems "")
if(rc EQUAL 0)
  string(APPEND problems "\n  the lint exited 0 on a tree full of violations")
endif()
if(NOT all MATCHES "aqueduct lint: [0-9]+ violation")
  string(APPEND problems "\n  the lint did not print its summary line (did it crash?)")
endif()

file(STRINGS "${FIXTURES}/expected.txt" expected)
list(LENGTH expected n_expected)
foreach(e IN LISTS expected)
  string(FIND "${all}" "${e} " at)
  if(at EQUAL -1)
    string(APPEND problems "\n  missed: ${e}")
  endif()
endforeach()

string(REGEX MATCHALL "[^\n]*: error: \\[[a-z]+\\]" found "${all}")
list(LENGTH found n_found)
foreach(f IN LISTS found)
  if(NOT f IN_LIST expected)
    string(APPEND problems "\n  false positive: ${f}")
  endif()
endforeach()

if(NOT problems STREQUAL "")
  message(FATAL_ERROR "lint self-test failed (${n_found} findings, ${n_expected} expected):${problems}\n--- lint output ---\n${all}")
endif()
message("lint self-test: the lint failed as it must, with the ${n_expected} expected findings and no others")
