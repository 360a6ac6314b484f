# Conan 2 recipe for aqueduct: a header-only package (nothing is compiled). Create it with
#   conan create . -pr:a conan/system.profile      (Debian's libraries, no remote: docs/conan.md)
# Consumers get the CMake target aqueduct::aqueduct (CMakeDeps) and the pkg-config name aqueduct
# (PkgConfigDeps), the same names as find_package(aqueduct) and the installed aqueduct.pc.
import os
import re

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load
from conan.tools.gnu import PkgConfig

required_conan_version = ">=2.0"


class AqueductConan(ConanFile):
    name = "aqueduct"
    description = "Header-only C++20 runtime for AMD GPUs (KFD, AQL, PM4, SDMA) with an emulated device"
    topics = ("amd", "gpu", "kfd", "hsa", "header-only")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    options = {"with_libdrm": [True, False]}
    default_options = {"with_libdrm": True}
    exports_sources = "CMakeLists.txt", "include/*", "cmake/*", "LICENSE*"
    no_copy_source = True

    # Where a requirement comes from the system ([platform_requires] in the profile), Conan has no
    # files for it: package_info asks pkg-config (or names the library) instead.
    _system_pkg_config = {"zstd": ["libzstd"], "zlib": ["zlib"], "libdrm": ["libdrm", "libdrm_amdgpu"]}
    _system_libs = {"boost": ["boost_atomic"]}

    def set_version(self):
        # The one version: project(aqueduct VERSION x.y.z) in CMakeLists.txt.
        text = load(self, os.path.join(self.recipe_folder, "CMakeLists.txt"))
        m = re.search(r"project\(\s*aqueduct\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", text)
        if not m:
            raise ConanInvalidConfiguration("no project(aqueduct VERSION x.y.z) in CMakeLists.txt")
        self.version = m.group(1)

    def config_options(self):
        if self.settings.os != "Linux":
            del self.options.with_libdrm  # render-node enumeration exists only on Linux

    def layout(self):
        cmake_layout(self)

    def requirements(self):
        # Headers of all of them appear in aqueduct's public headers.
        self.requires("boost/[>=1.74 <2]", transitive_headers=True, transitive_libs=True)  # Boost.Atomic
        self.requires("range-v3/[>=0.11]", transitive_headers=True)
        self.requires("zstd/[>=1.4]", transitive_headers=True, transitive_libs=True)
        self.requires("zlib/[>=1.2.11 <2]", transitive_headers=True, transitive_libs=True)
        if self.options.get_safe("with_libdrm"):
            self.requires("libdrm/[>=2.4.100]", transitive_headers=True, transitive_libs=True)

    def package_id(self):
        self.info.clear()  # one package for every configuration: headers only

    def validate(self):
        if self.settings.get_safe("compiler.cppstd"):
            check_min_cppstd(self, 20)

    def generate(self):
        tc = CMakeToolchain(self)
        for opt in ("TESTS", "EXAMPLES", "BENCH", "FUZZERS"):
            tc.cache_variables[f"AQUEDUCT_BUILD_{opt}"] = False
        tc.cache_variables["AQUEDUCT_VERIFY_HEADERS"] = False
        tc.generate()
        CMakeDeps(self).generate()

    def build(self):
        # Configures only: the library is an INTERFACE target, there is nothing to compile. This
        # produces the CMake package config and aqueduct.pc that `cmake --install` writes.
        CMake(self).configure()

    def package(self):
        CMake(self).install()
        copy(self, "LICENSE*", src=self.source_folder, dst=os.path.join(self.package_folder, "licenses"))

    def package_info(self):
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.set_property("cmake_file_name", "aqueduct")
        self.cpp_info.set_property("cmake_target_name", "aqueduct::aqueduct")
        self.cpp_info.set_property("pkg_config_name", "aqueduct")
        if self.settings.os in ("Linux", "FreeBSD"):
            self.cpp_info.system_libs.append("pthread")
        if self.options.get_safe("with_libdrm"):
            self.cpp_info.defines.append("AQUEDUCT_HAS_LIBDRM=1")
        for req, dep in self.dependencies.items():
            name = req.ref.name
            if dep.package_folder is not None:
                continue  # a real Conan package: CMakeDeps/PkgConfigDeps link it themselves
            info = self.cpp_info
            for module in self._system_pkg_config.get(name, []):
                pc = PkgConfig(self, module)  # fill_cpp_info() would replace, not add
                info.includedirs += [d for d in pc.includedirs if d not in info.includedirs]
                info.system_libs += [lib for lib in pc.libs if lib not in info.system_libs]
                info.defines += [d for d in pc.defines if d not in info.defines]
            info.system_libs += self._system_libs.get(name, [])
