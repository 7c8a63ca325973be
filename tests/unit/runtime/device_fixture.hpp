// SPDX-License-Identifier: BSD-2-Clause
// What the runtime's device tests share (device_test.cc, impair_e2e_test.cc):
// opening a device (also inside a named network namespace), giving one end a
// CQ, a QP and a registered buffer, connecting its QP to the peer's, WRITE
// work requests between two buffers, and waiting for completions.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "platform/sock_addr.hpp"
#include "runtime/device.hpp"
#include "srv6_netns.hpp"
#include "util/prng.hpp"

namespace mrc::rt::fixture {

using Clock = std::chrono::steady_clock;

/// One device's end of a connection: its CQ, its QP and its registered buffer.
struct Endpoint {
  // The buffer is declared before the device so that it outlives it: the
  // engine threads may still be placing in-flight WRITEs until the device
  // is closed (members are destroyed in reverse order).
  std::vector<uint8_t> mem;
  core::MemoryRegion mr;
  std::unique_ptr<Device> dev;
  CompletionQueue* cq = nullptr;
  uint32_t qpn = 0;
};

/// Opens a device on `c`; a failure is a test failure, and NULL.
inline std::unique_ptr<Device> open_device(const DeviceConfig& c) {
  std::string why;
  auto d = Device::open(c, &why);
  if (!d) {
    ADD_FAILURE() << "cannot open the device: " << why;
    return nullptr;
  }
  return std::move(*d);
}

/// Opens a device on `c` inside named network namespace `ns` (its sockets
/// stay there; test_support::in_netns); a failure is a test failure, and NULL.
inline std::unique_ptr<Device> open_device_in(const std::string& ns, const DeviceConfig& c) {
  std::unique_ptr<Device> d;
  EXPECT_TRUE(test_support::in_netns(ns, [&] { d = open_device(c); })) << "cannot enter namespace " << ns;
  return d;
}

/// Gives `s` (its device open) a CQ of 1024 entries, a QP on it and a zeroed
/// buffer of `bytes` registered for local and remote write.
inline void create_resources(Endpoint& s, size_t bytes) {
  s.cq = *s.dev->create_cq(1024);
  core::QpInit init;
  init.send_cq = init.recv_cq = s.cq->core_id();
  s.qpn = *s.dev->create_qp(init);
  s.mem.assign(bytes, 0);
  s.mr = *s.dev->reg_mr(s.mem.data(), s.mem.size(), core::access::kLocalWrite | core::access::kRemoteWrite,
                        core::kDefaultPd);
}

/// Declares the peer (its planes `peer_planes`, the first its address) and
/// takes `me`'s QP through INIT, RTR (to `peer_qpn`) and RTS; `timeout`, when
/// given, replaces the default ACK timeout; `secure`, when given, makes it a
/// secure QP with those keys.
inline void connect_qp(Endpoint& me, const std::vector<platform::SockAddr>& peer_planes, uint32_t peer_qpn,
                       uint32_t my_psn, uint32_t peer_psn, std::optional<uint8_t> timeout = std::nullopt,
                       const core::QpSecure* secure = nullptr) {
  using namespace core::qp_attr;
  ASSERT_TRUE(me.dev->set_peer(peer_planes[0], peer_planes).ok());
  core::QpAttr at;
  at.state = core::QpState::init;
  ASSERT_TRUE(me.dev->modify_qp(me.qpn, at, kState).ok());
  at.state = core::QpState::rtr;
  at.dest_qpn = peer_qpn;
  at.rq_psn = peer_psn;
  at.peer = *me.dev->peer_id(peer_planes[0]);
  at.path_mtu = 4096;
  if (secure) at.secure = *secure;
  ASSERT_TRUE(me.dev->modify_qp(me.qpn, at, kState | kDestQpn | kRqPsn | kPeer | kPathMtu | kMaxWimmDest | kMprDest |
                                                (secure ? kSecure : 0u))
                  .ok());
  at.state = core::QpState::rts;
  at.sq_psn = my_psn;
  if (timeout) at.timeout = *timeout;
  ASSERT_TRUE(me.dev->modify_qp(me.qpn, at, kState | kSqPsn | kMaxWimm | kMpr | kRetryCnt | kTimeout).ok());
}

/// What wait_until does when a poll finds nothing.
enum class Idle { spin, yield };

/// Polls `cq` until `n` completions arrived or `deadline` passed.
inline std::vector<core::WorkCompletion> wait_until(CompletionQueue* cq, size_t n, Clock::time_point deadline,
                                                    Idle idle) {
  std::vector<core::WorkCompletion> out;
  core::WorkCompletion wc[16];
  while (out.size() < n && Clock::now() < deadline) {
    const size_t k = cq->poll(wc);
    out.insert(out.end(), wc, wc + k);
    if (k == 0 && idle == Idle::yield) std::this_thread::yield();
  }
  return out;
}

/// Fills `v` with pseudo-random bytes of `seed`.
inline void fill(std::vector<uint8_t>& v, uint64_t seed) {
  Prng r(seed);
  for (auto& x : v) x = static_cast<uint8_t>(r.next_u64());
}

/// An RDMA WRITE of `len` bytes at offset `off` of `from`'s buffer to the
/// same offset of `to`'s.
inline core::SendWr write(const Endpoint& from, const Endpoint& to, uint64_t off, uint32_t len, uint64_t id) {
  core::SendWr wr;
  wr.wr_id = id;
  wr.local_addr = reinterpret_cast<uint64_t>(from.mem.data()) + off;
  wr.lkey = from.mr.lkey;
  wr.length = len;
  wr.remote_addr = reinterpret_cast<uint64_t>(to.mem.data()) + off;
  wr.rkey = to.mr.rkey;
  return wr;
}

}  // namespace mrc::rt::fixture
