# Offline profile for Debian 12: the detected default profile (run `conan profile detect` once)
# in C++20, with Boost, range-v3, zstd, zlib and libdrm taken from the system (the packages
# scripts/setup.sh installs) instead of built or downloaded. Use it for both contexts:
#   conan create . -pr:a conan/system.profile
# The versions are Debian 12's; aqueduct's conanfile.py asks for ranges that contain them.
include(default)

[settings]
compiler.cppstd=20

[platform_requires]
boost/1.74.0
range-v3/0.12.0
zstd/1.5.4
zlib/1.2.13
libdrm/2.4.114

[conf]
# Debian's ninja-build is installed by scripts/setup.sh; make is not.
tools.cmake.cmaketoolchain:generator=Ninja
