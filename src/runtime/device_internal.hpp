// SPDX-License-Identifier: BSD-2-Clause
// What the parts of the software device share and no user of Device needs.
// Device's members are defined along its responsibilities:
//   device.cc            configuration, open/close (sockets, engines), stats
//   device_resources.cc  PDs, regions, CQs, QPs, profiles: the verbs and the
//                        control calls that change every engine in lockstep
//   device_peers.cc      peers, port state (controller and carrier), the
//                        carrier watch, endpoint requests
//   device_engine.cc     the progress engine: its loop, an iteration, the
//                        application's turns, completion publication
//   device_rx.cc         the receive path: sockets to the core, ICRC checks
//   device_tx.cc         the transmit path: polling the core, GSO bursts,
//                        sendmmsg / io_uring, raw frames (SRv6, raw_send),
//                        the capture file
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "platform/sock_addr.hpp"
#include "platform/udp_socket.hpp"
#include "platform/uring_sender.hpp"
#include "util/time.hpp"
#include "wire/framing.hpp"

namespace mrc::rt::detail {

inline wire::IpAddress ip_of(const platform::SockAddr& a) {
  wire::IpAddress ip{};
  const auto b = a.address_bytes();
  std::copy(b.begin(), b.end(), ip.begin());
  return ip;
}

inline platform::SockAddr without_port(platform::SockAddr a) {
  a.set_port(0);
  return a;
}

constexpr size_t kTxBatch = 64;        ///< packets polled per engine iteration ...
/// ... plus what it takes to finish the EV burst in progress at the 64th
/// (a burst is at most a GSO datagram's kMaxIovPerDatagram / 3 segments).
constexpr size_t kTxSlots = kTxBatch + platform::UdpSocket::kMaxIovPerDatagram / 3;
static_assert(kTxSlots <= platform::UringSender::kMaxBatch, "a batch goes in one io_uring submission");
/// Bytes of one GSO super-packet's UDP payload we send (the kernel's limit
/// is 65,507 less the IP options; a round margin).
constexpr uint32_t kMaxGsoBytes = 65000;
/// How far ahead of its pace an engine may send on a plane (Device::open):
/// what its interface's queue holds of its traffic, enough to ride out a
/// scheduling delay of that long. Under the 5 ms an fq_codel qdisc lets a
/// queue stand (and the fabric tool's shapers hold); a queue that holds
/// less drops the excess, which comes back as ENOBUFS (kMinQueueBackoff).
constexpr Duration kPaceLead = Duration::ms(3);
constexpr uint64_t kPaceLeadMaxBytes = 4u << 20;
/// A plane whose egress queue dropped a packet waits this long before it is
/// offered again, doubled for each drop in a row up to the maximum: at
/// 300 Mbit/s a 4 KiB packet leaves in 110 us, so the first retries come
/// as the queue makes room, and a queue that stays full (a link slower
/// than the pace, or not paced at all) costs a few system calls a
/// millisecond instead of one per iteration.
constexpr Duration kMinQueueBackoff = Duration::us(50);
constexpr Duration kMaxQueueBackoff = Duration::ms(1);
/// epoll user data: the wake eventfd, and engine 0's link monitor (plane
/// sockets carry their plane number).
constexpr uint64_t kWakeTag = ~uint64_t{0};
constexpr uint64_t kLinkTag = ~uint64_t{0} - 1;

}  // namespace mrc::rt::detail
