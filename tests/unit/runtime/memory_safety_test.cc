// SPDX-License-Identifier: BSD-2-Clause
// The device and application memory it does not own: registration refuses
// memory that is not there, and a region the application unmaps while it
// is registered turns a peer's WRITE into a remote access error instead of
// a fault that kills the process. Two devices on loopback (127.0.70.x);
// bounded by wall-clock deadlines, verdicts from completions and counters.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "device_fixture.hpp"
#include "platform/memory_guard.hpp"
#include "runtime/device.hpp"

namespace mrc::rt {
namespace {

using fixture::Clock;

DeviceConfig config(const char* a, const char* b) {
  DeviceConfig c;
  c.planes = {a, b};
  c.udp_port = 24791;
  c.ev_port_base = 28000;
  c.evs_per_plane = 4;
  c.seed = 11;
  c.watch_carrier = false;
  return c;
}

TEST(DeviceMemory, RegistrationRefusesNullAndUnmappedRanges) {
  auto dev = fixture::open_device(config("127.0.70.1", "127.0.70.3"));
  ASSERT_TRUE(dev);
  const uint32_t rw = core::access::kLocalWrite | core::access::kRemoteWrite;
  EXPECT_EQ(dev->reg_mr(nullptr, 4096, rw, core::kDefaultPd).error(), Errc::invalid_argument);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* m = mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  auto* base = static_cast<uint8_t*>(m);
  // A hole in the middle: the range as a whole is not mapped.
  ASSERT_EQ(munmap(base + 2 * page, page), 0);
  EXPECT_EQ(dev->reg_mr(base, 4 * page, rw, core::kDefaultPd).error(), Errc::invalid_argument);
  EXPECT_EQ(dev->reg_mr(base + 2 * page + 16, 64, rw, core::kDefaultPd).error(), Errc::invalid_argument);
  // The mapped part, unaligned, is accepted.
  auto ok = dev->reg_mr(base + 100, 2 * page - 100, rw, core::kDefaultPd);
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(dev->dereg_mr(ok->lkey).ok());
  munmap(base, 2 * page);
  munmap(base + 3 * page, page);
}

TEST(DeviceMemory, AWriteIntoARegionUnmappedWhileRegisteredIsAnAccessErrorNotACrash) {
  if (!platform::install_fault_guard())
    GTEST_SKIP() << "another SIGSEGV handler (a sanitizer's) replaced the device's: the guard cannot be tested";
  fixture::Endpoint a, b;
  a.dev = fixture::open_device(config("127.0.71.1", "127.0.71.3"));
  b.dev = fixture::open_device(config("127.0.71.2", "127.0.71.4"));
  ASSERT_TRUE(a.dev && b.dev);
  fixture::create_resources(a, 1 << 16);
  // b's region is its own mapping, which the test unmaps while registered.
  b.cq = *b.dev->create_cq(1024);
  core::QpInit init;
  init.send_cq = init.recv_cq = b.cq->core_id();
  b.qpn = *b.dev->create_qp(init);
  const size_t bytes = 1 << 16;
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  auto reg = b.dev->reg_mr(m, bytes, core::access::kLocalWrite | core::access::kRemoteWrite, core::kDefaultPd);
  ASSERT_TRUE(reg.ok());
  const uint32_t psn_a = a.dev->random_psn(), psn_b = b.dev->random_psn();
  std::vector<platform::SockAddr> pa{a.dev->plane_address(0), a.dev->plane_address(1)};
  std::vector<platform::SockAddr> pb{b.dev->plane_address(0), b.dev->plane_address(1)};
  fixture::connect_qp(a, pb, b.qpn, psn_a, psn_b);
  fixture::connect_qp(b, pa, a.qpn, psn_b, psn_a);

  core::SendWr wr;
  wr.local_addr = reinterpret_cast<uint64_t>(a.mem.data());
  wr.lkey = a.mr.lkey;
  wr.length = 8192;
  wr.remote_addr = reinterpret_cast<uint64_t>(m);
  wr.rkey = reg->rkey;
  // First into mapped memory: it works.
  wr.wr_id = 1;
  std::memset(a.mem.data(), 0x5a, 8192);
  ASSERT_TRUE(a.dev->post_send(a.qpn, wr).ok());
  auto done = fixture::wait_until(a.cq, 1, Clock::now() + std::chrono::seconds(10), fixture::Idle::yield);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, core::WcStatus::success);
  EXPECT_EQ(static_cast<uint8_t*>(m)[8191], 0x5a);

  // Then the application unmaps it, still registered.
  ASSERT_EQ(munmap(m, bytes), 0);
  wr.wr_id = 2;
  ASSERT_TRUE(a.dev->post_send(a.qpn, wr).ok());
  done = fixture::wait_until(a.cq, 1, Clock::now() + std::chrono::seconds(10), fixture::Idle::yield);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 2u);
  EXPECT_EQ(done[0].status, core::WcStatus::rem_access_err);
  EXPECT_GE(b.dev->stats().core.rx_place_faults, 1u);
  EXPECT_GE(b.dev->stats().core.rx_access_errors, 1u);
}

}  // namespace
}  // namespace mrc::rt
