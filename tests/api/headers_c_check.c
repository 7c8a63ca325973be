/* SPDX-License-Identifier: BSD-2-Clause */
/* Compiled as C: the public headers must be valid C (no C++ in them). */
#include "mrc.h"
#include "mrc_ctl.h"
#include "openmrc/mrc_soft.h"

int mrc_c_header_check(void);

int mrc_c_header_check(void) {
  struct mrc_version v;
  struct mrc_qp_attr qa;
  struct mrc_soft_device_attr da;
  struct mrc_ctl_ev ev = MRC_CTL_EV_UNPOPULATED;
  struct mrc_ctl_attr ca;
  (void)qa;
  (void)da;
  (void)ca;
  if (ev.port != 0 || ev.val[0] != 0) return -1;
  if (mrc_query_version(&v) != 0) return -1;
  return (int)(v.current >> 24);
}
