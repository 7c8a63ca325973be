// SPDX-License-Identifier: BSD-2-Clause
// mrcctl: a command-line controller over <mrc_ctl.h>.
//
// The software device lives inside a process (there is no kernel device to
// attach to), so mrcctl opens its own device with the addresses it is
// given and controls that one: what it configures lasts as long as the
// mrcctl process. Commands given in one invocation run in order on the same
// device ("apply f.toml port 2 disable show watch --seconds 10"), which is
// how a configuration is applied and then observed, and how a device is
// kept alive to answer other devices' probes.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <openmrc/version.h>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "mrc.h"
#include "mrc_ctl.h"
#include "openmrc/mrc_soft.h"
#include "mrcctl/ctl_apply.hpp"
#include "mrcctl/ctl_file.hpp"

namespace {

using json = nlohmann::json;
using mrcctl::CtlFile;

constexpr uint64_t kMaxProfileId = 16;

struct Options {
  std::vector<std::string> planes;
  uint16_t udp_port = 4791;
  std::string ev_mode = "udp";
  uint32_t evs = 16;
  uint32_t engines = 1;
  uint64_t seed = 0;
  bool carrier_watch = true;
  std::vector<std::string> peers;
  bool json = false;
};

/// A failed controller call: the message and the exit code.
struct Failure {
  std::string msg;
  int code = 1;
};

std::string errno_text(int e) { return fmt::format("{} ({})", std::strerror(e), e); }

const char* state_name(uint32_t s) {
  switch (s) {
    case MRC_CTL_PROFILE_INIT: return "init";
    case MRC_CTL_PROFILE_OFFLINE: return "offline";
    case MRC_CTL_PROFILE_ONLINE: return "online";
    default: return "?";
  }
}

const char* ev_state_name(uint32_t s) {
  switch (s) {
    case MRC_CTL_EV_GOOD: return "good";
    case MRC_CTL_EV_ASSUMED_BAD: return "assumed_bad";
    case MRC_CTL_EV_DENIED: return "denied";
    default: return "unpopulated";
  }
}

uint32_t ev_state_of(const mrc_ctl_ev_state& s) {
  uint32_t v;
  std::memcpy(&v, &s, sizeof v);
  return v;
}

/// The device mrcctl controls, and the commands' shared state.
class Ctl {
 public:
  ~Ctl() {
    if (evq_) (void)mrc_destroy_cq(evq_);
    if (ctx_) (void)mrc_destroy_context(ctx_);
    if (dev_) (void)mrc_soft_close_device(dev_);
  }

  std::optional<Failure> open(const Options& o) {
    std::vector<const char*> addrs;
    for (const auto& p : o.planes) addrs.push_back(p.c_str());
    mrc_soft_device_attr a{};
    a.plane_addrs = addrs.data();
    a.num_planes = static_cast<int>(addrs.size());
    a.udp_port = o.udp_port;
    a.ev_mode = o.ev_mode == "stev" ? MRC_SOFT_EV_STEV : o.ev_mode == "srv6" ? MRC_SOFT_EV_SRV6 : MRC_SOFT_EV_UDP;
    a.evs_per_plane = o.evs;
    a.num_engines = o.engines;
    a.seed = o.seed;
    a.no_carrier_watch = o.carrier_watch ? 0 : 1;
    dev_ = mrc_soft_open_device(&a);
    if (!dev_) return Failure{"cannot open the software device: " + errno_text(errno)};
    ctx_ = mrc_create_context(dev_, nullptr);
    if (!ctx_) return Failure{"mrc_create_context: " + errno_text(errno)};
    planes_ = static_cast<uint32_t>(o.planes.size());
    for (const std::string& p : o.peers) {
      // ADDR[/ADDR...]: the peer's plane addresses, plane 0 first.
      std::vector<ibv_gid> gids;
      size_t at = 0;
      while (at <= p.size()) {
        const size_t end = std::min(p.find('/', at), p.size());
        ibv_gid g;
        if (mrc_soft_str_to_gid(p.substr(at, end - at).c_str(), &g) != 0)
          return Failure{fmt::format("--peer {}: not an address list ADDR[/ADDR...]", p), 2};
        gids.push_back(g);
        at = end + 1;
      }
      if (gids.size() == 1) gids.resize(planes_, gids[0]);
      if (const int rc = mrc_soft_set_peer(dev_, &gids[0], gids.data(), static_cast<int>(gids.size())))
        return Failure{fmt::format("--peer {}: {} (give one address per plane)", p, errno_text(rc)), 2};
    }
    return std::nullopt;
  }

  // ---------------------------------------------------------------- apply
  std::optional<Failure> apply(const CtlFile& f, json& out) {
    std::string why;
    mrcctl::AppliedIds ids;
    const bool ok = mrcctl::apply_ctl_file(ctx_, f, why, &ids);
    for (uint64_t id : ids.formats) out["formats"].push_back(id);
    for (uint64_t id : ids.ev_profiles) out["ev_profiles"].push_back(id);
    for (uint64_t id : ids.cc_profiles) out["cc_profiles"].push_back(id);
    if (!ok) return Failure{why};
    return std::nullopt;
  }

  // ---------------------------------------------------------------- show
  std::optional<Failure> show(json& out) {
    out["ports"] = json::array();
    for (uint32_t p = 1; p <= planes_; ++p) {
      mrc_ctl_port_attr a{};
      if (int rc = mrc_ctl_query_port(ctx_, static_cast<uint8_t>(p), &a))
        return Failure{fmt::format("port {}: {}", p, errno_text(rc))};
      out["ports"].push_back({{"port", p}, {"state", a.state == IBV_PORT_ACTIVE ? "active" : "down"}});
    }
    out["formats"] = json::array();
    out["ev_profiles"] = json::array();
    out["cc_profiles"] = json::array();
    for (uint64_t id = 1; id <= kMaxProfileId; ++id) {
      mrc_ctl_ev_fmt_profile_attr f{};
      if (mrc_ctl_query_ev_fmt_profile(ctx_, id, &f, MRC_CTL_EV_FMT_PROFILE_STATE | MRC_CTL_EV_FMT_PROFILE_MODE) == 0 &&
          f.profile_state != MRC_CTL_PROFILE_INIT) {
        json j{{"id", id}, {"state", state_name(f.profile_state)}, {"mode", fmt_mode_name(f.ev_fmt_mode)}};
        std::vector<mrc_ctl_ev_fmt_field> fields(16);
        int count = 0, prefix = 0;
        f.ev_fmt_op.op = MRC_CTL_EV_FMT_OP_QUERY_FIELDS;
        f.ev_fmt_op.query_fmt_fields = {fields.data(), 16, &count, &prefix};
        if (mrc_ctl_query_ev_fmt_profile(ctx_, id, &f, MRC_CTL_EV_FMT_PROFILE_OP) == 0) {
          j["prefix"] = prefix;
          j["fields"] = json::array();
          for (int i = 0; i < count; ++i)
            j["fields"].push_back({{"width", fields[i].width}, {"min", fields[i].min_val}, {"max", fields[i].max_val}});
        }
        out["formats"].push_back(j);
      }
      if (auto j = show_ev_profile(id)) out["ev_profiles"].push_back(*j);
      mrc_ctl_cc_profile_attr c{};
      if (mrc_ctl_query_cc_profile(ctx_, id, &c, MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_ALGORITHM) == 0 &&
          c.profile_state != MRC_CTL_PROFILE_INIT)
        out["cc_profiles"].push_back({{"id", id},
                                      {"state", state_name(c.profile_state)},
                                      {"algorithm", c.cc_algorithm ? c.cc_algorithm : "none"}});
    }
    return std::nullopt;
  }

  // ---------------------------------------------------------------- deny / allow
  std::optional<Failure> set_ev_state(uint64_t profile, const std::vector<std::pair<uint8_t, uint64_t>>& evs,
                                      bool deny, json& out) {
    // EV states change only in a profile that is ONLINE: say which step is
    // missing rather than the controller's bare EPERM.
    mrc_ctl_ev_profile_attr st{};
    if (mrc_ctl_query_ev_profile(ctx_, profile, &st, MRC_CTL_EV_PROFILE_STATE) != 0)
      return Failure{fmt::format("ev_profile {}: no such EV profile on this device (ids are 1..16); define it in a "
                                 "file and `apply` it first (see examples/ctl.toml)",
                                 profile),
                     2};
    if (st.profile_state != MRC_CTL_PROFILE_ONLINE)
      return Failure{fmt::format("ev_profile {} is {}, not online: EVs can be denied or allowed only in an online "
                                 "profile; define it with state = \"online\" in a file and `apply` it before `{}` "
                                 "(see examples/ctl.toml)",
                                 profile, state_name(st.profile_state), deny ? "deny" : "allow")};
    for (const auto& [port, value] : evs) {
      mrc_ctl_ev_profile_attr a{};
      a.ev_op.op = MRC_CTL_EV_OP_MODIFY_EV_STATE;
      a.ev_op.modify_ev_state.ev = ev_of(port, value);
      a.ev_op.modify_ev_state.state = deny ? MRC_CTL_EV_DENIED : MRC_CTL_EV_GOOD;
      if (int rc = mrc_ctl_modify_ev_profile(ctx_, profile, &a, MRC_CTL_EV_PROFILE_EV_OP)) {
        if (rc == ENOENT)
          return Failure{fmt::format("ev_profile {}: EV {}:{} is not in the profile (PORT:VALUE, port 1-based; "
                                     "`show` lists its EVs)",
                                     profile, port, value)};
        return Failure{fmt::format("ev_profile {}: EV {}:{}: {}", profile, port, value, errno_text(rc))};
      }
      out.push_back({{"profile", profile}, {"port", port}, {"value", value}, {"state", deny ? "denied" : "good"}});
    }
    return std::nullopt;
  }

  // ---------------------------------------------------------------- watch
  /// Creates the EV event queue; events of EV state changes from then on
  /// are kept for watch() (main calls it before the first command when a
  /// watch follows, so the watch sees what the commands before it caused).
  std::optional<Failure> open_events() {
    if (evq_) return std::nullopt;
    evq_ = mrc_ctl_create_ev_event_cq(ctx_, 4096, nullptr, nullptr, 0);
    if (!evq_) return Failure{"mrc_ctl_create_ev_event_cq: " + errno_text(errno)};
    return std::nullopt;
  }

  /// Prints EV events for `seconds`, or until `count` events (0: no limit)
  /// have come; fewer than `count` in that time is a failure (exit 1).
  std::optional<Failure> watch(double seconds, uint64_t count, bool json_out, json& out) {
    if (auto f = open_events()) return f;
    out = json::array();
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    mrc_ctl_ev_event evs[64];
    while (std::chrono::steady_clock::now() < end && (count == 0 || out.size() < count)) {
      const int want = count == 0 ? 64 : static_cast<int>(std::min<uint64_t>(64, count - out.size()));
      const int n = mrc_ctl_poll_ev_event(evq_, want, evs);
      if (n < 0) return Failure{"mrc_ctl_poll_ev_event: " + errno_text(-n)};
      for (int i = 0; i < n; ++i) {
        // OCP's event names the EV; its state is read now (it may have
        // changed again since the event).
        json j{{"profile", evs[i].profile_id},
               {"port", evs[i].ev.port},
               {"value", value_of(evs[i].ev)},
               {"state", ev_state_name(state_now(evs[i].profile_id, evs[i].ev))},
               {"drop_count", evs[i].drop_count}};
        if (!json_out) {
          fmt::print("event profile {} EV {}:{} {} (dropped before: {})\n", evs[i].profile_id, evs[i].ev.port,
                     j["value"].get<uint64_t>(), j["state"].get<std::string>(), evs[i].drop_count);
          std::fflush(stdout);
        }
        out.push_back(j);
      }
      if (n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (count != 0 && out.size() < count)
      return Failure{fmt::format("watch: {} of {} events within {} s", out.size(), count, seconds)};
    return std::nullopt;
  }

  // ---------------------------------------------------------------- probe
  std::optional<Failure> probe(const std::string& dest, std::vector<std::pair<uint8_t, uint32_t>> evs,
                               uint64_t timeout_ms, const Options& o, json& out) {
    ibv_gid dgid;
    if (mrc_soft_str_to_gid(dest.c_str(), &dgid) != 0) return Failure{fmt::format("probe {}: not an address", dest), 2};
    if (evs.empty())
      for (uint32_t p = 0; p < planes_; ++p)
        for (uint32_t i = 0; i < o.evs; ++i)
          evs.emplace_back(static_cast<uint8_t>(p + 1), 49152 + p * o.evs + i);
    std::vector<mrc_ctl_ev_probe_req> reqs;
    for (const auto& [port, ev] : evs) {
      mrc_ctl_ev_probe_req r{};
      r.probe_id = next_req_id_++;
      r.dgid = dgid;
      r.req_ev = ev_of(port, ev);
      reqs.push_back(r);
    }
    std::vector<mrc_ctl_ev_probe_rsp> rsps(reqs.size());
    int n = 0;
    // OCP's timeout is 32-bit nanoseconds (4.29 s at most).
    const auto timeout_ns = static_cast<uint32_t>(std::min<uint64_t>(timeout_ms * 1'000'000ull, UINT32_MAX));
    const int rc = mrc_ctl_probe_ev(ctx_, 0, reqs.data(), static_cast<int>(reqs.size()), timeout_ns, rsps.data(), &n);
    if (rc != 0 && rc != ETIMEDOUT) return Failure{fmt::format("probe {}: {}", dest, errno_text(rc))};
    out = json::array();
    for (const mrc_ctl_ev_probe_req& r : reqs) {
      const uint64_t ev = value_of(r.req_ev);
      json j{{"port", r.req_ev.port}, {"ev", ev}};
      const mrc_ctl_ev_probe_rsp* a = nullptr;
      for (int i = 0; i < n; ++i)
        if (rsps[i].probe_id == r.probe_id) a = &rsps[i];
      if (a) j["rtt_ns"] = a->rtt;
      else j["rtt_ns"] = nullptr;
      if (!o.json)
        fmt::print("{} port {} EV {}: {}\n", dest, r.req_ev.port, ev,
                   a ? fmt::format("{:.1f} us", static_cast<double>(a->rtt) / 1e3) : std::string("no answer"));
      out.push_back(j);
    }
    if (rc == ETIMEDOUT) return Failure{fmt::format("probe {}: {} of {} answered within {} ms", dest, n, reqs.size(),
                                                    timeout_ms)};
    return std::nullopt;
  }

  // ---------------------------------------------------------------- port
  std::optional<Failure> port(uint32_t num, bool enable, json& out) {
    mrc_ctl_port_attr a{};
    a.admin_state = enable ? MRC_CTL_PORT_ADMIN_ENABLED : MRC_CTL_PORT_ADMIN_DISABLED;
    if (num < 1 || num > planes_) return Failure{fmt::format("port {}: the device has ports 1..{}", num, planes_), 2};
    if (int rc = mrc_ctl_modify_port(ctx_, static_cast<uint8_t>(num), &a, MRC_CTL_PORT_ADMIN_STATE))
      return Failure{fmt::format("port {}: {}", num, errno_text(rc))};
    (void)mrc_ctl_query_port(ctx_, static_cast<uint8_t>(num), &a);
    out = {{"port", num}, {"state", a.state == IBV_PORT_ACTIVE ? "active" : "down"}};
    return std::nullopt;
  }

 private:
  static const char* fmt_mode_name(uint32_t m) {
    return m == MRC_CTL_EV_FMT_MODE_GENERATED ? "generated" : m == MRC_CTL_EV_FMT_MODE_SRV6_GENERATED ? "srv6" : "?";
  }

  /// An EV of the UDP source port kind: the value in the first 4 bytes, a
  /// host-order uint32_t (mrc_ctl.h).
  static mrc_ctl_ev ev_of(uint8_t port, uint64_t value) {
    mrc_ctl_ev e{};
    const auto v = static_cast<uint32_t>(value);
    std::memcpy(e.val, &v, sizeof v);
    e.port = port;
    return e;
  }
  static uint64_t value_of(const mrc_ctl_ev& e) {
    uint32_t v;
    std::memcpy(&v, e.val, sizeof v);
    return v;
  }
  /// An SRv6 EV's address as text.
  static std::string address_of(const mrc_ctl_ev& e) {
    ibv_gid g{};
    std::memcpy(g.raw, e.val, 16);
    char text[64] = "?";
    (void)mrc_soft_gid_to_str(&g, text, sizeof text);
    return text;
  }

  uint32_t state_now(uint64_t profile, const mrc_ctl_ev& ev) {
    mrc_ctl_ev_profile_attr q{};
    q.ev_op.op = MRC_CTL_EV_OP_QUERY_EV_STATE;
    q.ev_op.query_ev_state.ev = ev;
    if (mrc_ctl_query_ev_profile(ctx_, profile, &q, MRC_CTL_EV_PROFILE_EV_OP) != 0) return MRC_CTL_EV_UNKNOWN;
    return ev_state_of(q.ev_op.query_ev_state.state);
  }

  std::optional<json> show_ev_profile(uint64_t id) {
    mrc_ctl_ev_profile_attr a{};
    const uint32_t m = MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE | MRC_CTL_EV_PROFILE_FMT_ID |
                       MRC_CTL_EV_PROFILE_COUNT | MRC_CTL_EV_PROFILE_MIN_ACTIVE | MRC_CTL_EV_PROFILE_EVENT_MASK;
    if (mrc_ctl_query_ev_profile(ctx_, id, &a, m) != 0 || a.profile_state == MRC_CTL_PROFILE_INIT) return std::nullopt;
    const bool srv6 = a.ev_mode == MRC_CTL_EV_MODE_SRV6_GENERATED;
    json j{{"id", id},
           {"state", state_name(a.profile_state)},
           {"mode", a.ev_mode == MRC_CTL_EV_MODE_AUTO              ? "auto"
                    : a.ev_mode == MRC_CTL_EV_MODE_SRV6_GENERATED ? "gen"
                                                                  : "exp"},
           {"format", a.ev_fmt_profile_id},
           {"count", a.ev_count},
           {"min_active", a.ev_min_active}};
    std::vector<mrc_ctl_ev> evs(a.ev_count);
    mrc_ctl_ev_profile_attr q{};
    q.ev_op.op = MRC_CTL_EV_OP_QUERY_EV_ARRAY;
    q.ev_op.query_ev_array.ev = evs.data();
    j["evs"] = json::array();
    if (a.ev_count > 0 && mrc_ctl_query_ev_profile(ctx_, id, &q, MRC_CTL_EV_PROFILE_EV_OP) == 0)
      for (const mrc_ctl_ev& e : evs) {
        json x{{"port", e.port}, {"state", ev_state_name(e.port ? state_now(id, e) : MRC_CTL_EV_UNKNOWN)}};
        if (srv6) x["address"] = address_of(e);
        else x["value"] = value_of(e);
        j["evs"].push_back(x);
      }
    return j;
  }

  ibv_context* dev_ = nullptr;
  mrc_context* ctx_ = nullptr;
  mrc_cq* evq_ = nullptr;
  uint32_t planes_ = 0;
  uint16_t next_req_id_ = 1;
};

void print_show(const json& s) {
  for (const auto& p : s["ports"]) fmt::print("port {}: {}\n", p["port"].get<int>(), p["state"].get<std::string>());
  for (const auto& f : s["formats"])
    fmt::print("format {}: {} {} fields {}\n", f["id"].get<uint64_t>(), f["state"].get<std::string>(),
               f["mode"].get<std::string>(), f.value("fields", json::array()).dump());
  for (const auto& e : s["ev_profiles"]) {
    fmt::print("ev_profile {}: {} {} format {} count {} min_active {}\n", e["id"].get<uint64_t>(),
               e["state"].get<std::string>(), e["mode"].get<std::string>(), e["format"].get<uint64_t>(),
               e["count"].get<uint32_t>(), e["min_active"].get<uint32_t>());
    for (const auto& v : e["evs"])
      fmt::print("  EV {}:{} {}\n", v["port"].get<int>(), v["value"].get<uint64_t>(), v["state"].get<std::string>());
  }
  for (const auto& c : s["cc_profiles"])
    fmt::print("cc_profile {}: {} {}\n", c["id"].get<uint64_t>(), c["state"].get<std::string>(),
               c["algorithm"].get<std::string>());
}

/// PORT:VALUE -> (port, value); false if malformed.
bool parse_ev(const std::string& s, uint8_t& port, uint64_t& value) {
  const size_t colon = s.find(':');
  if (colon == std::string::npos) return false;
  try {
    size_t used = 0;
    const unsigned long p = std::stoul(s.substr(0, colon), &used);
    if (used != colon || p < 1 || p > 32) return false;
    const std::string v = s.substr(colon + 1);
    value = std::stoull(v, &used, 0);
    if (used != v.size()) return false;
    port = static_cast<uint8_t>(p);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

constexpr const char* kAbout =
    "mrcctl: the MRC controller (mrc_ctl.h) for an OpenMRC software device.\n"
    "The software device lives inside a process: there is no kernel device to attach to, so mrcctl\n"
    "opens its own device on the --planes addresses (device flags as mrc_write_bw takes them) and\n"
    "controls that device for as long as mrcctl runs. Give several commands in one invocation to\n"
    "apply a configuration and then observe it; they run in order on the same device, e.g.\n"
    "  mrcctl --planes 10.0.0.1,10.1.0.1 apply ctl.toml port 2 disable show watch --seconds 30\n"
    "A device answers probes only from devices it knows: declare them with --peer.";

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{kAbout, "mrcctl"};
  app.get_formatter()->column_width(34);
  // One value each (a list is ADDR,ADDR): a command after it is a command.
  app.add_option("--planes", o.planes, "local plane addresses ADDR[,ADDR...] (1..32)")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->required();
  app.add_option("--udp-port", o.udp_port, "UDP port MRC is received on")->default_val(4791)->check(CLI::Range(1, 65535));
  app.add_option("--ev-mode", o.ev_mode, "where the EV goes: udp, stev or srv6 (SRv6 profiles; needs CAP_NET_RAW)")
      ->default_val("udp")
      ->check(CLI::IsMember({"udp", "stev", "srv6"}));
  app.add_option("--evs", o.evs, "EVs (source ports) per plane")->default_val(16)->check(CLI::Range(1, 1024));
  app.add_option("--engines", o.engines, "progress engine threads of the device")->default_val(1)->check(CLI::Range(1, 16));
  app.add_option("--seed", o.seed, "seed of the protocol's random choices (0 = random)");
  app.add_flag("!--no-carrier-watch", o.carrier_watch,
               "ports follow the controller only, not their interfaces' carrier (default: a port whose link is "
               "down reads down)");
  app.add_option("--peer", o.peers, "a peer device: ADDR (every plane) or ADDR/ADDR/... one per plane; repeatable")
      ->allow_extra_args(false);
  app.set_version_flag("--version", "mrcctl (OpenMRC) " OPENMRC_VERSION_STRING);
  app.add_flag("--json", o.json, "print one JSON object with every command's result instead of text");
  // Commands run in order; device flags and --json may come anywhere, after
  // a command too (the subcommands pass what they do not know to the app).
  // What nothing takes is reported below by name, as is a missing command.
  app.require_subcommand(0, 0);
  app.fallthrough();
  app.allow_extras();

  std::string file;
  auto* apply = app.add_subcommand("apply", "configure the EV format, EV and CC profiles a TOML file describes");
  apply->add_option("file", file, "the TOML file")->required();
  auto* show = app.add_subcommand("show", "print the ports, profiles and EV arrays with their states");
  uint64_t deny_profile = 0, allow_profile = 0;
  std::vector<std::string> deny_evs, allow_evs;
  auto* deny = app.add_subcommand("deny", "take EVs of an EV profile out of service (DENIED)");
  deny->add_option("profile", deny_profile, "EV profile id")->required();
  deny->add_option("evs", deny_evs, "EVs as PORT:VALUE (compact EV)")->required();
  auto* allow = app.add_subcommand("allow", "return DENIED EVs of an EV profile to service (GOOD)");
  allow->add_option("profile", allow_profile, "EV profile id")->required();
  allow->add_option("evs", allow_evs, "EVs as PORT:VALUE (compact EV)")->required();
  double watch_s = 10;
  uint64_t watch_n = 0;
  auto* watch = app.add_subcommand("watch", "print EV events (and answer other devices' probes) for a while");
  watch->add_option("--seconds", watch_s, "how long at most")->default_val(10)->check(CLI::Range(0.0, 1e6));
  watch->add_option("--count", watch_n, "stop after this many events (0 = none: watch for --seconds); fewer "
                                        "within --seconds exits 1")
      ->default_val(0)
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 32));
  std::string dest;
  std::vector<std::string> probe_evs;
  uint64_t probe_ms = 1000;
  auto* probe = app.add_subcommand("probe", "send EV probes to a device and print their round-trip times");
  probe->add_option("dest", dest, "the destination device's address (its plane-0 GID)")->required();
  probe->add_option("--ev", probe_evs, "PORT:EV to probe (EV = UDP source port); default every EV of every port")
      ->allow_extra_args(false);
  probe->add_option("--timeout-ms", probe_ms, "wait this long for the answers")->default_val(1000)->check(
      CLI::Range(1, 3600000));
  uint32_t port_num = 0;
  std::string port_action;
  auto* port = app.add_subcommand("port", "enable or disable a port (plane)");
  port->add_option("num", port_num, "port number, 1-based")->required();
  port->add_option("action", port_action, "enable or disable")->required()->check(CLI::IsMember({"enable", "disable"}));
  app.footer(
      "Exit status: 0 success; 1 a controller call failed (or a probe went unanswered); 2 bad usage or an\n"
      "invalid file (the message names the file, line and field). See docs/software-device.md.");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  constexpr const char* kCommands = "apply FILE, show, deny, allow, watch, probe, port";
  if (const std::vector<std::string> extra = app.remaining(); !extra.empty()) {
    const bool flag = extra[0].size() > 1 && extra[0][0] == '-';
    fmt::print(stderr, "mrcctl: {} '{}' (commands: {}; mrcctl --help lists them and the flags)\n",
               flag ? "unknown flag" : "unknown command or extra argument", extra[0], kCommands);
    return 2;
  }
  if (app.get_subcommands().empty()) {
    fmt::print(stderr, "mrcctl: no command given: give one or more of {}, e.g. mrcctl --planes ADDR apply "
                       "examples/ctl.toml show\n",
               kCommands);
    return 2;
  }

  // Files are read and checked before the device opens: a bad one changes nothing.
  CtlFile cf;
  if (apply->parsed()) {
    std::string why;
    if (!mrcctl::load_ctl_file(file, cf, why)) {
      fmt::print(stderr, "mrcctl: {}\n", why);
      return 2;
    }
  }
  auto evs_of = [](const std::vector<std::string>& in, std::vector<std::pair<uint8_t, uint64_t>>& out) {
    for (const std::string& s : in) {
      uint8_t p;
      uint64_t v;
      if (!parse_ev(s, p, v)) {
        fmt::print(stderr, "mrcctl: '{}': an EV is PORT:VALUE (port 1..32)\n", s);
        return false;
      }
      out.emplace_back(p, v);
    }
    return true;
  };
  std::vector<std::pair<uint8_t, uint64_t>> deny_list, allow_list, probe_list;
  if (!evs_of(deny_evs, deny_list) || !evs_of(allow_evs, allow_list) || !evs_of(probe_evs, probe_list)) return 2;

  Ctl ctl;
  if (auto f = ctl.open(o)) {
    fmt::print(stderr, "mrcctl: {}\n", f->msg);
    return f->code == 1 ? 1 : f->code;
  }
  // The queue exists before the first command, so a watch also reports the
  // events the commands before it caused (e.g. "deny ... allow ... watch").
  if (watch->parsed())
    if (auto f = ctl.open_events()) {
      fmt::print(stderr, "mrcctl: {}\n", f->msg);
      return 1;
    }
  json result = json::object();
  int code = 0;
  for (CLI::App* sub : app.get_subcommands()) {
    const std::string name = sub->get_name();
    std::optional<Failure> f;
    json j;
    if (sub == apply) {
      j = json::object();
      f = ctl.apply(cf, j);
      if (!f && !o.json) fmt::print("applied {}\n", file);
    } else if (sub == show) {
      f = ctl.show(j);
      if (!f && !o.json) print_show(j);
    } else if (sub == deny || sub == allow) {
      j = json::array();
      f = ctl.set_ev_state(sub == deny ? deny_profile : allow_profile, sub == deny ? deny_list : allow_list,
                           sub == deny, j);
      if (!f && !o.json)
        for (const auto& e : j)
          fmt::print("ev_profile {} EV {}:{} {}\n", e["profile"].get<uint64_t>(), e["port"].get<int>(),
                     e["value"].get<uint64_t>(), e["state"].get<std::string>());
    } else if (sub == watch) {
      f = ctl.watch(watch_s, watch_n, o.json, j);
    } else if (sub == probe) {
      std::vector<std::pair<uint8_t, uint32_t>> evs;
      for (const auto& [p, v] : probe_list) evs.emplace_back(p, static_cast<uint32_t>(v));
      f = ctl.probe(dest, evs, probe_ms, o, j);
    } else if (sub == port) {
      f = ctl.port(port_num, port_action == "enable", j);
      if (!f && !o.json) fmt::print("port {}: {}\n", port_num, j["state"].get<std::string>());
    }
    result[name] = j;
    if (f) {
      fmt::print(stderr, "mrcctl: {}\n", f->msg);
      code = f->code;
      break;
    }
  }
  if (o.json) fmt::print("{}\n", result.dump(2));
  return code;
}
