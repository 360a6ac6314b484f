# cmake -DCXX=<compiler> -DSRC=<file> -DINC=<include dir> -DCASE=<n> [-DEXPECT=<regex>] -P check_compile.cmake
# Without EXPECT the source must compile; with EXPECT it must fail and the diagnostics must match.
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INC} -DCASE=${CASE} ${SRC}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT DEFINED EXPECT OR EXPECT STREQUAL "")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "control case ${CASE} failed to compile:\n${err}")
  endif()
else()
  if(rc EQUAL 0)
    message(FATAL_ERROR "case ${CASE} compiled but must not")
  endif()
  if(NOT err MATCHES "${EXPECT}")
    message(FATAL_ERROR "case ${CASE} failed for another reason than /${EXPECT}/:\n${err}")
  endif()
endif()
