// SPDX-License-Identifier: BSD-2-Clause
// Test support, header-only: the kernel's real SRv6 data plane in two
// network namespaces, for the software device's SRv6 mode
// (runtime/srv6_test.cc, api/ctl_srv6_test.cc).
//
// Namespace A (the sender, fd00:5::1) and namespace B (the receiver,
// fd00:5::2) are joined by a veth pair with jumbo frames (a 4 KiB payload
// plus MRC's and two IPv6 headers) and no checksum offload, so B verifies
// every checksum. A routes fc00::/16 to B. B plays a fabric's switches and
// its last hop: uSID End routes (flavor next-csid, locator fc00:0::/32,
// 16-bit uSIDs) for the first uSIDs the test names, which shift the
// carrier, and one End.DT6 route for uSID 0x00d0 that decapsulates into the
// local table. B's prerouting counts the packets to each first uSID and
// drops every plain MRC datagram (UDP to 4791): data reaches B only
// encapsulated. Needs root, ip (iproute2) and nft; skip() says why not.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <regex>
#include <string>
#include <vector>

namespace mrc::test_support {

/// Runs a shell command quietly; true on exit status 0.
inline bool sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

/// A command's standard output.
inline std::string capture(const std::string& cmd) {
  std::string out;
  if (FILE* f = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t k;
    while ((k = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, k);
    ::pclose(f);
  }
  return out;
}

/// Runs `fn` on the calling thread inside named namespace `ns` and returns
/// to the thread's own namespace. Sockets opened there stay in `ns` (a
/// device's engine threads do not matter). False if `ns` cannot be entered.
inline bool in_netns(const std::string& ns, const std::function<void()>& fn) {
  const int self = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  const int there = ::open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  bool ok = self >= 0 && there >= 0 && ::setns(there, CLONE_NEWNET) == 0;
  if (ok) {
    fn();
    ok = ::setns(self, CLONE_NEWNET) == 0;
  }
  if (self >= 0) ::close(self);
  if (there >= 0) ::close(there);
  return ok;
}

/// The carrier fc00:0000:<first>:00d0:: -- locator fc00:0000, a first uSID
/// that B shifts past, then B's decapsulating uSID -- as the 16 bytes of an
/// SRv6 destination address.
inline std::vector<uint8_t> srv6_test_carrier(uint16_t first_usid) {
  std::vector<uint8_t> a(16, 0);
  a[0] = 0xfc;
  a[4] = static_cast<uint8_t>(first_usid >> 8);
  a[5] = static_cast<uint8_t>(first_usid);
  a[7] = 0xd0;
  return a;
}

class Srv6Net {
 public:
  /// `first_usids`: the paths, one End route and one counter each.
  explicit Srv6Net(std::vector<uint16_t> first_usids)
      : a_("mrc-s6a-" + std::to_string(::getpid())), b_("mrc-s6b-" + std::to_string(::getpid())) {
    if (::geteuid() != 0) {
      skip_ = "needs root (network namespaces, seg6local routes)";
      return;
    }
    if (!sh("command -v ip") || !sh("command -v nft")) {
      skip_ = "needs ip (iproute2) and nft (nftables)";
      return;
    }
    cleanup();
    const std::string A = "ip -n " + a_ + " ", B = "ip -n " + b_ + " ";
    std::vector<std::string> steps = {
        "ip netns add " + a_,
        "ip netns add " + b_,
        A + "link set lo up",
        B + "link set lo up",
        "ip link add s6a netns " + a_ + " mtu 9000 type veth peer name s6b netns " + b_ + " mtu 9000",
        A + "addr add fd00:5::1/64 dev s6a nodad",
        B + "addr add fd00:5::2/64 dev s6b nodad",
        A + "link set s6a up",
        B + "link set s6b up",
        "ip netns exec " + b_ + " sysctl -qw net.ipv6.conf.all.forwarding=1",
        B + "-6 route add fc00:0:d0::/48 encap seg6local action End.DT6 table 255 dev s6b",
        A + "-6 route add fc00::/16 via fd00:5::2 dev s6a",
    };
    std::string nft = "add table ip6 mrc; add chain ip6 mrc pre { type filter hook prerouting priority -300; }; ";
    for (uint16_t u : first_usids) {
      char usid[8];
      std::snprintf(usid, sizeof usid, "%x", u);
      steps.push_back(B + "-6 route add fc00:0:" + usid +
                      "::/48 encap seg6local action End flavors next-csid lblen 32 nflen 16 dev s6b");
      nft += std::string("add rule ip6 mrc pre ip6 daddr fc00:0:") + usid + "::/48 counter; ";
    }
    nft += "add rule ip6 mrc pre meta l4proto udp udp dport 4791 counter drop";
    steps.push_back("ip netns exec " + b_ + " nft '" + nft + "'");
    for (const std::string& s : steps)
      if (!sh(s)) {
        skip_ = "the kernel or iproute2 refused: " + s;
        return;
      }
    // Checksums really verified on receive (veth would skip them).
    (void)sh("ip netns exec " + a_ + " ethtool -K s6a tx off rx off");
    (void)sh("ip netns exec " + b_ + " ethtool -K s6b tx off rx off");
  }
  ~Srv6Net() { cleanup(); }
  Srv6Net(const Srv6Net&) = delete;
  Srv6Net& operator=(const Srv6Net&) = delete;

  const std::string& skip() const { return skip_; }
  const std::string& a() const { return a_; }
  const std::string& b() const { return b_; }
  /// B's prerouting packet counters: one per first uSID, in order, then
  /// the dropped plain datagrams.
  std::vector<uint64_t> counters() const {
    const std::string out = capture("ip netns exec " + b_ + " nft list chain ip6 mrc pre");
    std::vector<uint64_t> v;
    const std::regex re("counter packets ([0-9]+)");
    for (auto it = std::sregex_iterator(out.begin(), out.end(), re); it != std::sregex_iterator(); ++it)
      v.push_back(std::stoull((*it)[1]));
    return v;
  }

 private:
  void cleanup() {
    (void)sh("ip netns del " + a_);
    (void)sh("ip netns del " + b_);
  }
  std::string a_, b_, skip_;
};

}  // namespace mrc::test_support
