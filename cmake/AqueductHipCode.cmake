# Device code that the tests and examples build at build time with clang-19, to run real machine code
# on the emulated GPUs (not part of the installed package). Included by the top-level CMakeLists.txt.

# clang-19 (Debian package clang-19), found once. Where it is missing the callers register the tests
# that need its code objects as skipped (aqueduct_skip_test).
find_program(AQUEDUCT_CLANG19 clang-19)

# aqueduct_hip_code_object(OUTPUT <file.co> SOURCE <file.hip> ARCH <gfxNNNN> OPT <O2|O3> [FLAGS ...])
# The rule that builds one code object for processor ARCH from a HIP source: device code only, no
# offload bundle, neither the device libraries nor the HIP headers (the sources include nothing).
function(aqueduct_hip_code_object)
  cmake_parse_arguments(PARSE_ARGV 0 H "" "OUTPUT;SOURCE;ARCH;OPT" "FLAGS")
  add_custom_command(OUTPUT ${H_OUTPUT}
    COMMAND ${AQUEDUCT_CLANG19} -x hip --cuda-device-only -nogpulib -nogpuinc --no-gpu-bundle-output
            --offload-arch=${H_ARCH} -${H_OPT} ${H_FLAGS} ${H_SOURCE} -o ${H_OUTPUT}
    DEPENDS ${H_SOURCE} VERBATIM)
endfunction()

# aqueduct_hip_code_objects(<out-var> SOURCE <dir/name.hip> OPT <O2|O3> ARCHS <gfxNNNN>...)
# One code object per processor, <current binary dir>/<name>-<gfxNNNN>.co; <out-var> gets their paths.
function(aqueduct_hip_code_objects out)
  cmake_parse_arguments(PARSE_ARGV 1 H "" "SOURCE;OPT" "ARCHS")
  get_filename_component(stem ${H_SOURCE} NAME_WE)
  set(cos)
  foreach(arch IN LISTS H_ARCHS)
    set(co ${CMAKE_CURRENT_BINARY_DIR}/${stem}-${arch}.co)
    aqueduct_hip_code_object(OUTPUT ${co} SOURCE ${H_SOURCE} ARCH ${arch} OPT ${H_OPT})
    list(APPEND cos ${co})
  endforeach()
  set(${out} "${cos}" PARENT_SCOPE)
endfunction()

# aqueduct_program_hip_code(<target> SOURCE <dir/name.hip> OPT <O2|O3> ARCHS <gfxNNNN>... DIR_DEFINE <macro>)
# A program that loads its own code objects (an example's --gfx): the code objects of SOURCE for
# ARCHS, built with <target> by the custom target <target>_gfx_code (in ALL); <macro> names, in
# <target>'s sources, the directory they are in. Where clang-19 is missing only the macro is set.
function(aqueduct_program_hip_code target)
  cmake_parse_arguments(PARSE_ARGV 1 H "" "SOURCE;OPT;DIR_DEFINE" "ARCHS")
  if(AQUEDUCT_CLANG19)
    aqueduct_hip_code_objects(cos SOURCE ${H_SOURCE} OPT ${H_OPT} ARCHS ${H_ARCHS})
    add_custom_target(${target}_gfx_code ALL DEPENDS ${cos})
    add_dependencies(${target} ${target}_gfx_code)
  endif()
  target_compile_definitions(${target} PRIVATE ${H_DIR_DEFINE}="${CMAKE_CURRENT_BINARY_DIR}")
endfunction()
