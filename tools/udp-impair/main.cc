// SPDX-License-Identifier: BSD-2-Clause
// mrc_udp_impair: a lossy UDP forwarder for end-to-end tests of the software
// device. See udp-impair/impair.hpp for the model (links, source-port
// preservation, impairment order).
//
//   mrc_udp_impair --link listen=127.0.0.2:4791,to=127.0.0.3:4791,from=127.0.0.4
//                  --link listen=127.0.0.4:4791,to=127.0.0.1:4791,from=127.0.0.2
//                  --fix-icrc --drop 0.01 --seed 7 --duration 30 --json impair.json
//
// Exits 0 after --duration seconds or on SIGINT/SIGTERM and prints counters
// per link; 2 on a bad flag; 1 if a socket cannot be opened.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <openmrc/version.h>

#include "udp-impair/impair.hpp"

using namespace mrc;
using namespace mrc::udp_impair;

namespace {

Forwarder* g_forwarder = nullptr;

extern "C" void on_signal(int) {
  if (g_forwarder != nullptr) g_forwarder->stop();  // one write() to an eventfd
}

nlohmann::json to_json(const LinkConfig& c, const platform::SockAddr& listen, const LinkStats& s) {
  return {{"name", c.name},
          {"listen", listen.to_string()},
          {"to", c.to.to_string()},
          {"from", c.from.host_string()},
          {"received", s.received},
          {"forwarded", s.forwarded},
          {"bytes_forwarded", s.bytes_forwarded},
          {"dropped_random", s.dropped_random},
          {"dropped_nth", s.dropped_nth},
          {"blackholed", s.blackholed},
          {"corrupted", s.corrupted},
          {"duplicated", s.duplicated},
          {"reordered", s.reordered},
          {"port_overflow", s.port_overflow},
          {"send_failed", s.send_failed},
          {"source_ports", s.source_ports},
          {"icrc_rewritten", s.icrc_rewritten}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mrc_udp_impair: lossy UDP forwarder that preserves the UDP source port (the MRC EV)"};
  app.set_version_flag("--version", "mrc_udp_impair (OpenMRC) " OPENMRC_VERSION_STRING);
  std::vector<std::string> link_specs, blackhole_specs;
  Impairments def;
  uint64_t reorder_us = static_cast<uint64_t>(def.reorder_hold_time.to_us());
  uint64_t seed = 1;
  size_t max_ports = 512;
  double duration_s = 0;
  std::string json_path;
  bool fix_icrc = false;
  app.add_option("--link", link_specs,
                 "listen=ADDR:PORT,to=ADDR:PORT,from=ADDR[,name=N][,drop=P][,drop_nth=N][,dup=P]"
                 "[,corrupt=P][,reorder=P][,reorder_depth=D][,reorder_us=T]; repeatable")
      ->required();
  app.add_option("--blackhole", blackhole_specs,
                 "link=I[,port=SRCPORT][,after_n=N][,after_ms=T][,until_ms=T]; repeatable");
  app.add_option("--drop", def.drop_probability, "default drop probability")->check(CLI::Range(0.0, 1.0));
  app.add_option("--drop-nth", def.drop_every_nth, "default: drop every Nth datagram of a link (0 = off)");
  app.add_option("--dup", def.duplicate_probability, "default duplicate probability")->check(CLI::Range(0.0, 1.0));
  app.add_option("--corrupt", def.corrupt_probability, "default probability to flip one payload byte")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--reorder", def.reorder_probability, "default probability to hold a datagram back")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--reorder-depth", def.reorder_hold_datagrams,
                 "release a held datagram after this many later ones")->check(CLI::Range(0u, 1000000u));
  app.add_option("--reorder-us", reorder_us, "or after this many microseconds")->check(CLI::Range(0u, 60000000u));
  app.add_option("--seed", seed, "PRNG seed (runs with the same seed and input make the same decisions)");
  app.add_option("--max-source-ports", max_ports, "outgoing sockets (source ports) per link")
      ->check(CLI::Range(size_t{1}, size_t{65535}));
  app.add_option("--duration", duration_s, "exit after this many seconds (0 = until SIGINT/SIGTERM)")
      ->check(CLI::Range(0.0, 1e7));
  app.add_flag("--fix-icrc", fix_icrc,
               "rewrite each MRC datagram's ICRC for the new addresses, as a NAT fixes a checksum "
               "(needed between two software devices; per link: fix_icrc=1)");
  app.add_option("--json", json_path, "write the counters as JSON to this file at exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help or the message naming the flag
    return rc == 0 ? 0 : 2;
  }
  def.reorder_hold_time = Duration::us(static_cast<int64_t>(reorder_us));
  if (auto e = def.validate(); !e.empty()) {
    fmt::print(stderr, "mrc_udp_impair: --{}\n", e);
    return 2;
  }

  ForwarderConfig cfg;
  cfg.seed = seed;
  cfg.max_source_ports = max_ports;
  for (const auto& s : link_specs) {
    auto p = parse_link(s, def);
    if (!p.link) {
      fmt::print(stderr, "mrc_udp_impair: --link: {}\n", p.error);
      return 2;
    }
    p.link->fix_icrc = p.link->fix_icrc || fix_icrc;
    cfg.links.push_back(*p.link);
  }
  for (const auto& s : blackhole_specs) {
    auto p = parse_blackhole(s);
    if (!p.blackhole) {
      fmt::print(stderr, "mrc_udp_impair: --blackhole: {}\n", p.error);
      return 2;
    }
    cfg.blackholes.push_back(*p.blackhole);
  }
  std::string error;
  auto fwd = Forwarder::create(cfg, error);
  if (!fwd) {
    fmt::print(stderr, "mrc_udp_impair: {}\n", error);
    return 1;
  }
  for (size_t i = 0; i < fwd->link_count(); ++i) {
    const auto& c = fwd->link_config(i);
    fmt::print("{}: {} -> {} from {}\n", c.name, fwd->listen_address(i).to_string(), c.to.to_string(),
               c.from.host_string());
  }
  std::fflush(stdout);
  g_forwarder = fwd.get();
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  const Duration d = duration_s > 0 ? Duration::us(static_cast<int64_t>(duration_s * 1e6)) : Duration::infinite();
  const Status st = fwd->run(d, error);
  g_forwarder = nullptr;
  if (!st) fmt::print(stderr, "mrc_udp_impair: {}\n", error);

  nlohmann::json out = nlohmann::json::array();
  fmt::print("{:<10} {:>10} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n", "link", "received",
             "forwarded", "drop", "nth", "bhole", "corrupt", "dup", "reorder", "overflow", "sendfail");
  for (size_t i = 0; i < fwd->link_count(); ++i) {
    const LinkStats s = fwd->stats(i);
    fmt::print("{:<10} {:>10} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n", fwd->link_config(i).name,
               s.received, s.forwarded, s.dropped_random, s.dropped_nth, s.blackholed, s.corrupted, s.duplicated,
               s.reordered, s.port_overflow, s.send_failed);
    out.push_back(to_json(fwd->link_config(i), fwd->listen_address(i), s));
  }
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << nlohmann::json{{"seed", seed}, {"links", out}}.dump(2) << "\n";
    if (!f) {
      fmt::print(stderr, "mrc_udp_impair: --json {}: cannot write\n", json_path);
      return 1;
    }
  }
  return st ? 0 : 1;
}
