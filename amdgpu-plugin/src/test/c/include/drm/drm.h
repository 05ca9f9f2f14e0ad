/* Stand-in for <drm/drm.h>: Debian's linux-libc-dev ships linux/kfd_ioctl.h but not the drm/ headers it
 * includes. kfd_ioctl.h only needs the __u32/__u64 types from it. */
#ifndef CRIUGPU_DRM_STANDIN_H
#define CRIUGPU_DRM_STANDIN_H
#include <linux/types.h>
#endif
