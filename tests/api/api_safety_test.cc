// SPDX-License-Identifier: BSD-2-Clause
// The C API against careless callers: a plane count larger than the array
// it describes is refused before the array is read, a NULL or unmapped
// range is not registered, and destroying a QP, CQ or MR twice returns
// EINVAL instead of touching freed memory. Loopback address 127.0.72.1.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "mrc.h"
#include "openmrc/mrc_soft.h"
#include "soft_node.hpp"

namespace {

mrc_soft_device_attr attr_of(const char* const* planes, int n) {
  mrc_soft_device_attr a{};
  a.plane_addrs = planes;
  a.num_planes = n;
  a.udp_port = 24795;
  a.ev_port_base = 29000;
  a.evs_per_plane = 2;
  a.no_carrier_watch = 1;
  return a;
}

TEST(ApiSafety, APlaneCountBeyondThe32PlanesIsRefusedBeforeTheArrayIsRead) {
  // One entry: a check after the loop would read 99 pointers past it
  // (AddressSanitizer reports that read in the asan preset).
  const char* one[1] = {"127.0.72.1"};
  const mrc_soft_device_attr a = attr_of(one, 100);
  errno = 0;
  EXPECT_EQ(mrc_soft_open_device(&a), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST(ApiSafety, DoubleDestroyAndBadRegistrationsReturnEinval) {
  const char* planes[1] = {"127.0.72.1"};
  mrc::test_support::SoftNode n;
  n.open(attr_of(planes, 1), 1 << 16, 64);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());

  errno = 0;
  EXPECT_EQ(mrc_soft_reg_mr(n.pd, nullptr, 4096, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EINVAL);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* m = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  ASSERT_EQ(munmap(m, page), 0);
  errno = 0;
  EXPECT_EQ(mrc_soft_reg_mr(n.pd, m, page, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EINVAL);

  mrc_qp* qp = n.create_qp(16);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(mrc_destroy_qp(qp), 0);
  EXPECT_EQ(mrc_destroy_qp(qp), EINVAL);

  // A CQ in use is refused with EBUSY and stays usable; destroyed once,
  // a second destroy is EINVAL.
  mrc_cq* cq = mrc_create_cq(n.ctx, 16, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  mrc_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.pd = n.pd;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
  ia.cap.max_send_sge = 1;
  mrc_qp* q2 = mrc_create_qp(n.ctx, &ia);
  ASSERT_NE(q2, nullptr);
  EXPECT_EQ(mrc_destroy_cq(cq), EBUSY);
  EXPECT_EQ(mrc_destroy_qp(q2), 0);
  EXPECT_EQ(mrc_destroy_cq(cq), 0);
  EXPECT_EQ(mrc_destroy_cq(cq), EINVAL);

  std::vector<uint8_t> buf(4096);
  ibv_mr* mr = mrc_soft_reg_mr(n.pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(mrc_soft_dereg_mr(mr), 0);
  EXPECT_EQ(mrc_soft_dereg_mr(mr), EINVAL);
  n.close();
}

}  // namespace
