/* Stand-in for <drm/drm.h> so that /usr/include/linux/kfd_ioctl.h (which includes it only for
 * the __u32/__u64 types) compiles without libdrm's include layout. Test-only. */
#pragma once
#include <linux/types.h>
