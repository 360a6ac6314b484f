# Dependencies, found once. Boost.Atomic, range-v3 and libdrm are part of the library's
# interface where present; tests, examples and bench find their own extras.
find_package(PkgConfig QUIET)
set(AQUEDUCT_WITH_LIBDRM 0)

find_package(range-v3 REQUIRED)
if(TARGET range-v3::range-v3)
  target_link_libraries(aqueduct INTERFACE range-v3::range-v3)
endif()

find_package(Boost 1.74 REQUIRED COMPONENTS atomic)
if(TARGET Boost::atomic)
  target_link_libraries(aqueduct INTERFACE Boost::atomic)
endif()

if(PkgConfig_FOUND)
  pkg_check_modules(LIBDRM QUIET IMPORTED_TARGET libdrm libdrm_amdgpu)
  if(TARGET PkgConfig::LIBDRM)
    target_link_libraries(aqueduct INTERFACE PkgConfig::LIBDRM)
    target_compile_definitions(aqueduct INTERFACE AQUEDUCT_HAS_LIBDRM=1)
    set(AQUEDUCT_WITH_LIBDRM 1)
  endif()
endif()

# zstd and zlib: compressed offload bundles (CCOB) in code/decompress.hpp. Plain library names
# so the exported target carries them as -lzstd -lz (Debian: libzstd-dev, zlib1g-dev).
find_library(AQUEDUCT_ZSTD_LIBRARY zstd REQUIRED)
find_library(AQUEDUCT_ZLIB_LIBRARY z REQUIRED)
target_link_libraries(aqueduct INTERFACE zstd z)
