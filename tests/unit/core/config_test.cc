// SPDX-License-Identifier: BSD-2-Clause
// Tests for core/config.hpp: EndpointConfig, EvProfile and CcProfile
// validation. Every rejected field yields Errc::invalid_argument and a
// message that names the field; the defaults are valid.
#include "core/config.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/endpoint.hpp"

namespace mrc::core {
namespace {

struct BadEndpoint {
  const char* field;  ///< must appear in the message
  std::function<void(EndpointConfig&)> mutate;
};

TEST(EndpointConfigValidate, DefaultsAreValid) {
  EndpointConfig c;
  std::string why = "untouched";
  EXPECT_TRUE(c.validate(&why).ok());
  EXPECT_EQ(why, "untouched");
  EXPECT_TRUE(c.validate(nullptr).ok());
  c.ports.assign(32, PortConfig{});
  EXPECT_TRUE(c.validate(&why).ok());
  c.max_qps = 1u << 23;
  c.protocol.reorder_packets = 1;
  c.protocol.probe_interval_max = c.protocol.probe_interval;
  c.protocol.probe_resurrect_count = 255;
  c.protocol.reverse_evs_per_port = 64;
  c.protocol.ev_swap_marks = 0;
  EXPECT_TRUE(c.validate(&why).ok());
  c.protocol.ev_swap_marks = 255;
  EXPECT_TRUE(c.validate(&why).ok());
}

TEST(EndpointConfigValidate, RejectsEachBadFieldByName) {
  const std::vector<BadEndpoint> cases = {
      {"ports", [](EndpointConfig& c) { c.ports.clear(); }},
      {"ports", [](EndpointConfig& c) { c.ports.assign(33, PortConfig{}); }},
      {"ports[1].rate_bps", [](EndpointConfig& c) { c.ports = {PortConfig{}, PortConfig{0}}; }},
      {"max_qps", [](EndpointConfig& c) { c.max_qps = 0; }},
      {"max_qps", [](EndpointConfig& c) { c.max_qps = (1u << 23) + 1; }},
      {"max_send_wr", [](EndpointConfig& c) { c.max_send_wr = 0; }},
      {"max_recv_wr", [](EndpointConfig& c) { c.max_recv_wr = 0; }},
      {"max_mpr", [](EndpointConfig& c) { c.max_mpr = 0; }},
      {"sack_bytes_threshold", [](EndpointConfig& c) { c.protocol.sack_bytes_threshold = 0; }},
      {"sack_coalesce_delay", [](EndpointConfig& c) { c.protocol.sack_coalesce_delay = Duration{}; }},
      {"sack_coalesce_delay", [](EndpointConfig& c) { c.protocol.sack_coalesce_delay = Duration::ns(-1); }},
      {"sack_coalesce_max",
       [](EndpointConfig& c) { c.protocol.sack_coalesce_max = c.protocol.sack_coalesce_delay - Duration::ps(1); }},
      {"timestamp_tick", [](EndpointConfig& c) { c.protocol.timestamp_tick = Duration{}; }},
      {"base_rtt", [](EndpointConfig& c) { c.protocol.base_rtt = Duration{}; }},
      {"reorder_packets", [](EndpointConfig& c) { c.protocol.reorder_packets = 0; }},
      {"reorder_packets", [](EndpointConfig& c) { c.protocol.reorder_packets = 4; }},
      {"probe_interval", [](EndpointConfig& c) { c.protocol.probe_interval = Duration{}; }},
      {"probe_interval_max",
       [](EndpointConfig& c) { c.protocol.probe_interval_max = c.protocol.probe_interval - Duration::ps(1); }},
      {"probe_resurrect_count", [](EndpointConfig& c) { c.protocol.probe_resurrect_count = 0; }},
      {"probe_resurrect_count", [](EndpointConfig& c) { c.protocol.probe_resurrect_count = 256; }},
      {"ev_swap_marks", [](EndpointConfig& c) { c.protocol.ev_swap_marks = 256; }},
      {"gray_loss_vouches", [](EndpointConfig& c) { c.protocol.gray_loss_vouches = 0; }},
      {"gray_loss_vouches", [](EndpointConfig& c) { c.protocol.gray_loss_vouches = 256; }},
      {"reverse_probe_interval", [](EndpointConfig& c) { c.protocol.reverse_probe_interval = Duration{}; }},
      {"reverse_evs_per_port", [](EndpointConfig& c) { c.protocol.reverse_evs_per_port = 0; }},
      {"reverse_evs_per_port", [](EndpointConfig& c) { c.protocol.reverse_evs_per_port = 65; }},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EndpointConfig c;
    cases[i].mutate(c);
    std::string why;
    EXPECT_EQ(c.validate(&why), Errc::invalid_argument) << "case " << i << " (" << cases[i].field << ")";
    EXPECT_NE(why.find(cases[i].field), std::string::npos)
        << "case " << i << ": message '" << why << "' does not name " << cases[i].field;
    EXPECT_EQ(c.validate(nullptr), Errc::invalid_argument) << "case " << i;
  }
}

TEST(EndpointConfigValidate, CreateFailsOnBadConfig) {
  EndpointConfig c;
  c.max_mpr = 0;
  std::string why;
  auto ep = Endpoint::create(c, &why);
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.error(), Errc::invalid_argument);
  EXPECT_NE(why.find("max_mpr"), std::string::npos) << why;
  EXPECT_FALSE(Endpoint::create(c).ok());

  c = EndpointConfig{};
  c.ports.clear();
  EXPECT_EQ(Endpoint::create(c, &why).error(), Errc::invalid_argument);
  EXPECT_NE(why.find("ports"), std::string::npos) << why;

  EndpointConfig good;
  good.ports.assign(4, PortConfig{});
  auto ok = Endpoint::create(good, &why);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)->num_ports(), 4u);
  EXPECT_EQ((*ok)->local_port_mask(), 0xFu);
}

// ------------------------------------------------------------------ EvProfile

struct BadProfile {
  const char* field;
  uint32_t ports;
  std::function<void(EvProfile&)> mutate;
};

TEST(EvProfileValidate, DefaultsAreValid) {
  EvProfile p;
  std::string why;
  for (uint32_t ports : {1u, 2u, 8u, 32u}) EXPECT_TRUE(p.validate(ports, &why).ok()) << ports << ": " << why;
  // Boundaries that are still valid.
  p.ev_count = 4096;
  p.entropy_bits = 13;  // 8192 = 2 x 4096
  p.active_count = 4096;
  p.ev_min_active = 4096;
  EXPECT_TRUE(p.validate(2, &why).ok()) << why;
  p.entropy_bits = 32;
  EXPECT_TRUE(p.validate(2, &why).ok()) << why;
  p = EvProfile{};
  p.ev_min_active = 0;
  EXPECT_TRUE(p.validate(2, &why).ok()) << why;
  // EXP mode ignores ev_count / entropy_bits.
  EvProfile e;
  e.explicit_evs = {{0xFFFFFFFF, 0}, {1, 1}};
  e.ev_count = 0;
  e.entropy_bits = 0;
  e.active_count = 2;
  e.ev_min_active = 1;
  EXPECT_TRUE(e.validate(2, &why).ok()) << why;
}

TEST(EvProfileValidate, RejectsEachBadFieldByName) {
  const std::vector<BadProfile> cases = {
      {"entropy_bits", 2, [](EvProfile& p) { p.entropy_bits = 0; }},
      {"entropy_bits", 2, [](EvProfile& p) { p.entropy_bits = 33; }},
      {"ev_count", 4, [](EvProfile& p) { p.ev_count = 3; }},
      {"ev_count", 2, [](EvProfile& p) { p.ev_count = 4097; }},
      {"entropy_bits", 2, [](EvProfile& p) { p.entropy_bits = 8; }},  // 256 values < 2 x 256 EVs
      {"active_count", 2, [](EvProfile& p) { p.active_count = 0; }},
      {"active_count", 2, [](EvProfile& p) { p.active_count = p.ev_count + 1; }},
      {"ev_min_active", 2, [](EvProfile& p) { p.ev_min_active = p.active_count + 1; }},
      {"explicit_evs[1].port", 2,
       [](EvProfile& p) {
         p.explicit_evs = {{1, 0}, {2, 2}};
         p.active_count = 2;
         p.ev_min_active = 1;
       }},
      {"explicit_evs[2].value", 2,
       [](EvProfile& p) {
         p.explicit_evs = {{1, 0}, {2, 1}, {1, 1}};
         p.active_count = 2;
         p.ev_min_active = 1;
       }},
      {"explicit_evs", 2,
       [](EvProfile& p) {
         for (uint32_t i = 0; i < 4097; ++i) p.explicit_evs.push_back({i, static_cast<uint8_t>(i % 2)});
         p.active_count = 2;
         p.ev_min_active = 1;
       }},
      {"active_count", 2,
       [](EvProfile& p) {
         p.explicit_evs = {{1, 0}, {2, 1}};
         p.active_count = 3;  // > explicit entries, although <= ev_count
         p.ev_min_active = 1;
       }},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EvProfile p;
    cases[i].mutate(p);
    std::string why;
    EXPECT_EQ(p.validate(cases[i].ports, &why), Errc::invalid_argument) << "case " << i << " (" << cases[i].field << ")";
    EXPECT_NE(why.find(cases[i].field), std::string::npos)
        << "case " << i << ": message '" << why << "' does not name " << cases[i].field;
  }
  EvProfile p;
  EXPECT_EQ(p.validate(0, nullptr), Errc::invalid_argument);  // no ports
}

TEST(EvProfileValidate, EndpointRejectsBadProfileWithMessage) {
  auto ep = Endpoint::create(EndpointConfig{});
  ASSERT_TRUE(ep.ok());
  EvProfile p;
  p.active_count = 0;
  std::string why;
  EXPECT_EQ((*ep)->set_ev_profile(5, p, &why), Errc::invalid_argument);
  EXPECT_NE(why.find("active_count"), std::string::npos) << why;
  EXPECT_TRUE((*ep)->set_ev_profile(5, EvProfile{}, &why).ok());
}

// ------------------------------------------------------------------ CcProfile

TEST(CcProfileValidate, DefaultIsValidUnknownAlgorithmRejected) {
  CcProfile c;
  std::string why;
  EXPECT_TRUE(c.validate(&why).ok());
  EXPECT_EQ(c.algorithm, "uet-1.0-nscc");
  for (const char* bad : {"", "nscc-typo", "FIXED", "DCQCN"}) {
    c.algorithm = bad;
    EXPECT_EQ(c.validate(&why), Errc::invalid_argument) << bad;
    EXPECT_NE(why.find("algorithm"), std::string::npos) << why;
  }
  auto ep = Endpoint::create(EndpointConfig{});
  ASSERT_TRUE(ep.ok());
  why.clear();
  EXPECT_EQ((*ep)->set_cc_profile(3, c, &why), Errc::invalid_argument);
  EXPECT_NE(why.find("algorithm"), std::string::npos) << why;
  EXPECT_TRUE((*ep)->set_cc_profile(3, CcProfile{}, &why).ok());
}

}  // namespace
}  // namespace mrc::core
