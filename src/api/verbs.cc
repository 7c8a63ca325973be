// SPDX-License-Identifier: BSD-2-Clause
// libibverbs interposition: OpenMRC's software devices as ordinary ibverbs
// devices, the way OCP's programs find theirs (docs/using-the-library.md,
// "Devices through libibverbs").
//
// libopenmrc.so defines the libibverbs entry points below. A program that
// links it before -libverbs (as OCP's examples link lib_mrc.so) binds its
// ibv_* calls here; each serves a software device's objects and hands
// everything else to the real libibverbs (dlsym(RTLD_NEXT), else the
// library opened by name). The software devices are the ones a TOML file
// describes ($OPENMRC_CONFIG, else /etc/openmrc/devices.toml; one default
// device when neither exists), read again by every ibv_get_device_list.
//
// A soft ibv_context is not a libibverbs context: libibverbs would read
// provider data that does not exist. So every exported entry point that
// takes a context, PD, MR or device is defined here, and one a software
// device cannot serve answers with the verbs error (NULL or -1 with errno
// EOPNOTSUPP) instead of passing the object on. The inline calls of
// <infiniband/verbs.h> on a soft context either reach these or find the
// extended operations absent (the context is not an extended one) and
// return EOPNOTSUPP themselves.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include "api/export.hpp"
#include "api/objects.hpp"
#include "api/translate.hpp"
#include "openmrc/mrc_soft.h"
#include "openmrc/version.h"

// <infiniband/verbs.h> routes these names through inline wrappers; here they
// are the exported functions themselves.
#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

namespace mrc::api {
namespace {

constexpr const char* kDefaultConfigPath = "/etc/openmrc/devices.toml";
constexpr const char* kConfigEnv = "OPENMRC_CONFIG";
/// GID table entries per port: every one holds the port's address, so the
/// index a RoCE program was written for (often 3) finds it.
constexpr int kGidTableLen = 4;

enum class PeerRule { offset, table };

/// One software device as the configuration file describes it.
struct SoftSpec {
  std::string name;
  std::vector<std::string> planes;
  uint16_t udp_port = 0;
  mrc_soft_ev_mode ev_mode = MRC_SOFT_EV_UDP;
  PeerRule rule = PeerRule::offset;
  std::map<std::string, std::vector<std::string>> peers;  ///< GID address -> plane addresses
  /// The other mrc_soft_device_attr fields the file gives (plane_addrs,
  /// udp_port, ev_mode and pcap_path are set from the fields above at open).
  mrc_soft_device_attr attr{};
  std::string pcap;
};

/// A listed device: the ibv_device a program sees, and what opening it does.
struct ListedDevice {
  ibv_device dev{};  ///< first member: the pointer handed out
  SoftSpec spec;
};

/// What ibv_get_device_list handed out, until ibv_free_device_list.
struct HandedList {
  ibv_device** real = nullptr;  ///< the real libibverbs list inside it
  std::vector<std::unique_ptr<ListedDevice>> soft;
};

std::mutex& lists_mu() {
  static std::mutex m;
  return m;
}
std::map<ibv_device**, HandedList>& lists() {
  static std::map<ibv_device**, HandedList> l;
  return l;
}

/// The ListedDevice behind `d`, or nullptr for a real device (lists_mu held).
ListedDevice* listed_locked(ibv_device* d) {
  for (auto& [arr, hl] : lists())
    for (auto& s : hl.soft)
      if (&s->dev == d) return s.get();
  return nullptr;
}

/// Whether `d` is an open software device's ibv_device.
bool open_device_of(ibv_device* d) { return soft_device_of(d) != nullptr; }

// ------------------------------------------------------------ real libibverbs

/// The real libibverbs' `name`, or nullptr where libibverbs is not there.
void* real_symbol(const char* name) {
  if (void* f = dlsym(RTLD_NEXT, name)) return f;
  static void* lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  return lib ? dlsym(lib, name) : nullptr;
}

template <class F>
F real(const char* name) {
  return reinterpret_cast<F>(real_symbol(name));
}

// --------------------------------------------------------------- configuration

bool fail(std::string* why, const std::string& msg) {
  *why = msg;
  return false;
}

bool string_array(const toml::node* n, const std::string& where, std::vector<std::string>* out, std::string* why) {
  const toml::array* a = n ? n->as_array() : nullptr;
  if (!a || a->empty())
    return fail(why, where + ": give a non-empty array of addresses, e.g. [\"10.0.0.1\", \"10.0.1.1\"]");
  for (const auto& e : *a) {
    auto s = e.value<std::string>();
    if (!s || !platform::SockAddr::parse(*s) || platform::SockAddr::parse(*s)->port() != 0)
      return fail(why, where + ": each entry must be a numeric IPv4 or IPv6 address without a port");
    out->push_back(*s);
  }
  return true;
}

/// The [[device]] keys that set one mrc_soft_device_attr field of the same
/// name (openmrc/mrc_soft.h documents each): an integer in [lo, hi], or a
/// boolean for the 0/1 fields.
struct AttrKey {
  const char* key;
  int64_t lo, hi;
  bool boolean;
  void (*set)(mrc_soft_device_attr&, int64_t);
};
constexpr AttrKey kAttrKeys[] = {
    {"ev_port_base", 1, 65535, false, [](mrc_soft_device_attr& a, int64_t v) { a.ev_port_base = static_cast<uint16_t>(v); }},
    {"evs_per_plane", 1, 1024, false, [](mrc_soft_device_attr& a, int64_t v) { a.evs_per_plane = static_cast<uint32_t>(v); }},
    {"burst", 1, 64, false, [](mrc_soft_device_attr& a, int64_t v) { a.burst = static_cast<uint32_t>(v); }},
    {"num_engines", 1, 64, false, [](mrc_soft_device_attr& a, int64_t v) { a.num_engines = static_cast<uint32_t>(v); }},
    {"busy_poll", 0, 1, true, [](mrc_soft_device_attr& a, int64_t v) { a.busy_poll = static_cast<int>(v); }},
    {"engines_only", 0, 1, true, [](mrc_soft_device_attr& a, int64_t v) { a.engines_only = static_cast<int>(v); }},
    {"seed", 0, INT64_MAX, false, [](mrc_soft_device_attr& a, int64_t v) { a.seed = static_cast<uint64_t>(v); }},
    {"socket_buffer_bytes", 0, UINT32_MAX, false,
     [](mrc_soft_device_attr& a, int64_t v) { a.socket_buffer_bytes = static_cast<uint32_t>(v); }},
    {"no_carrier_watch", 0, 1, true, [](mrc_soft_device_attr& a, int64_t v) { a.no_carrier_watch = static_cast<int>(v); }},
    {"dscp_control", 0, 63, false, [](mrc_soft_device_attr& a, int64_t v) { a.dscp_control = static_cast<int>(v); }},
    {"raw_send", 0, 1, true, [](mrc_soft_device_attr& a, int64_t v) { a.raw_send = static_cast<int>(v); }},
    {"no_io_uring", 0, 1, true, [](mrc_soft_device_attr& a, int64_t v) { a.no_io_uring = static_cast<int>(v); }},
    {"channel_bulk_bytes_per_ms", -1, INT64_MAX, false,
     [](mrc_soft_device_attr& a, int64_t v) { a.channel_bulk_bytes_per_ms = v; }},
    {"link_rate_bps", 0, INT64_MAX, false,
     [](mrc_soft_device_attr& a, int64_t v) { a.link_rate_bps = static_cast<uint64_t>(v); }},
    {"no_ecn", 0, 1, true, [](mrc_soft_device_attr& a, int64_t v) { a.no_ecn = static_cast<int>(v); }},
};

bool parse_device(const toml::table& t, size_t index, SoftSpec* s, std::string* why) {
  const std::string at = "device[" + std::to_string(index) + "]";
  for (const auto& [k, v] : t) {
    const std::string_view key = k.str();
    const bool attr_key = std::any_of(std::begin(kAttrKeys), std::end(kAttrKeys),
                                      [&](const AttrKey& a) { return key == a.key; });
    if (key != "name" && key != "planes" && key != "udp_port" && key != "ev_mode" && key != "peer_rule" &&
        key != "peer" && key != "transport" && key != "pcap_path" && !attr_key)
      return fail(why, at + "." + std::string(key) +
                           ": unknown key (known: name, planes, udp_port, ev_mode, peer_rule, peer, transport, "
                           "pcap_path and the other fields of mrc_soft_device_attr: ev_port_base, evs_per_plane, "
                           "burst, num_engines, busy_poll, engines_only, seed, socket_buffer_bytes, "
                           "no_carrier_watch, dscp_control, raw_send, no_io_uring, channel_bulk_bytes_per_ms, "
                           "link_rate_bps (\"none\": never pace), no_ecn)");
  }
  for (const AttrKey& k : kAttrKeys) {
    const toml::node* p = t.get(k.key);
    if (!p) continue;
    if (std::string_view(k.key) == "link_rate_bps" && p->value<std::string>() == "none") {
      s->attr.link_rate_bps = UINT64_MAX;
      continue;
    }
    std::optional<int64_t> v = k.boolean && p->is_boolean() ? std::optional<int64_t>(*p->value<bool>())
                                                             : (k.boolean ? std::nullopt : p->value<int64_t>());
    if (!v || *v < k.lo || *v > k.hi)
      return fail(why, at + "." + k.key +
                           (k.boolean ? std::string(": must be true or false")
                                      : ": must be an integer in " + std::to_string(k.lo) + ".." + std::to_string(k.hi)) +
                           " (openmrc/mrc_soft.h, mrc_soft_device_attr." + k.key + ")");
    k.set(s->attr, *v);
  }
  if (const toml::node* p = t.get("transport")) {
    auto v = p->value<std::string>();
    if (v && *v == "mrc") s->attr.transport = MRC_SOFT_TRANSPORT_MRC;
    else if (v && *v == "roce_rc") s->attr.transport = MRC_SOFT_TRANSPORT_ROCE_RC;
    else return fail(why, at + ".transport: must be \"mrc\" (the default) or \"roce_rc\"");
  }
  if (const toml::node* p = t.get("pcap_path")) {
    auto v = p->value<std::string>();
    if (!v || v->empty()) return fail(why, at + ".pcap_path: give the capture file's path");
    s->pcap = *v;
  }
  auto name = t["name"].value<std::string>();
  if (!name || name->empty() || name->size() >= sizeof(ibv_device{}.name))
    return fail(why, at + ".name: give the device's name, 1..63 characters (e.g. \"mrc_soft0\")");
  s->name = *name;
  if (!string_array(t.get("planes"), at + ".planes", &s->planes, why)) return false;
  if (const toml::node* p = t.get("udp_port")) {
    auto v = p->value<int64_t>();
    if (!v || *v < 1 || *v > 65535) return fail(why, at + ".udp_port: must be 1..65535 (default 4791)");
    s->udp_port = static_cast<uint16_t>(*v);
  }
  if (const toml::node* p = t.get("ev_mode")) {
    auto v = p->value<std::string>();
    if (v && *v == "udp") s->ev_mode = MRC_SOFT_EV_UDP;
    else if (v && *v == "stev") s->ev_mode = MRC_SOFT_EV_STEV;
    else if (v && *v == "srv6") s->ev_mode = MRC_SOFT_EV_SRV6;
    else return fail(why, at + ".ev_mode: must be \"udp\" (the default), \"stev\" or \"srv6\"");
  }
  if (const toml::node* p = t.get("peer_rule")) {
    auto v = p->value<std::string>();
    if (v && *v == "offset") s->rule = PeerRule::offset;
    else if (v && *v == "table") s->rule = PeerRule::table;
    else return fail(why, at + ".peer_rule: must be \"offset\" (the default) or \"table\"");
  }
  if (const toml::node* p = t.get("peer")) {
    const toml::array* a = p->as_array();
    if (!a) return fail(why, at + ".peer: give [[device.peer]] tables with gid and planes");
    for (size_t i = 0; i < a->size(); ++i) {
      const std::string pat = at + ".peer[" + std::to_string(i) + "]";
      const toml::table* pt = (*a)[i].as_table();
      auto gid = pt ? (*pt)["gid"].value<std::string>() : std::nullopt;
      if (!gid || !platform::SockAddr::parse(*gid))
        return fail(why, pat + ".gid: give the peer's GID as its plane-0 address (e.g. \"10.0.0.2\")");
      std::vector<std::string> planes;
      if (!string_array(pt->get("planes"), pat + ".planes", &planes, why)) return false;
      if (planes.size() != s->planes.size())
        return fail(why, pat + ".planes: give one address per plane of the device (" +
                             std::to_string(s->planes.size()) + ")");
      s->peers[*gid] = std::move(planes);
    }
  }
  return true;
}

bool parse_config(const std::string& text, const std::string& path, std::vector<SoftSpec>* out, std::string* why) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << e.description() << " (line " << e.source().begin.line << ")";
    return fail(why, os.str());
  }
  for (const auto& [k, v] : root)
    if (k.str() != "device") return fail(why, std::string(k.str()) + ": unknown key (known: [[device]])");
  const toml::array* devs = root["device"].as_array();
  if (!devs || devs->empty()) return fail(why, "device: give at least one [[device]] table");
  for (size_t i = 0; i < devs->size(); ++i) {
    const toml::table* t = (*devs)[i].as_table();
    if (!t) return fail(why, "device[" + std::to_string(i) + "]: must be a table ([[device]])");
    SoftSpec s;
    if (!parse_device(*t, i, &s, why)) return false;
    for (const SoftSpec& o : *out)
      if (o.name == s.name) return fail(why, "device[" + std::to_string(i) + "].name: \"" + s.name + "\" is taken");
    out->push_back(std::move(s));
  }
  return true;
}

/// The first IPv4 address of an interface that is up and not loopback
/// (the address a peer reaches this host at), else 127.0.0.1.
std::string default_address() {
  std::string out = "127.0.0.1";
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return out;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    char buf[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf)) {
      out = buf;
      break;
    }
  }
  freeifaddrs(ifs);
  return out;
}

/// The software devices to list: the configuration file's, one default
/// device when no file exists, none (with a message naming the fix) when
/// the file is bad or $OPENMRC_CONFIG names a file that is not there.
std::vector<SoftSpec> configured_devices() {
  const char* env = std::getenv(kConfigEnv);
  const std::string path = env && *env ? env : kDefaultConfigPath;
  std::ifstream f(path);
  if (!f) {
    if (env && *env) {
      std::fprintf(stderr, "openmrc: %s=%s: cannot read it (%s); no software devices listed\n", kConfigEnv,
                   path.c_str(), std::strerror(errno));
      return {};
    }
    SoftSpec s;
    s.name = "mrc_soft0";
    s.planes = {default_address()};
    return {s};
  }
  std::stringstream text;
  text << f.rdbuf();
  std::vector<SoftSpec> out;
  std::string why;
  if (!parse_config(text.str(), path, &out, &why)) {
    std::fprintf(stderr, "openmrc: %s: %s; no software devices listed\n", path.c_str(), why.c_str());
    return {};
  }
  return out;
}

/// A peer's plane addresses by the offset rule: plane i of the peer is its
/// GID plus (this device's plane i - its plane 0), bytewise with carries,
/// so planes 10.0.0.1 and 10.1.0.1 reach peer 10.0.0.2 at 10.1.0.2.
std::vector<platform::SockAddr> offset_planes(const std::vector<platform::SockAddr>& mine,
                                              const platform::SockAddr& gid) {
  std::vector<platform::SockAddr> out;
  const auto g = gid.address_bytes();
  const auto base = mine[0].address_bytes();
  for (const auto& p : mine) {
    const auto b = p.address_bytes();
    if (b.size() != g.size() || base.size() != g.size()) return {};
    std::array<uint8_t, 16> r{};
    int carry = 0;
    for (size_t i = g.size(); i-- > 0;) {
      const int v = g[i] + b[i] - base[i] + carry;
      r[i] = static_cast<uint8_t>(v & 0xff);
      carry = v < 0 ? -1 : (v > 0xff ? 1 : 0);
    }
    out.push_back(g.size() == 4 ? platform::SockAddr::ipv4({r[0], r[1], r[2], r[3]}, 0)
                                : platform::SockAddr::ipv6(r, 0));
  }
  return out;
}

int set_errno(int e) {
  errno = e;
  return -1;
}

template <class T>
T* null_errno(int e) {
  errno = e;
  return nullptr;
}

bool soft_pd(ibv_pd* pd) { return pd && soft_device(pd->context); }

/// The peer rule of a device opened through libibverbs, for mrc_modify_qp
/// to ask about a GID the program never declared: the table's planes, else
/// (rule "offset") offset_planes, else none (the GID on every plane).
PeerPlanes peer_rule(const SoftSpec& spec, const rt::Device& dev) {
  std::vector<platform::SockAddr> mine;
  for (uint32_t i = 0; i < dev.num_planes(); ++i) mine.push_back(dev.plane_address(i));
  std::map<std::string, std::vector<platform::SockAddr>> table;
  for (const auto& [gid, planes] : spec.peers) {
    auto& v = table[platform::SockAddr::parse(gid)->host_string()];
    for (const auto& a : planes) v.push_back(*platform::SockAddr::parse(a));
  }
  const bool offset = spec.rule == PeerRule::offset;
  return [mine, table, offset](const platform::SockAddr& gid) -> std::vector<platform::SockAddr> {
    if (auto it = table.find(gid.host_string()); it != table.end()) return it->second;
    return offset ? offset_planes(mine, gid) : std::vector<platform::SockAddr>{};
  };
}

}  // namespace
}  // namespace mrc::api

using mrc::api::soft_device;
using mrc::api::SoftDevice;

extern "C" {

MRC_EXPORT ibv_device** ibv_get_device_list(int* num_devices) try {
  using Fn = ibv_device** (*)(int*);
  int nreal = 0;
  ibv_device** real = nullptr;
  if (auto f = mrc::api::real<Fn>("ibv_get_device_list")) real = f(&nreal);
  if (!real) nreal = 0;  // no RDMA stack: only the software devices
  mrc::api::HandedList hl;
  hl.real = real;
  for (auto& s : mrc::api::configured_devices()) {
    auto d = std::make_unique<mrc::api::ListedDevice>();
    std::snprintf(d->dev.name, sizeof d->dev.name, "%s", s.name.c_str());
    std::snprintf(d->dev.dev_name, sizeof d->dev.dev_name, "%s", s.name.c_str());
    d->dev.node_type = IBV_NODE_CA;
    d->dev.transport_type = IBV_TRANSPORT_IB;
    d->spec = std::move(s);
    hl.soft.push_back(std::move(d));
  }
  auto* arr = static_cast<ibv_device**>(std::calloc(static_cast<size_t>(nreal) + hl.soft.size() + 1, sizeof(ibv_device*)));
  if (!arr) {
    if (real) mrc::api::real<void (*)(ibv_device**)>("ibv_free_device_list")(real);
    errno = ENOMEM;
    return nullptr;
  }
  size_t n = 0;
  for (int i = 0; i < nreal; ++i) arr[n++] = real[i];
  for (auto& s : hl.soft) arr[n++] = &s->dev;
  if (num_devices) *num_devices = static_cast<int>(n);
  std::lock_guard<std::mutex> g(mrc::api::lists_mu());
  mrc::api::lists().emplace(arr, std::move(hl));
  return arr;
} catch (const std::bad_alloc&) {
  errno = ENOMEM;
  return nullptr;
}

MRC_EXPORT void ibv_free_device_list(ibv_device** list) {
  if (!list) return;
  ibv_device** real = nullptr;
  {
    std::lock_guard<std::mutex> g(mrc::api::lists_mu());
    auto it = mrc::api::lists().find(list);
    if (it == mrc::api::lists().end()) {
      // Not ours: a list the program got from libibverbs directly.
      if (auto f = mrc::api::real<void (*)(ibv_device**)>("ibv_free_device_list")) f(list);
      return;
    }
    real = it->second.real;
    mrc::api::lists().erase(it);
  }
  if (real)
    if (auto f = mrc::api::real<void (*)(ibv_device**)>("ibv_free_device_list")) f(real);
  std::free(list);
}

MRC_EXPORT const char* ibv_get_device_name(ibv_device* device) {
  if (!device) return mrc::api::null_errno<const char>(EINVAL);
  {
    std::lock_guard<std::mutex> g(mrc::api::lists_mu());
    if (mrc::api::listed_locked(device)) return device->name;
  }
  if (mrc::api::open_device_of(device)) return device->name;
  auto f = mrc::api::real<const char* (*)(ibv_device*)>("ibv_get_device_name");
  return f ? f(device) : mrc::api::null_errno<const char>(ENOSYS);
}

MRC_EXPORT __be64 ibv_get_device_guid(ibv_device* device) {
  bool soft;
  {
    std::lock_guard<std::mutex> g(mrc::api::lists_mu());
    soft = mrc::api::listed_locked(device) != nullptr;
  }
  if (soft || mrc::api::open_device_of(device)) {
    // A stable value of the name (the device has no hardware GUID).
    uint64_t h = 1469598103934665603ull;
    for (const char* c = device->name; *c; ++c) h = (h ^ static_cast<uint8_t>(*c)) * 1099511628211ull;
    return htobe64(h);
  }
  auto f = mrc::api::real<__be64 (*)(ibv_device*)>("ibv_get_device_guid");
  return f ? f(device) : 0;
}

MRC_EXPORT int ibv_get_device_index(ibv_device* device) {
  {
    std::lock_guard<std::mutex> g(mrc::api::lists_mu());
    if (mrc::api::listed_locked(device)) return -1;  // no kernel index
  }
  if (mrc::api::open_device_of(device)) return -1;
  auto f = mrc::api::real<int (*)(ibv_device*)>("ibv_get_device_index");
  return f ? f(device) : -1;
}

MRC_EXPORT ibv_context* ibv_open_device(ibv_device* device) try {
  mrc::api::SoftSpec spec;
  {
    std::lock_guard<std::mutex> g(mrc::api::lists_mu());
    mrc::api::ListedDevice* l = mrc::api::listed_locked(device);
    if (!l) {
      auto f = mrc::api::real<ibv_context* (*)(ibv_device*)>("ibv_open_device");
      return f ? f(device) : mrc::api::null_errno<ibv_context>(ENODEV);
    }
    spec = l->spec;
  }
  std::vector<const char*> planes;
  for (const auto& p : spec.planes) planes.push_back(p.c_str());
  mrc_soft_device_attr a = spec.attr;
  a.plane_addrs = planes.data();
  a.num_planes = static_cast<int>(planes.size());
  a.udp_port = spec.udp_port;
  a.ev_mode = spec.ev_mode;
  a.pcap_path = spec.pcap.empty() ? nullptr : spec.pcap.c_str();
  ibv_context* ctx = mrc_soft_open_device(&a);  // errno set on failure
  if (!ctx) return nullptr;
  SoftDevice* d = soft_device(ctx);
  std::snprintf(d->ibv_dev.name, sizeof d->ibv_dev.name, "%s", spec.name.c_str());
  std::snprintf(d->ibv_dev.dev_name, sizeof d->ibv_dev.dev_name, "%s", spec.name.c_str());
  d->peer_planes = mrc::api::peer_rule(spec, *d->rt);
  return ctx;
} catch (const std::bad_alloc&) {
  errno = ENOMEM;
  return nullptr;
}

MRC_EXPORT int ibv_close_device(ibv_context* context) {
  if (soft_device(context)) {
    const int e = mrc_soft_close_device(context);
    return e ? mrc::api::set_errno(e) : 0;
  }
  auto f = mrc::api::real<int (*)(ibv_context*)>("ibv_close_device");
  return f ? f(context) : mrc::api::set_errno(EINVAL);
}

MRC_EXPORT int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  if (SoftDevice* d = soft_device(context)) {
    if (!attr) return EINVAL;
    mrc_soft_device_limits l{};
    if (int e = mrc_soft_query_limits(context, &l); e != 0) return e;
    *attr = ibv_device_attr{};
    std::snprintf(attr->fw_ver, sizeof attr->fw_ver, "openmrc %s", OPENMRC_VERSION_STRING);
    ibv_gid g{};
    (void)mrc_soft_query_gid(context, 0, &g);
    std::memcpy(&attr->node_guid, g.raw + 8, 8);
    attr->sys_image_guid = attr->node_guid;
    attr->max_mr_size = UINT64_MAX;
    attr->page_size_cap = 4096;
    attr->max_qp = static_cast<int>(l.max_qp);
    attr->max_qp_wr = static_cast<int>(l.max_qp_wr);
    attr->max_sge = static_cast<int>(l.max_sge);
    attr->max_cq = static_cast<int>(l.max_qp);
    attr->max_cqe = static_cast<int>(l.max_cqe);
    attr->max_mr = 1 << 20;
    attr->max_pd = 1 << 16;
    attr->max_pkeys = 1;
    attr->phys_port_cnt = static_cast<uint8_t>(d->rt->num_planes());
    return 0;
  }
  auto f = mrc::api::real<int (*)(ibv_context*, ibv_device_attr*)>("ibv_query_device");
  return f ? f(context, attr) : EOPNOTSUPP;
}

MRC_EXPORT int ibv_query_port(ibv_context* context, uint8_t port_num, struct _compat_ibv_port_attr* compat) {
  if (SoftDevice* d = soft_device(context)) {
    if (!compat || port_num < 1 || port_num > d->rt->num_planes()) return EINVAL;
    // The fields of the compat layout only (up to link_layer): the caller's
    // memory may be that short.
    auto* a = reinterpret_cast<ibv_port_attr*>(compat);
    a->state = IBV_PORT_ACTIVE;
    a->max_mtu = IBV_MTU_4096;
    a->active_mtu = IBV_MTU_4096;
    a->gid_tbl_len = mrc::api::kGidTableLen;
    a->port_cap_flags = 0;
    a->max_msg_sz = 1u << 31;
    a->bad_pkey_cntr = 0;
    a->qkey_viol_cntr = 0;
    a->pkey_tbl_len = 1;
    a->lid = 0;
    a->sm_lid = 0;
    a->lmc = 0;
    a->max_vl_num = 1;
    a->sm_sl = 0;
    a->subnet_timeout = 0;
    a->init_type_reply = 0;
    a->active_width = 1;  // 1X
    a->active_speed = 0;
    a->phys_state = 5;    // LinkUp
    a->link_layer = IBV_LINK_LAYER_ETHERNET;
    return 0;
  }
  auto f = mrc::api::real<int (*)(ibv_context*, uint8_t, _compat_ibv_port_attr*)>("ibv_query_port");
  return f ? f(context, port_num, compat) : EOPNOTSUPP;
}

MRC_EXPORT int ibv_query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) {
  if (SoftDevice* d = soft_device(context)) {
    if (!gid || port_num < 1 || port_num > d->rt->num_planes() || index < 0 || index >= mrc::api::kGidTableLen)
      return mrc::api::set_errno(EINVAL);
    const int e = mrc_soft_query_gid(context, port_num - 1, gid);
    return e ? mrc::api::set_errno(e) : 0;
  }
  auto f = mrc::api::real<int (*)(ibv_context*, uint8_t, int, ibv_gid*)>("ibv_query_gid");
  return f ? f(context, port_num, index, gid) : mrc::api::set_errno(EOPNOTSUPP);
}

MRC_EXPORT int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num, uint32_t gid_index, ibv_gid_entry* entry,
                                 uint32_t flags, size_t entry_size) {
  if (SoftDevice* d = soft_device(context)) {
    if (!entry || flags || entry_size < sizeof(ibv_gid_entry) || port_num < 1 || port_num > d->rt->num_planes() ||
        gid_index >= static_cast<uint32_t>(mrc::api::kGidTableLen))
      return EINVAL;
    *entry = ibv_gid_entry{};
    if (int e = mrc_soft_query_gid(context, static_cast<int>(port_num - 1), &entry->gid); e != 0) return e;
    entry->gid_index = gid_index;
    entry->port_num = port_num;
    entry->gid_type = IBV_GID_TYPE_ROCE_V2;
    return 0;
  }
  auto f = mrc::api::real<int (*)(ibv_context*, uint32_t, uint32_t, ibv_gid_entry*, uint32_t, size_t)>(
      "_ibv_query_gid_ex");
  return f ? f(context, port_num, gid_index, entry, flags, entry_size) : EOPNOTSUPP;
}

MRC_EXPORT ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries,
                                        uint32_t flags, size_t entry_size) {
  if (SoftDevice* d = soft_device(context)) {
    if (!entries || flags || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
    const size_t n = static_cast<size_t>(d->rt->num_planes()) * mrc::api::kGidTableLen;
    if (max_entries < n) return -EINVAL;
    for (size_t i = 0; i < n; ++i) {
      auto* e = reinterpret_cast<ibv_gid_entry*>(reinterpret_cast<char*>(entries) + i * entry_size);
      const int rc = _ibv_query_gid_ex(context, static_cast<uint32_t>(i / mrc::api::kGidTableLen + 1),
                                       static_cast<uint32_t>(i % mrc::api::kGidTableLen), e, 0, entry_size);
      if (rc != 0) return -rc;
    }
    return static_cast<ssize_t>(n);
  }
  auto f = mrc::api::real<ssize_t (*)(ibv_context*, ibv_gid_entry*, size_t, uint32_t, size_t)>("_ibv_query_gid_table");
  return f ? f(context, entries, max_entries, flags, entry_size) : -EOPNOTSUPP;
}

MRC_EXPORT int ibv_query_pkey(ibv_context* context, uint8_t port_num, int index, __be16* pkey) {
  if (SoftDevice* d = soft_device(context)) {
    if (!pkey || port_num < 1 || port_num > d->rt->num_planes() || index != 0) return mrc::api::set_errno(EINVAL);
    *pkey = htons(0xffff);  // the default partition, all there is
    return 0;
  }
  auto f = mrc::api::real<int (*)(ibv_context*, uint8_t, int, __be16*)>("ibv_query_pkey");
  return f ? f(context, port_num, index, pkey) : mrc::api::set_errno(EOPNOTSUPP);
}

MRC_EXPORT int ibv_get_pkey_index(ibv_context* context, uint8_t port_num, __be16 pkey) {
  if (soft_device(context)) return pkey == htons(0xffff) ? 0 : mrc::api::set_errno(ENOENT);
  auto f = mrc::api::real<int (*)(ibv_context*, uint8_t, __be16)>("ibv_get_pkey_index");
  return f ? f(context, port_num, pkey) : mrc::api::set_errno(EOPNOTSUPP);
}

MRC_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* context) {
  if (soft_device(context)) return mrc_soft_alloc_pd(context);
  auto f = mrc::api::real<ibv_pd* (*)(ibv_context*)>("ibv_alloc_pd");
  return f ? f(context) : mrc::api::null_errno<ibv_pd>(EOPNOTSUPP);
}

MRC_EXPORT int ibv_dealloc_pd(ibv_pd* pd) {
  if (mrc::api::soft_pd(pd)) return mrc_soft_dealloc_pd(pd);
  auto f = mrc::api::real<int (*)(ibv_pd*)>("ibv_dealloc_pd");
  return f ? f(pd) : EOPNOTSUPP;
}

MRC_EXPORT ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  // The optional access flags (relaxed ordering) may be ignored, as verbs
  // allows; the software device has nothing to relax.
  if (mrc::api::soft_pd(pd)) return mrc_soft_reg_mr(pd, addr, length, access & ~IBV_ACCESS_OPTIONAL_RANGE);
  auto f = mrc::api::real<ibv_mr* (*)(ibv_pd*, void*, size_t, int)>("ibv_reg_mr");
  return f ? f(pd, addr, length, access) : mrc::api::null_errno<ibv_mr>(EOPNOTSUPP);
}

MRC_EXPORT ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  if (mrc::api::soft_pd(pd)) {
    // Remote peers address the region by its virtual address.
    if (iova != reinterpret_cast<uintptr_t>(addr)) return mrc::api::null_errno<ibv_mr>(EOPNOTSUPP);
    return mrc_soft_reg_mr(pd, addr, length, static_cast<int>(access & ~IBV_ACCESS_OPTIONAL_RANGE));
  }
  auto f = mrc::api::real<ibv_mr* (*)(ibv_pd*, void*, size_t, uint64_t, unsigned)>("ibv_reg_mr_iova2");
  return f ? f(pd, addr, length, iova, access) : mrc::api::null_errno<ibv_mr>(EOPNOTSUPP);
}

MRC_EXPORT ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  if (mrc::api::soft_pd(pd)) return ibv_reg_mr_iova2(pd, addr, length, iova, static_cast<unsigned>(access));
  auto f = mrc::api::real<ibv_mr* (*)(ibv_pd*, void*, size_t, uint64_t, int)>("ibv_reg_mr_iova");
  return f ? f(pd, addr, length, iova, access) : mrc::api::null_errno<ibv_mr>(EOPNOTSUPP);
}

MRC_EXPORT int ibv_dereg_mr(ibv_mr* mr) {
  if (mr && soft_device(mr->context)) return mrc_soft_dereg_mr(mr);
  auto f = mrc::api::real<int (*)(ibv_mr*)>("ibv_dereg_mr");
  return f ? f(mr) : EOPNOTSUPP;
}

MRC_EXPORT const char* ibv_wc_status_str(ibv_wc_status status) { return mrc_wc_status_str(status); }

// Served by the MRC API instead (mrc_create_cq, mrc_create_qp, ...): on a
// software device these answer with the verbs error.

MRC_EXPORT int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  if ((mr && soft_device(mr->context)) || mrc::api::soft_pd(pd)) {
    errno = EOPNOTSUPP;
    return IBV_REREG_MR_ERR_INPUT;
  }
  auto f = mrc::api::real<int (*)(ibv_mr*, int, ibv_pd*, void*, size_t, int)>("ibv_rereg_mr");
  return f ? f(mr, flags, pd, addr, length, access) : IBV_REREG_MR_ERR_INPUT;
}

MRC_EXPORT ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) {
  if (mrc::api::soft_pd(pd)) return mrc::api::null_errno<ibv_mr>(EOPNOTSUPP);
  auto f = mrc::api::real<ibv_mr* (*)(ibv_pd*, uint64_t, size_t, uint64_t, int, int)>("ibv_reg_dmabuf_mr");
  return f ? f(pd, offset, length, iova, fd, access) : mrc::api::null_errno<ibv_mr>(EOPNOTSUPP);
}

MRC_EXPORT ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  if (soft_device(context)) return mrc::api::null_errno<ibv_comp_channel>(EOPNOTSUPP);
  auto f = mrc::api::real<ibv_comp_channel* (*)(ibv_context*)>("ibv_create_comp_channel");
  return f ? f(context) : mrc::api::null_errno<ibv_comp_channel>(EOPNOTSUPP);
}

MRC_EXPORT ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                                 int comp_vector) {
  if (soft_device(context)) return mrc::api::null_errno<ibv_cq>(EOPNOTSUPP);
  auto f = mrc::api::real<ibv_cq* (*)(ibv_context*, int, void*, ibv_comp_channel*, int)>("ibv_create_cq");
  return f ? f(context, cqe, cq_context, channel, comp_vector) : mrc::api::null_errno<ibv_cq>(EOPNOTSUPP);
}

MRC_EXPORT int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
  if (soft_device(context)) return mrc::api::set_errno(EOPNOTSUPP);
  auto f = mrc::api::real<int (*)(ibv_context*, ibv_async_event*)>("ibv_get_async_event");
  return f ? f(context, event) : mrc::api::set_errno(EOPNOTSUPP);
}

MRC_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (mrc::api::soft_pd(pd)) return mrc::api::null_errno<ibv_qp>(EOPNOTSUPP);
  auto f = mrc::api::real<ibv_qp* (*)(ibv_pd*, ibv_qp_init_attr*)>("ibv_create_qp");
  return f ? f(pd, attr) : mrc::api::null_errno<ibv_qp>(EOPNOTSUPP);
}

MRC_EXPORT ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (mrc::api::soft_pd(pd)) return mrc::api::null_errno<ibv_srq>(EOPNOTSUPP);
  auto f = mrc::api::real<ibv_srq* (*)(ibv_pd*, ibv_srq_init_attr*)>("ibv_create_srq");
  return f ? f(pd, attr) : mrc::api::null_errno<ibv_srq>(EOPNOTSUPP);
}

MRC_EXPORT ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  if (mrc::api::soft_pd(pd)) return mrc::api::null_errno<ibv_ah>(EOPNOTSUPP);
  auto f = mrc::api::real<ibv_ah* (*)(ibv_pd*, ibv_ah_attr*)>("ibv_create_ah");
  return f ? f(pd, attr) : mrc::api::null_errno<ibv_ah>(EOPNOTSUPP);
}

MRC_EXPORT int ibv_init_ah_from_wc(ibv_context* context, uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                                   ibv_ah_attr* ah_attr) {
  if (soft_device(context)) return mrc::api::set_errno(EOPNOTSUPP);
  auto f = mrc::api::real<int (*)(ibv_context*, uint8_t, ibv_wc*, ibv_grh*, ibv_ah_attr*)>("ibv_init_ah_from_wc");
  return f ? f(context, port_num, wc, grh, ah_attr) : mrc::api::set_errno(EOPNOTSUPP);
}

MRC_EXPORT ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
  if (mrc::api::soft_pd(pd)) return mrc::api::null_errno<ibv_ah>(EOPNOTSUPP);
  auto f = mrc::api::real<ibv_ah* (*)(ibv_pd*, ibv_wc*, ibv_grh*, uint8_t)>("ibv_create_ah_from_wc");
  return f ? f(pd, wc, grh, port_num) : mrc::api::null_errno<ibv_ah>(EOPNOTSUPP);
}

MRC_EXPORT ibv_pd* ibv_import_pd(ibv_context* context, uint32_t pd_handle) {
  if (soft_device(context)) return mrc::api::null_errno<ibv_pd>(EOPNOTSUPP);
  auto f = mrc::api::real<ibv_pd* (*)(ibv_context*, uint32_t)>("ibv_import_pd");
  return f ? f(context, pd_handle) : mrc::api::null_errno<ibv_pd>(EOPNOTSUPP);
}

MRC_EXPORT void ibv_unimport_pd(ibv_pd* pd) {
  if (mrc::api::soft_pd(pd)) return;  // never imported
  if (auto f = mrc::api::real<void (*)(ibv_pd*)>("ibv_unimport_pd")) f(pd);
}

MRC_EXPORT ibv_mr* ibv_import_mr(ibv_pd* pd, uint32_t mr_handle) {
  if (mrc::api::soft_pd(pd)) return mrc::api::null_errno<ibv_mr>(EOPNOTSUPP);
  auto f = mrc::api::real<ibv_mr* (*)(ibv_pd*, uint32_t)>("ibv_import_mr");
  return f ? f(pd, mr_handle) : mrc::api::null_errno<ibv_mr>(EOPNOTSUPP);
}

MRC_EXPORT void ibv_unimport_mr(ibv_mr* mr) {
  if (mr && soft_device(mr->context)) return;  // never imported
  if (auto f = mrc::api::real<void (*)(ibv_mr*)>("ibv_unimport_mr")) f(mr);
}

}  // extern "C"
