// SPDX-License-Identifier: BSD-2-Clause
#include "mrcctl/ctl_file.hpp"

#include <fmt/format.h>

#include <bit>
#include <fstream>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "mrc_ctl.h"
#include "mrcctl/ctl_file_toml.hpp"

namespace mrcctl {

namespace {

// Limits the software device reports (mrc_ctl_query_device); the device
// checks them again, these give the message a line number.
constexpr uint64_t kMaxProfileId = 16;
constexpr size_t kMaxFields = 16;

/// Collects the first error with its place.
struct Reader {
  std::string name;
  std::string why;

  bool fail(const toml::node& at, const std::string& field, const std::string& msg) {
    if (why.empty()) why = fmt::format("{}:{}: {}: {}", name, at.source().begin.line, field, msg);
    return false;
  }

  /// Rejects keys the section does not know (a typo would otherwise be
  /// silently ignored).
  bool known_keys(const toml::table& t, const std::string& where, std::initializer_list<std::string_view> keys) {
    for (const auto& [k, v] : t) {
      bool ok = false;
      for (std::string_view s : keys) ok = ok || k.str() == s;
      if (!ok) return fail(v, where + "." + std::string(k.str()), "unknown key");
    }
    return true;
  }

  bool uint(const toml::table& t, const std::string& where, std::string_view key, uint64_t max, uint64_t& out,
            bool required) {
    const toml::node* n = t.get(key);
    const std::string field = where + "." + std::string(key);
    if (!n) {
      if (!required) return true;
      toml::node const& at = t;
      return fail(at, field, "missing");
    }
    auto v = n->value_exact<int64_t>();
    if (!v || *v < 0 || static_cast<uint64_t>(*v) > max)
      return fail(*n, field, fmt::format("must be an integer 0..{}", max));
    out = static_cast<uint64_t>(*v);
    return true;
  }

  bool state(const toml::table& t, const std::string& where, bool& online) {
    const toml::node* n = t.get("state");
    if (!n) return true;
    auto s = n->value_exact<std::string>();
    if (!s || (*s != "online" && *s != "offline")) return fail(*n, where + ".state", "must be \"online\" or \"offline\"");
    online = *s == "online";
    return true;
  }

  bool id(const toml::table& t, const std::string& where, uint64_t& out) {
    if (!uint(t, where, "id", kMaxProfileId, out, true)) return false;
    if (out == 0) return fail(*t.get("id"), where + ".id", "must be 1..16 (0 is the device default)");
    return true;
  }

  const toml::array* sections(const toml::table& root, std::string_view key) {
    const toml::node* n = root.get(key);
    if (!n) return nullptr;
    const toml::array* a = n->as_array();
    if (!a || !a->is_array_of_tables()) {
      fail(*n, std::string(key), fmt::format("must be an array of tables ([[{}]])", key));
      return nullptr;
    }
    return a;
  }
};

bool read_format(Reader& r, const toml::table& t, const std::string& w, FormatSpec& f) {
  if (!r.known_keys(t, w, {"id", "mode", "fields", "state"})) return false;
  if (!r.id(t, w, f.id) || !r.state(t, w, f.online)) return false;
  const toml::node* m = t.get("mode");
  auto ms = m ? m->value_exact<std::string>() : std::nullopt;
  if (!m) return r.fail(t, w + ".mode", "missing");
  if (ms == "udp") f.mode = kFmtUdp;
  else if (ms == "stev") f.mode = kFmtStev;
  else if (ms == "srv6") f.mode = kFmtSrv6;
  else return r.fail(*m, w + ".mode", "must be \"udp\", \"stev\" or \"srv6\"");
  const toml::node* fs = t.get("fields");
  if (!fs) return r.fail(t, w + ".fields", "missing");
  const toml::array* a = fs->as_array();
  if (!a || a->empty() || a->size() > kMaxFields) return r.fail(*fs, w + ".fields", "must be 1..16 field widths");
  for (size_t i = 0; i < a->size(); ++i) {
    auto v = (*a)[i].value_exact<int64_t>();
    if (!v || *v < 1 || *v > 64) return r.fail((*a)[i], fmt::format("{}.fields[{}]", w, i), "must be a width 1..64");
    f.widths.push_back(static_cast<uint32_t>(*v));
  }
  return true;
}

bool read_ev_profile(Reader& r, const toml::table& t, const std::string& w, EvProfileSpec& p) {
  if (!r.known_keys(t, w, {"id", "mode", "format", "count", "min_active", "events", "fields", "evs", "state"}))
    return false;
  if (!r.id(t, w, p.id) || !r.state(t, w, p.online)) return false;
  const toml::node* m = t.get("mode");
  if (!m) return r.fail(t, w + ".mode", "missing");
  auto ms = m->value_exact<std::string>();
  if (ms == "auto") p.mode = MRC_CTL_EV_MODE_AUTO;
  else if (ms == "exp") p.mode = MRC_CTL_EV_MODE_EXPLICIT;
  else if (ms == "gen") p.mode = MRC_CTL_EV_MODE_SRV6_GENERATED;
  else return r.fail(*m, w + ".mode", "must be \"auto\", \"exp\" or \"gen\"");
  const bool array = p.mode != MRC_CTL_EV_MODE_AUTO;
  uint64_t v = 0;
  if (!r.uint(t, w, "format", kMaxProfileId, p.format, array)) return false;
  if (!r.uint(t, w, "count", 1u << 20, v, array)) return false;
  p.count = static_cast<uint32_t>(v);
  v = 1;
  if (!r.uint(t, w, "min_active", 1u << 20, v, false)) return false;
  p.min_active = static_cast<uint32_t>(v);
  if (array && p.min_active > p.count) return r.fail(*t.get("min_active"), w + ".min_active", "must not exceed count");
  if (const toml::node* e = t.get("events")) {
    const toml::array* a = e->as_array();
    if (!a) return r.fail(*e, w + ".events", "must be an array of \"good\" / \"assumed_bad\"");
    for (size_t i = 0; i < a->size(); ++i) {
      auto s = (*a)[i].value_exact<std::string>();
      if (s == "good") p.event_mask |= MRC_CTL_EV_GOOD;
      else if (s == "assumed_bad") p.event_mask |= MRC_CTL_EV_ASSUMED_BAD;
      else return r.fail((*a)[i], fmt::format("{}.events[{}]", w, i), "must be \"good\" or \"assumed_bad\"");
    }
  }
  if (const toml::node* fs = t.get("fields")) {
    const toml::array* a = fs->as_array();
    if (!a || !a->is_array_of_tables() || a->size() > kMaxFields)
      return r.fail(*fs, w + ".fields", "must be 1..16 tables {width, init, min, max, mask}");
    for (size_t i = 0; i < a->size(); ++i) {
      const toml::table& ft = *(*a)[i].as_table();
      const std::string fw = fmt::format("{}.fields[{}]", w, i);
      if (!r.known_keys(ft, fw, {"width", "init", "min", "max", "mask"})) return false;
      FieldSpec f;
      uint64_t width = 0;
      if (!r.uint(ft, fw, "width", 32, width, true)) return false;
      if (width == 0) return r.fail(*ft.get("width"), fw + ".width", "must be 1..32");
      f.width = static_cast<uint32_t>(width);
      const uint64_t top = (uint64_t{1} << f.width) - 1;
      if (!r.uint(ft, fw, "init", top, f.init, false) || !r.uint(ft, fw, "mask", top, f.mask, false)) return false;
      const uint64_t span = (uint64_t{1} << std::popcount(f.mask)) - 1;
      if (!r.uint(ft, fw, "min", span, f.min, false) || !r.uint(ft, fw, "max", span, f.max, false)) return false;
      if (f.min > f.max) return r.fail(*ft.get("min"), fw + ".min", "must not exceed max");
      p.fields.push_back(f);
    }
  } else if (array) {
    return r.fail(t, w + ".fields", "missing");
  }
  const uint32_t bits = compact_bits(p.fields);
  if (bits > 64) return r.fail(*t.get("fields"), w + ".fields", "the masks select more than 64 bits");
  if (const toml::node* es = t.get("evs")) {
    if (p.mode != MRC_CTL_EV_MODE_EXPLICIT) return r.fail(*es, w + ".evs", "only an \"exp\" profile lists its EVs");
    const toml::array* a = es->as_array();
    if (!a || !a->is_array_of_tables()) return r.fail(*es, w + ".evs", "must be an array of tables {port, value}");
    for (size_t i = 0; i < a->size(); ++i) {
      const toml::table& et = *(*a)[i].as_table();
      const std::string ew = fmt::format("{}.evs[{}]", w, i);
      if (!r.known_keys(et, ew, {"port", "value"})) return false;
      uint64_t port = 0;
      EvSpec e;
      if (!r.uint(et, ew, "port", 32, port, true)) return false;
      if (port == 0) return r.fail(*et.get("port"), ew + ".port", "must be 1..32 (ports are 1-based)");
      const uint64_t top = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
      if (!r.uint(et, ew, "value", top, e.value, true)) return false;
      e.port = static_cast<uint8_t>(port);
      p.evs.push_back(e);
    }
    if (p.evs.size() != p.count)
      return r.fail(*es, w + ".evs", fmt::format("lists {} EVs; count is {}", p.evs.size(), p.count));
  } else if (p.mode == MRC_CTL_EV_MODE_EXPLICIT && p.online) {
    return r.fail(t, w + ".evs", "missing (an \"exp\" profile goes online only with every EV given)");
  }
  return true;
}

bool read_cc_profile(Reader& r, const toml::table& t, const std::string& w, CcProfileSpec& c) {
  if (!r.known_keys(t, w, {"id", "algorithm", "base_rtt_ns", "target_qdelay_ns", "max_cwnd_bytes", "state"}))
    return false;
  if (!r.id(t, w, c.id) || !r.state(t, w, c.online)) return false;
  const toml::node* a = t.get("algorithm");
  if (!a) return r.fail(t, w + ".algorithm", "missing");
  auto s = a->value_exact<std::string>();
  if (s != "uet-1.0-nscc" && s != "none") return r.fail(*a, w + ".algorithm", "must be \"uet-1.0-nscc\" or \"none\"");
  c.nscc = s == "uet-1.0-nscc";
  uint64_t v = 0;
  if (!r.uint(t, w, "base_rtt_ns", UINT32_MAX, v, false)) return false;
  c.base_rtt_ns = static_cast<uint32_t>(v);
  v = 0;
  if (!r.uint(t, w, "target_qdelay_ns", UINT32_MAX, v, false)) return false;
  c.target_qdelay_ns = static_cast<uint32_t>(v);
  v = 0;
  if (!r.uint(t, w, "max_cwnd_bytes", UINT32_MAX, v, false)) return false;
  c.max_cwnd_bytes = static_cast<uint32_t>(v);
  return true;
}

template <class Spec, class Read>
bool read_all(Reader& r, const toml::table& root, std::string_view key, std::vector<Spec>& out, Read read) {
  const toml::array* a = r.sections(root, key);
  if (!a) return r.why.empty();
  std::set<uint64_t> ids;
  for (size_t i = 0; i < a->size(); ++i) {
    const std::string w = fmt::format("{}[{}]", key, i);
    Spec s;
    if (!read(r, *(*a)[i].as_table(), w, s)) return false;
    if (!ids.insert(s.id).second) return r.fail(*(*a)[i].as_table()->get("id"), w + ".id", "defined twice");
    out.push_back(std::move(s));
  }
  return true;
}

}  // namespace

uint32_t compact_bits(const std::vector<FieldSpec>& fields) {
  uint32_t n = 0;
  for (const FieldSpec& f : fields) n += static_cast<uint32_t>(std::popcount(f.mask));
  return n;
}

void encode_compact(uint64_t value, uint32_t bits, uint8_t (&out)[32]) {
  std::fill(std::begin(out), std::end(out), uint8_t{0});
  for (uint32_t j = 0; j < bits && j < 256; ++j)
    if (value >> (bits - 1 - j) & 1u) out[j / 8] |= static_cast<uint8_t>(0x80u >> (j % 8));
}

uint64_t decode_compact(const uint8_t (&in)[32], uint32_t bits) {
  uint64_t v = 0;
  for (uint32_t j = 0; j < bits && j < 64; ++j) v = v << 1 | ((in[j / 8] >> (7 - j % 8)) & 1u);
  return v;
}

bool parse_ctl_file(const std::string& text, const std::string& name, CtlFile& out, std::string& why) {
  out = CtlFile{};
  toml::table root;
  try {
    root = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    why = fmt::format("{}:{}: {}", name, e.source().begin.line, e.description());
    return false;
  }
  Reader r{name, {}};
  if (!r.known_keys(root, "file", {"format", "ev_profile", "cc_profile"})) {
    why = r.why;
    return false;
  }
  return read_ctl_tables(root, name, out, why);
}

bool read_ctl_tables(const toml::table& root, const std::string& name, CtlFile& out, std::string& why) {
  out = CtlFile{};
  Reader r{name, {}};
  const bool ok = read_all(r, root, "format", out.formats, read_format) &&
                  read_all(r, root, "ev_profile", out.ev_profiles, read_ev_profile) &&
                  read_all(r, root, "cc_profile", out.cc_profiles, read_cc_profile);
  if (!ok) why = r.why;
  return ok;
}

bool load_ctl_file(const std::string& path, CtlFile& out, std::string& why) {
  std::ifstream f(path);
  if (!f) {
    why = fmt::format("{}: cannot be read", path);
    return false;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_ctl_file(ss.str(), path, out, why);
}

}  // namespace mrcctl
