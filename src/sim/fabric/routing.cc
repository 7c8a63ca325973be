// SPDX-License-Identifier: BSD-2-Clause
// Forwarding state a NIC puts on a packet (SRv6 uSID carrier, ECMP flow key),
// EV sets, and the ECMP baseline's reconvergence after failures.
#include <algorithm>
#include <map>
#include <unordered_set>
#include <utility>

#include "sim/fabric/fabric_impl.hpp"
#include "sim/fabric/usid.hpp"

namespace mrc::sim {

namespace {
std::vector<uint32_t> shuffled(uint32_t n, Prng& rng) {
  std::vector<uint32_t> v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = i;
  for (uint32_t i = n; i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
  return v;
}
}  // namespace

void Fabric::Impl::set_route(Packet& p) const {
  const TopologyShape& s = shape;
  if (cfg.routing == Routing::ecmp) {
    // The 5-tuple: addresses, the plane's port, and the EV in the UDP source port.
    p.srv6 = false;
    p.flow_hash = mix64(((uint64_t{p.src} << 32) | p.dst) ^ mix64((uint64_t{p.plane} << 32) | p.entropy));
    return;
  }
  p.srv6 = true;
  p.usid_pos = 0;
  uint16_t* u = p.usid;
  int n = 0;
  if (p.src < s.hosts && p.dst < s.hosts) {
    using usid::Tier;
    const uint32_t plane = p.plane;
    const uint32_t s0 = p.src / s.t0_down, d0 = p.dst / s.t0_down;
    u[n++] = usid::make(plane, Tier::t0, s0);
    if (s0 != d0) {
      const uint32_t u0 = ev.u0(p.entropy);
      const uint32_t spod = s0 / s.t0_per_pod, dpod = d0 / s.t0_per_pod;
      u[n++] = usid::make(plane, Tier::t1, spod * s.t0_up + u0);
      if (spod != dpod) {
        const uint32_t j = u0 / s.lanes0;
        u[n++] = usid::make(plane, Tier::t2, j * s.t1_up + ev.u1(p.entropy));
        u[n++] = usid::make(plane, Tier::t1, dpod * s.t0_up + u0);
      }
      u[n++] = usid::make(plane, Tier::t0, d0);
    }
    u[n++] = usid::make(plane, Tier::downlink, p.dst - d0 * s.t0_down);
  }
  // An empty carrier (bad src/dst) matches no switch: dropped as no route.
  for (; n < kMaxUsids; ++n) u[n] = 0;
}

std::vector<core::EvEntry> Fabric::Impl::make_evs(uint32_t per_plane, Prng& rng) const {
  const TopologyShape& s = shape;
  std::vector<core::EvEntry> out;
  if (cfg.routing == Routing::ecmp) {
    const uint64_t total = std::min<uint64_t>(uint64_t{per_plane} * s.planes, 65536);
    out.reserve(total);
    std::unordered_set<uint32_t> seen;
    seen.reserve(total * 2);
    for (uint32_t plane = 0; plane < s.planes; ++plane) {
      for (uint32_t i = 0; i < per_plane && out.size() < total; ++i) {
        uint32_t v;
        do v = static_cast<uint32_t>(rng.below(65536));
        while (!seen.insert(v).second);
        out.push_back(core::EvEntry{v, static_cast<uint8_t>(plane)});
      }
    }
    return out;
  }
  // SRv6. Uplink orders in which consecutive entries cycle through every T1
  // (and every T2 of a group) before repeating one, each shuffled per plane.
  const uint32_t t1_up = s.three_tier ? s.t1_up : 1;
  const uint64_t paths = uint64_t{s.t0_up} * t1_up;
  const uint64_t limit = paths << ev.copy_bits();
  const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(per_plane, limit));
  out.reserve(size_t{n} * s.planes);
  for (uint32_t plane = 0; plane < s.planes; ++plane) {
    const std::vector<uint32_t> t1s = shuffled(s.t1_per_pod, rng), lanes0 = shuffled(s.lanes0, rng);
    std::vector<uint32_t> up0(s.t0_up);
    for (uint32_t a = 0; a < s.t0_up; ++a) up0[a] = t1s[a % s.t1_per_pod] * s.lanes0 + lanes0[a / s.t1_per_pod];
    std::vector<uint32_t> up1(1, 0);
    if (s.three_tier) {
      const std::vector<uint32_t> t2s = shuffled(s.t2_per_group, rng), lanes1 = shuffled(s.lanes1, rng);
      up1.resize(t1_up);
      for (uint32_t b = 0; b < t1_up; ++b)
        up1[b] = t2s[b % s.t2_per_group] * s.lanes1 + lanes1[b / s.t2_per_group];
    }
    for (uint32_t i = 0; i < n; ++i) {
      // Round r of the T0 uplinks pairs uplink a with T1 uplink (r + a): the
      // first `paths` EVs name distinct paths, later ones repeat them as copies.
      const uint32_t a = i % s.t0_up, r = i / s.t0_up;
      const uint32_t u1 = up1[(r + a) % t1_up];
      const uint32_t copy = static_cast<uint32_t>(i / paths);
      out.push_back(core::EvEntry{ev.encode(plane, copy, up0[a], u1), static_cast<uint8_t>(plane)});
    }
  }
  return out;
}

EvPath Fabric::Impl::ev_path(uint32_t src, uint32_t value) const {
  const TopologyShape& s = shape;
  EvPath p;
  p.t0_uplink = ev.u0(value);
  const uint32_t j = p.t0_uplink / s.lanes0;
  const uint32_t pod = src < s.hosts ? (src / s.t0_down) / s.t0_per_pod : 0;
  p.t1 = pod * s.t1_per_pod + j;
  if (s.three_tier) {
    p.t1_uplink = ev.u1(value);
    p.t2 = j * s.t2_per_group + p.t1_uplink / s.lanes1;
  }
  return p;
}

Fabric::Impl::NetState Fabric::Impl::snapshot() const {
  NetState st;
  st.link_up.resize(links.size());
  for (size_t i = 0; i < links.size(); ++i) st.link_up[i] = links[i].up;
  st.switch_up.resize(nswitches);
  for (uint32_t i = 0; i < nswitches; ++i) st.switch_up[i] = switches[i].up();
  return st;
}

// Recomputes, as BGP would have converged, the next hops every switch may use
// towards every destination T0 given `st`, and installs them where they
// differ from the default equal-cost sets.
void Fabric::Impl::reconverge(const NetState& st) {
  const TopologyShape& s = shape;
  using T = SwitchRef::Tier;
  auto link_ok = [&](uint32_t l) { return st.link_up[l] != 0; };
  auto sw_ok = [&](uint32_t plane, T tier, uint32_t i) { return st.switch_up[switch_id(plane, tier, i)] != 0; };
  const uint32_t nd = s.t0_count;

  struct Overrides {
    std::vector<int32_t> index;
    std::vector<std::vector<uint16_t>> sets;
    std::map<std::vector<uint16_t>, int32_t> dedup;
    void add(uint32_t nd_total, uint32_t d, std::vector<uint16_t>&& set) {
      if (index.empty()) index.assign(nd_total, -1);
      auto [it, fresh] = dedup.emplace(set, static_cast<int32_t>(sets.size()));
      if (fresh) sets.push_back(std::move(set));
      index[d] = it->second;
    }
  };
  std::vector<uint16_t> cand;
  // Every process computes every switch's routes from the same state (the
  // links' and switches' up flags, kept for every element), and installs
  // those of the switches it built.
  auto set_overrides = [this](uint32_t id, Overrides& ov) {
    if (switches[id].built()) switches[id].set_ecmp_overrides(std::move(ov.index), std::move(ov.sets));
  };

  for (uint32_t plane = 0; plane < s.planes; ++plane) {
    // T1 x down to T0 d of its pod: live lanes.
    auto t1_down_lanes = [&](uint32_t x, uint32_t d, std::vector<uint16_t>* out) {
      const uint32_t j = x % s.t1_per_pod;
      bool any = false;
      if (!sw_ok(plane, T::t1, x) || !sw_ok(plane, T::t0, d)) return false;
      for (uint32_t l = 0; l < s.lanes0; ++l) {
        if (!link_ok(t0t1_link(plane, d, j * s.lanes0 + l))) continue;
        any = true;
        if (out) out->push_back(static_cast<uint16_t>((d % s.t0_per_pod) * s.lanes0 + l));
      }
      return any;
    };
    // T2 z down towards T0 d: live lanes to T1 (pod of d, group of z) that reaches d.
    auto t2_lanes = [&](uint32_t z, uint32_t d, std::vector<uint16_t>* out) {
      const uint32_t j = z / s.t2_per_group, m = z % s.t2_per_group, dpod = d / s.t0_per_pod;
      const uint32_t x = dpod * s.t1_per_pod + j;
      if (!sw_ok(plane, T::t2, z) || !t1_down_lanes(x, d, nullptr)) return false;
      bool any = false;
      for (uint32_t l = 0; l < s.lanes1; ++l) {
        if (!link_ok(t1t2_link(plane, x, m * s.lanes1 + l))) continue;
        any = true;
        if (out) out->push_back(static_cast<uint16_t>(dpod * s.lanes1 + l));
      }
      return any;
    };
    std::vector<uint8_t> t2_reach;  // [z * nd + d]
    if (s.three_tier) {
      t2_reach.assign(size_t{s.t2_count} * nd, 0);
      for (uint32_t z = 0; z < s.t2_count; ++z)
        for (uint32_t d = 0; d < nd; ++d) t2_reach[size_t{z} * nd + d] = t2_lanes(z, d, nullptr);
    }
    // T1 x up towards T0 d of another pod: live uplinks to T2s that reach d.
    auto t1_up_ports = [&](uint32_t x, uint32_t d, std::vector<uint16_t>* out) {
      const uint32_t j = x % s.t1_per_pod;
      if (!sw_ok(plane, T::t1, x)) return false;
      bool any = false;
      for (uint32_t k = 0; k < s.t1_up; ++k) {
        const uint32_t z = j * s.t2_per_group + k / s.lanes1;
        if (!link_ok(t1t2_link(plane, x, k)) || !t2_reach[size_t{z} * nd + d]) continue;
        any = true;
        if (out) out->push_back(static_cast<uint16_t>(s.t1_down + k));
      }
      return any;
    };
    auto t1_reaches = [&](uint32_t x, uint32_t d) {
      return (x / s.t1_per_pod == d / s.t0_per_pod) ? t1_down_lanes(x, d, nullptr) : t1_up_ports(x, d, nullptr);
    };
    std::vector<uint8_t> t1_reach(size_t{s.t1_count} * nd, 0);
    for (uint32_t x = 0; x < s.t1_count; ++x)
      for (uint32_t d = 0; d < nd; ++d) t1_reach[size_t{x} * nd + d] = t1_reaches(x, d);

    for (uint32_t t = 0; t < s.t0_count; ++t) {
      Overrides ov;
      const uint32_t pod = t / s.t0_per_pod;
      for (uint32_t d = 0; d < nd; ++d) {
        if (d == t) continue;
        cand.clear();
        for (uint32_t u = 0; u < s.t0_up; ++u) {
          const uint32_t x = pod * s.t1_per_pod + u / s.lanes0;
          if (link_ok(t0t1_link(plane, t, u)) && t1_reach[size_t{x} * nd + d])
            cand.push_back(static_cast<uint16_t>(s.t0_down + u));
        }
        if (cand.size() != s.t0_up) ov.add(nd, d, std::move(cand));
        cand = {};
      }
      set_overrides(switch_id(plane, T::t0, t), ov);
    }
    for (uint32_t x = 0; x < s.t1_count; ++x) {
      Overrides ov;
      const uint32_t pod = x / s.t1_per_pod;
      for (uint32_t d = 0; d < nd; ++d) {
        cand.clear();
        const bool local = d / s.t0_per_pod == pod;
        if (local)
          t1_down_lanes(x, d, &cand);
        else
          t1_up_ports(x, d, &cand);
        if (cand.size() != (local ? s.lanes0 : s.t1_up)) ov.add(nd, d, std::move(cand));
        cand = {};
      }
      set_overrides(switch_id(plane, T::t1, x), ov);
    }
    for (uint32_t z = 0; z < s.t2_count; ++z) {
      Overrides ov;
      for (uint32_t d = 0; d < nd; ++d) {
        cand.clear();
        t2_lanes(z, d, &cand);
        if (cand.size() != s.lanes1) ov.add(nd, d, std::move(cand));
        cand = {};
      }
      set_overrides(switch_id(plane, T::t2, z), ov);
    }
  }
}

}  // namespace mrc::sim
