// SPDX-License-Identifier: BSD-2-Clause
#include "sim/scenario/failures.hpp"

#include <map>
#include <sstream>

#include "sim/workload/cluster.hpp"

namespace mrc::sim {

Result<Duration> parse_duration(const std::string& t) {
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(t, &pos);
  } catch (...) {
    return Errc::invalid_argument;
  }
  const std::string unit = t.substr(pos);
  double scale = 0;
  if (unit == "ps") scale = 1;
  else if (unit == "ns") scale = 1e3;
  else if (unit == "us") scale = 1e6;
  else if (unit == "ms") scale = 1e9;
  else if (unit == "s") scale = 1e12;
  else return Errc::invalid_argument;
  if (v < 0) return Errc::invalid_argument;
  return Duration::ps(static_cast<int64_t>(v * scale));
}

Result<FailureSpec> parse_failure(const std::string& text, std::string* why) {
  auto fail = [&](const std::string& msg) {
    if (why) *why = "failure '" + text + "': " + msg;
    return Errc::invalid_argument;
  };
  FailureSpec f;
  f.text = text;
  const auto colon = text.find(':');
  if (colon == std::string::npos) return fail("expected kind:key=value,...");
  const std::string kind = text.substr(0, colon);
  std::map<std::string, std::string> kv;
  std::stringstream ss(text.substr(colon + 1));
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) return fail("'" + item + "' is not key=value");
    kv[item.substr(0, eq)] = item.substr(eq + 1);
  }
  auto take_u = [&](const char* key, uint32_t* out, bool required, bool* all = nullptr) -> bool {
    auto it = kv.find(key);
    if (it == kv.end()) return !required;
    if (all && it->second == "*") {
      *all = true;
      kv.erase(it);
      return true;
    }
    try {
      *out = static_cast<uint32_t>(std::stoul(it->second));
    } catch (...) {
      return false;
    }
    kv.erase(it);
    return true;
  };
  auto take_time = [&](const char* key, Duration* out, bool required) -> bool {
    auto it = kv.find(key);
    if (it == kv.end()) return !required;
    auto d = parse_duration(it->second);
    if (!d) return false;
    *out = *d;
    kv.erase(it);
    return true;
  };
  Duration at;
  if (auto it = kv.find("at"); it != kv.end() && it->second.rfind("step", 0) == 0) {
    // at=step<K>[+<time>]
    const std::string rest = it->second.substr(4);
    const size_t plus = rest.find('+');
    const std::string k = rest.substr(0, plus);
    if (k.empty() || k.size() > 6 || k.find_first_not_of("0123456789") != std::string::npos)
      return fail("at=step<K>[+<time>] needs a step number K (e.g. at=step2+100us)");
    f.at_step = std::stoi(k);
    if (plus == std::string::npos) it->second = "0ps";
    else it->second = rest.substr(plus + 1);
  }
  if (!take_time("at", &at, true))
    return fail("needs at=<time> with a unit (e.g. at=2ms) or at=step<K>[+<time>] (e.g. at=step2+100us)");
  f.at = Time::zero() + at;
  Duration dur = Duration::infinite();
  if (!take_time("for", &dur, false)) return fail("for= needs a time with a unit");
  f.duration = dur;

  auto parse_link = [&]() -> bool {
    auto it = kv.find("tier");
    if (it == kv.end()) return false;
    const std::string tier = it->second;
    kv.erase(it);
    if (tier == "host") f.link.tier = LinkRef::Tier::host_t0;
    else if (tier == "t0t1") f.link.tier = LinkRef::Tier::t0_t1;
    else if (tier == "t1t2") f.link.tier = LinkRef::Tier::t1_t2;
    else return false;
    return take_u("plane", &f.link.plane, false, &f.all_planes) && take_u("a", &f.link.a, true, &f.all_a) &&
           take_u("b", &f.link.b, f.link.tier != LinkRef::Tier::host_t0, &f.all_b);
  };

  if (kind == "link-down" || kind == "link-flap" || kind == "loss" || kind == "rate") {
    if (!parse_link()) return fail("needs tier=host|t0t1|t1t2, plane=P, a=I (and b=J for t0t1/t1t2)");
    if (kind == "link-down") {
      f.kind = FailureSpec::Kind::link_down;
    } else if (kind == "link-flap") {
      f.kind = FailureSpec::Kind::link_flap;
      Duration until;
      if (!take_time("until", &until, true)) return fail("link-flap needs until=<time>");
      f.until = Time::zero() + until;
      if (!take_time("period", &f.period, true) || f.period <= Duration{})
        return fail("link-flap needs period=<time> > 0");
      if (auto it = kv.find("duty"); it != kv.end()) {
        try {
          f.duty = std::stod(it->second);
        } catch (...) {
          return fail("duty must be a number in (0,1)");
        }
        kv.erase(it);
        if (f.duty <= 0 || f.duty >= 1) return fail("duty must be in (0,1)");
      }
    } else if (kind == "loss") {
      f.kind = FailureSpec::Kind::loss;
      auto it = kv.find("p");
      if (it == kv.end()) return fail("loss needs p=<probability>");
      try {
        f.loss = std::stod(it->second);
      } catch (...) {
        return fail("p must be a number");
      }
      kv.erase(it);
      if (f.loss < 0 || f.loss > 1) return fail("p must be in [0,1]");
    } else {
      f.kind = FailureSpec::Kind::rate;
      auto it = kv.find("gbps");
      if (it == kv.end()) return fail("rate needs gbps=<rate>");
      double g = 0;
      try {
        g = std::stod(it->second);
      } catch (...) {
        return fail("gbps must be a number");
      }
      kv.erase(it);
      if (g <= 0) return fail("gbps must be > 0");
      f.rate_bps = static_cast<uint64_t>(g * 1e9);
    }
  } else if (kind == "switch-down") {
    f.kind = FailureSpec::Kind::switch_down;
    auto it = kv.find("tier");
    if (it == kv.end()) return fail("switch-down needs tier=t0|t1|t2");
    if (it->second == "t0") f.sw.tier = SwitchRef::Tier::t0;
    else if (it->second == "t1") f.sw.tier = SwitchRef::Tier::t1;
    else if (it->second == "t2") f.sw.tier = SwitchRef::Tier::t2;
    else return fail("tier must be t0, t1 or t2");
    kv.erase(it);
    if (!take_u("plane", &f.sw.plane, false, &f.all_planes) || !take_u("index", &f.sw.index, true, &f.all_a))
      return fail("switch-down needs index=I (and plane=P)");
  } else if (kind == "deny" || kind == "allow") {
    f.kind = kind == "deny" ? FailureSpec::Kind::deny : FailureSpec::Kind::allow;
    if (!take_u("host", &f.host, true)) return fail(kind + " needs host=H (a host number)");
    if (!take_u("ev", &f.ev, true)) return fail(kind + " needs ev=V (an EV value)");
    if (f.kind == FailureSpec::Kind::allow && f.duration != Duration::infinite())
      return fail("allow takes no for= (deny with for= allows the EV again at the end)");
  } else if (kind == "port-disable" || kind == "port-enable") {
    f.kind = kind == "port-disable" ? FailureSpec::Kind::port_disable : FailureSpec::Kind::port_enable;
    if (!take_u("host", &f.host, true)) return fail(kind + " needs host=H (a host number)");
    if (!take_u("port", &f.port, true)) return fail(kind + " needs port=P (the NIC port = plane, 0-based)");
    if (f.kind == FailureSpec::Kind::port_enable && f.duration != Duration::infinite())
      return fail("port-enable takes no for= (port-disable with for= enables the port again at the end)");
  } else {
    return fail("unknown kind '" + kind +
                "' (link-down, link-flap, switch-down, loss, rate, deny, allow, port-disable, port-enable)");
  }
  if (!kv.empty()) return fail("unknown key '" + kv.begin()->first + "'");
  return f;
}

namespace {
/// 0..n-1 when `all`, else just `one`.
std::vector<uint32_t> range_or(bool all, uint32_t n, uint32_t one) {
  if (!all) return {one};
  std::vector<uint32_t> v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = i;
  return v;
}
}  // namespace

std::vector<LinkRef> failure_links(const FailureSpec& f, const Fabric& fabric) {
  using K = FailureSpec::Kind;
  if (f.kind == K::switch_down || f.is_controller_action()) return {};
  if (!f.is_group()) return {f.link};
  const TopologyShape& s = fabric.shape();
  uint32_t a_count = s.hosts, b_count = 1, lanes = 1;
  if (f.link.tier == LinkRef::Tier::t0_t1) {
    a_count = s.t0_count;
    b_count = s.t1_count;
    lanes = s.lanes0;
  } else if (f.link.tier == LinkRef::Tier::t1_t2) {
    a_count = s.t1_count;
    b_count = s.t2_count;
    lanes = s.lanes1;
  }
  std::vector<LinkRef> out;
  for (uint32_t p : range_or(f.all_planes, s.planes, f.link.plane))
    for (uint32_t a : range_or(f.all_a, a_count, f.link.a))
      for (uint32_t b : range_or(f.all_b, b_count, f.link.b))
        for (uint32_t lane = 0; lane < lanes; ++lane) {
          const LinkRef l{f.link.tier, p, a, b, lane};
          if (fabric.check(l, nullptr)) out.push_back(l);  // a T0 reaches only its pod's T1s
        }
  return out;
}

std::vector<SwitchRef> failure_switches(const FailureSpec& f, const Fabric& fabric) {
  if (f.kind != FailureSpec::Kind::switch_down) return {};
  if (!f.is_group()) return {f.sw};
  const TopologyShape& s = fabric.shape();
  const uint32_t n = f.sw.tier == SwitchRef::Tier::t0 ? s.t0_count
                     : f.sw.tier == SwitchRef::Tier::t1 ? s.t1_count
                                                        : s.t2_count;
  std::vector<SwitchRef> out;
  for (uint32_t p : range_or(f.all_planes, s.planes, f.sw.plane))
    for (uint32_t i : range_or(f.all_a, n, f.sw.index)) {
      const SwitchRef r{f.sw.tier, p, i};
      if (fabric.check(r, nullptr)) out.push_back(r);
    }
  return out;
}

Status validate_failures(const std::vector<FailureSpec>& specs, const Fabric& fabric, std::string* why) {
  for (const FailureSpec& f : specs) {
    std::string detail;
    Status s;
    const bool group_empty = f.is_group() && failure_links(f, fabric).empty() && failure_switches(f, fabric).empty();
    if (group_empty) {
      detail = "the group matches no " + std::string(f.kind == FailureSpec::Kind::switch_down ? "switch" : "link") +
               " of this fabric";
      s = Errc::invalid_argument;
    } else if (!f.is_group()) {  // a group's members exist by construction
      switch (f.kind) {
        case FailureSpec::Kind::switch_down: s = fabric.check(f.sw, &detail); break;
        case FailureSpec::Kind::deny:
        case FailureSpec::Kind::allow:
        case FailureSpec::Kind::port_disable:
        case FailureSpec::Kind::port_enable:
          if (f.host >= fabric.hosts()) {
            detail = "host=" + std::to_string(f.host) + ": the host does not exist (" +
                     std::to_string(fabric.hosts()) + " hosts)";
            s = Errc::invalid_argument;
          } else if ((f.kind == FailureSpec::Kind::port_disable || f.kind == FailureSpec::Kind::port_enable) &&
                     f.port >= fabric.planes()) {
            detail = "port=" + std::to_string(f.port) + ": the NIC has ports 0.." + std::to_string(fabric.planes() - 1) +
                     " (one per plane)";
            s = Errc::invalid_argument;
          }
          break;
        default: s = fabric.check(f.link, &detail); break;
      }
    }
    if (!s) {
      if (why) *why = "failure '" + f.text + "': " + detail;
      return s;
    }
  }
  return {};
}

FailureSchedule::FailureSchedule(Simulator& sim, Fabric& fabric, Cluster& cluster, std::vector<FailureSpec> specs)
    : sim_(sim), fabric_(fabric), cluster_(cluster), specs_(std::move(specs)), keys_(sim.new_keys()) {
  for (const FailureSpec& f : specs_) {
    links_.push_back(failure_links(f, fabric_));
    switches_.push_back(failure_switches(f, fabric_));
  }
}

// Tags: index << 1 | begin(1)/end(0).
void FailureSchedule::start() {
  for (size_t i = 0; i < specs_.size(); ++i)
    if (specs_[i].at_step < 0) sim_.schedule(specs_[i].at, this, (i << 1) | 1, keys_.next());
}

void FailureSchedule::step_started(uint32_t step, Time now) {
  for (size_t i = 0; i < specs_.size(); ++i) {
    FailureSpec& f = specs_[i];
    if (f.at_step != static_cast<int32_t>(step)) continue;
    // From here on the spec's times are absolute, as for a run-relative one.
    const Time anchor = now;
    f.at = anchor + (f.at - Time::zero());
    if (f.until != Time::never()) f.until = anchor + (f.until - Time::zero());
    sim_.schedule(f.at, this, (i << 1) | 1, keys_.next());
  }
}

void FailureSchedule::on_event(Simulator& sim, uint64_t tag) {
  const size_t i = tag >> 1;
  const bool begin = tag & 1;
  const FailureSpec& f = specs_[i];
  if (f.kind == FailureSpec::Kind::link_flap) {
    // Alternate: down for duty x period, up for the rest, until `until`.
    if (sim.now() >= f.until) {
      if (!begin) return;
      set_links(i, true);
      log_.emplace_back(sim.now(), "end of " + f.text);
      return;
    }
    set_links(i, !begin);
    const Duration down = Duration::ps(static_cast<int64_t>(static_cast<double>(f.period.count_ps()) * f.duty));
    const Time next = sim.now() + (begin ? down : f.period - down);
    sim.schedule(min(next, f.until), this, (i << 1) | (begin ? 0 : 1), keys_.next());
    if (begin) log_.emplace_back(sim.now(), f.text + " (down)");
    return;
  }
  apply(i, begin);
  log_.emplace_back(sim.now(), (begin ? "" : "end of ") + f.text);
  if (begin && f.duration != Duration::infinite()) sim.schedule(sim.now() + f.duration, this, i << 1, keys_.next());
}

void FailureSchedule::set_link(const LinkRef& l, bool up) {
  fabric_.set_link_up(l, up);
  // Across processes, a host another rank runs is told by that rank (Cluster::built).
  if (l.tier == LinkRef::Tier::host_t0 && l.a < cluster_.hosts() && cluster_.built(l.a))
    cluster_.nic(l.a).carrier_changed(l.plane);
}

void FailureSchedule::set_links(size_t i, bool up) {
  for (const LinkRef& l : links_[i]) set_link(l, up);
}

void FailureSchedule::apply(size_t i, bool begin) {
  const FailureSpec& f = specs_[i];
  switch (f.kind) {
    case FailureSpec::Kind::link_down: set_links(i, !begin); break;
    case FailureSpec::Kind::link_flap: break;  // handled in on_event
    case FailureSpec::Kind::switch_down:
      for (const SwitchRef& sw : switches_[i]) {
        fabric_.set_switch_up(sw, !begin);
        if (sw.tier == SwitchRef::Tier::t0) {
          // Hosts under a T0 lose carrier on that plane with it.
          for (uint32_t h = 0; h < cluster_.hosts(); ++h)
            if (h / fabric_.config().t0_down == sw.index && cluster_.built(h)) cluster_.nic(h).carrier_changed(sw.plane);
        }
      }
      break;
    case FailureSpec::Kind::loss:
      for (const LinkRef& l : links_[i]) fabric_.set_link_loss(l, begin ? f.loss : 0.0);
      break;
    case FailureSpec::Kind::rate:
      for (const LinkRef& l : links_[i])
        fabric_.set_link_rate(l, begin ? f.rate_bps
                                       : (l.tier == LinkRef::Tier::host_t0
                                              ? fabric_.config().host_link_bps
                                              : (fabric_.config().fabric_link_bps ? fabric_.config().fabric_link_bps
                                                                                   : fabric_.config().host_link_bps)));
      break;
    case FailureSpec::Kind::deny:
    case FailureSpec::Kind::allow:
      if (f.host < cluster_.hosts() && cluster_.built(f.host)) {
        // deny: DENIED at the start, GOOD again at the end of for=; allow: GOOD.
        const bool denied = f.kind == FailureSpec::Kind::deny && begin;
        core::Endpoint& ep = cluster_.nic(f.host).ep();
        // A QP that does not hold the EV refuses (not_found): nothing to do there.
        for (uint32_t qpn : ep.qp_numbers()) (void)ep.set_ev_denied(sim_.now(), qpn, f.ev, denied);
        cluster_.nic(f.host).kick();
      }
      break;
    case FailureSpec::Kind::port_disable:
    case FailureSpec::Kind::port_enable:
      if (f.host < cluster_.hosts() && cluster_.built(f.host))
        cluster_.nic(f.host).set_port_admin(f.port, f.kind == FailureSpec::Kind::port_enable || !begin);
      break;
  }
}

}  // namespace mrc::sim
