// Tests for kfd/linux_device.hpp and the driver's error reporting, on a machine without a GPU
// (no machine here has /dev/kfd): opening fails cleanly with errc::kfd_unavailable and a detail
// that says what happened and what to do.
#include <aqueduct/kfd/driver.hpp>
#include <aqueduct/kfd/linux_device.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace kfd = aqueduct::kfd;
using aqueduct::errc;

static_assert(kfd::device_file<kfd::linux_device>);

TEST_CASE("linux_device::try_open without /dev/kfd is errc::kfd_unavailable with a hint") {
  const std::filesystem::path missing = "/nonexistent/aqueduct/kfd";
  auto r = kfd::linux_device::try_open(kfd::default_sysfs_root(), missing);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == errc::kfd_unavailable);
  const std::string d(r.detail());
  CHECK(d.find("cannot open /nonexistent/aqueduct/kfd: No such file or directory") == 0);
  CHECK(d.find("--emulate") != std::string::npos);
  CHECK_THROWS_AS((void)kfd::linux_device::open(kfd::default_sysfs_root(), missing), aqueduct::error);
}

TEST_CASE("the default /dev/kfd: either opens or fails with kfd_unavailable") {
  auto r = kfd::linux_device::try_open();
  if (std::filesystem::exists("/dev/kfd")) {
    // A real KFD (not expected on build machines): the fd is valid and the sysfs root default.
    if (r) CHECK(r->kfd_fd() >= 0);
    else CHECK(r.error() == errc::kfd_unavailable);
  } else {
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == errc::kfd_unavailable);
    CHECK(std::string(r.detail()).find("cannot open /dev/kfd: No such file or directory") == 0);
  }
  CHECK(kfd::default_sysfs_root() == "/sys/class/kfd/kfd/topology");
  CHECK(kfd::render_node_path(128) == "/dev/dri/renderD128");
}

TEST_CASE("ioctl failures name the request and the errno") {
  // Request numbers from uapi kfd_ioctl.h: CREATE_QUEUE = _IOWR('K', 0x02, 96 bytes).
  const auto f = kfd::ioctl_failure(0xC0604B02ul, 22);
  CHECK(f == errc::ioctl_failed);
  CHECK(f.detail() == "AMDKFD_IOC_CREATE_QUEUE failed: Invalid argument (EINVAL, -22)");
  CHECK(kfd::ioctl_failure(0xC0604B02ul, 524).detail() ==
        "AMDKFD_IOC_CREATE_QUEUE failed: Operation is not supported (ENOTSUPP, -524)");
  CHECK(std::string(kfd::ioctl_failure(0xC0604B02ul, 3, "AQL queue").detail()) ==
        "AMDKFD_IOC_CREATE_QUEUE failed: No such process (ESRCH, -3) [AQL queue]");
  CHECK(std::string(kfd::errno_name(28)) == "ENOSPC");
}

TEST_CASE("GPU nodes are matched to render nodes by drm_render_minor and PCI ids") {
  kfd::topology t;
  kfd::node cpu;
  cpu.id = 0;
  kfd::node g1;
  g1.id = 1;
  g1.gpu_id = 48059;
  g1.properties.drm_render_minor = 128;
  g1.properties.vendor_id = 4098;   // 0x1002
  g1.properties.device_id = 29857;  // 0x74A1 (MI300X, spec §6.5 B)
  kfd::node g2 = g1;
  g2.id = 2;
  g2.gpu_id = 1234;
  g2.properties.drm_render_minor = 129;
  t.nodes = {cpu, g1, g2};
  std::vector<kfd::drm_node_info> drm = {{128, 0x1002, 0x74A1, "/dev/dri/renderD128"},
                                         {130, 0x1002, 0x744C, "/dev/dri/renderD130"}};
  auto m = kfd::match_render_nodes(t, drm);
  REQUIRE(m.size() == 2);
  CHECK(m[0].gpu_id == 48059);
  CHECK(m[0].path == "/dev/dri/renderD128");
  CHECK(m[0].listed);
  CHECK(m[0].ids_match);
  CHECK(m[1].minor == 129);
  CHECK_FALSE(m[1].listed);
  drm[0].device_id = 0x740F;
  CHECK_FALSE(kfd::match_render_nodes(t, drm)[0].ids_match);
  // Without GPUs libdrm lists nothing for us; the overload must still work.
  CHECK(kfd::match_render_nodes(t).size() == 2);
}

TEST_CASE("the real system-call plumbing, on /dev/null instead of /dev/kfd") {
  // /dev/null opens like /dev/kfd but knows no ioctl: every KFD request is ENOTTY (25), which
  // must come back unretried and named. mmap/munmap of anonymous memory are the real calls.
  auto dev = kfd::linux_device::try_open("/nonexistent/topology", "/dev/null");
  REQUIRE_MESSAGE(dev.has_value(), dev.detail());
  CHECK(dev->kfd_fd() >= 0);
  CHECK(dev->sysfs_root() == "/nonexistent/topology");
  unsigned v[2] = {0, 0};
  CHECK(aqueduct::abi::kfd::amdkfd_ioc_get_version == 0x80084B01ul);  // _IOR('K', 1, 8 bytes)
  CHECK(dev->ioctl(aqueduct::abi::kfd::amdkfd_ioc_get_version, v) == -25);

  auto res = dev->mmap(nullptr, 1 << 20, kfd::prot_none, kfd::map_private | kfd::map_anonymous | kfd::map_noreserve,
                       -1, 0);
  REQUIRE(res);
  auto rw = dev->mmap(res.addr, 4096, kfd::prot_read | kfd::prot_write,
                      kfd::map_private | kfd::map_anonymous | kfd::map_fixed, -1, 0);
  REQUIRE(rw);
  CHECK(rw.addr == res.addr);
  static_cast<char*>(rw.addr)[4095] = 7;
  CHECK(dev->munmap(res.addr, 1 << 20) == 0);
  CHECK(dev->munmap(reinterpret_cast<void*>(1), 4096) == -22);  // unaligned: EINVAL
  auto bad = dev->mmap(nullptr, 4096, kfd::prot_read, kfd::map_shared, 12345, 0);
  CHECK_FALSE(bad);
  CHECK(bad.error == 9);  // EBADF
  if (!std::filesystem::exists("/dev/dri/renderD250")) CHECK(dev->open_render_node(250) == -2);  // ENOENT

  // the driver refuses it with the request's name and errno
  auto drv = kfd::driver<kfd::linux_device>::try_open(std::move(*dev));
  REQUIRE_FALSE(drv.has_value());
  CHECK(drv.error() == errc::ioctl_failed);
  CHECK(drv.detail() == "AMDKFD_IOC_GET_VERSION failed: Inappropriate ioctl for device (ENOTTY, -25)");
}

}  // namespace AQ_UNITY_ID
