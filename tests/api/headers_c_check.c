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
  struct mrc_ctl_ev ev;
  (void)qa;
  (void)da;
  (void)ev;
  if (mrc_query_version(&v) != 0) return -1;
  return (int)(v.current >> 24);
}
