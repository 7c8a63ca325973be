// SPDX-License-Identifier: BSD-2-Clause
#include "mrc-sim/config_file.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <variant>

#include "mrc-sim/settings.hpp"
#include "mrc_ctl.h"
#include "mrcctl/ctl_file_toml.hpp"
#include "sim/scenario/failures.hpp"

namespace mrc::sim::tool {

namespace {

struct Section {
  std::string name;  ///< as written in the file's header, e.g. "topology.queue"
  std::vector<Setting> fields;
};

// Failure keys in the order parse_failure's text form writes them, so a
// failure given as keys reads like the same failure given as `spec`.
const std::vector<std::string> kFailureKeys = {"kind", "tier", "plane", "a",   "b",     "index",  "host", "ev",   "port",
                                               "p",    "gbps", "at",    "for", "until", "period", "duty"};
const std::vector<std::string> kFailureTimeKeys = {"at", "for", "until", "period"};
const std::vector<std::string> kFailureIntKeys = {"plane", "a", "b", "index", "host", "ev", "port"};
/// Keys that name one thing: no "*" group.
const std::vector<std::string> kFailureSingleKeys = {"host", "ev", "port"};
const std::vector<std::string> kFailureNumberKeys = {"p", "gbps", "duty"};
const std::vector<std::string> kFailureKinds = {"link-down", "link-flap", "switch-down", "loss", "rate",
                                                "deny",      "allow",     "port-disable", "port-enable"};

/// The settings table (settings.hpp) grouped by section, in its order.
std::vector<Section> sections(SimOptions& o) {
  std::vector<Section> out;
  for (Setting& s : settings(o)) {
    if (out.empty() || out.back().name != s.section) out.push_back(Section{s.section, {}});
    out.back().fields.push_back(std::move(s));
  }
  return out;
}

const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a floating-point number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date/time";
  }
}

/// Collects the first error with its line; later checks are skipped.
class Loader {
 public:
  Loader(std::string path, SimOptions* o) : path_(std::move(path)), o_(o) {}

  bool load(const toml::table& root) {
    auto secs = sections(*o_);
    std::vector<std::string> section_names;
    for (const auto& s : secs)
      if (std::string(s.name).find('.') == std::string::npos) section_names.push_back(s.name);
    section_names.push_back("failure");
    for (const char* s : {"controller", "format", "ev_profile", "cc_profile"}) section_names.push_back(s);
    bool profiles = false;
    for (auto&& [k, v] : root) {
      const std::string key(k.str());
      if (key == "failure") {
        if (!load_failures(v)) return false;
        continue;
      }
      if (key == "format" || key == "ev_profile" || key == "cc_profile") {
        profiles = true;  // read below, by mrcctl's reader
        continue;
      }
      if (key == "controller") {
        if (!v.is_table()) return error(v.source(), "'controller' must be a section: [controller]");
        if (!load_controller(*v.as_table())) return false;
        continue;
      }
      const Section* sec = find_section(secs, key);
      if (!sec) {
        if (!v.is_table()) {
          const std::string home = section_of(secs, key);
          return error(k.source(), fmt::format("'{}' must be inside a section{}", key,
                                               home.empty() ? fmt::format(" ({})", sections_list(section_names))
                                                            : " (it belongs in [" + home + "])"));
        }
        const std::string hint = did_you_mean(key, section_names);
        return error(k.source(), fmt::format("unknown section [{}]{}", key,
                                             hint.empty() ? fmt::format(" ({})", sections_list(section_names)) : hint));
      }
      if (!v.is_table()) return error(v.source(), fmt::format("'{}' must be a section: [{}]", key, key));
      if (!load_section(secs, *sec, *v.as_table())) return false;
    }
    if (profiles && !load_profiles(root)) return false;
    return true;
  }

  const std::string& why() const { return why_; }

 private:
  static const Section* find_section(const std::vector<Section>& secs, const std::string& name) {
    for (const auto& s : secs)
      if (name == s.name) return &s;
    return nullptr;
  }

  static std::string sections_list(const std::vector<std::string>& names) {
    std::vector<std::string> shown;
    for (const auto& n : names)
      shown.push_back(n == "failure" || n == "format" || n == "ev_profile" || n == "cc_profile" ? "[[" + n + "]]"
                                                                                                 : "[" + n + "]");
    return fmt::format("sections: {}", fmt::join(shown, ", "));
  }

  /// The section that has `key`, for a key written in the wrong place.
  static std::string section_of(const std::vector<Section>& secs, const std::string& key) {
    for (const auto& s : secs)
      for (const auto& f : s.fields)
        if (key == f.key) return s.name;
    return {};
  }

  /// Records the error at `at`'s line; returns false for `return error(...)`.
  bool error(const toml::source_region& at, const std::string& msg) {
    why_ = fmt::format("{}:{}: {}", path_, at.begin.line, msg);
    return false;
  }

  bool load_section(const std::vector<Section>& secs, const Section& sec, const toml::table& t) {
    std::vector<std::string> keys;
    for (const auto& f : sec.fields) keys.push_back(f.key);
    const std::string sub_prefix = std::string(sec.name) + ".";
    for (const auto& s : secs)
      if (std::string(s.name).rfind(sub_prefix, 0) == 0) keys.push_back(std::string(s.name).substr(sub_prefix.size()));
    for (auto&& [k, v] : t) {
      const std::string key(k.str());
      if (const Section* sub = find_section(secs, sub_prefix + key)) {
        if (!v.is_table())
          return error(v.source(), fmt::format("[{}] '{}' must be a table: [{}.{}]", sec.name, key, sec.name, key));
        if (!load_section(secs, *sub, *v.as_table())) return false;
        continue;
      }
      const auto f = std::find_if(sec.fields.begin(), sec.fields.end(), [&](const Setting& x) { return key == x.key; });
      if (f == sec.fields.end()) {
        std::string hint = did_you_mean(key, keys);
        if (hint.empty()) {
          const std::string home = section_of(secs, key);
          hint = home.empty() ? fmt::format(" (keys: {})", fmt::join(keys, ", ")) : " (it belongs in [" + home + "])";
        }
        return error(k.source(), fmt::format("[{}] unknown key '{}'{}", sec.name, key, hint));
      }
      if (!set(sec, *f, v)) return false;
    }
    return true;
  }

  /// "(e.g. key = <current value>)": the setting's value before the file,
  /// written as TOML, as a template for the fix.
  static std::string example(const Setting& f) {
    return std::visit(
        [&](auto* p) -> std::string {
          using T = std::remove_pointer_t<decltype(p)>;
          if constexpr (std::is_same_v<T, std::string>) {
            return fmt::format("{} = \"{}\"", f.key, f.rule.choices.empty() ? *p : f.rule.choices.front());
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            std::vector<std::string> q;
            for (const auto& s : *p) q.push_back("\"" + s + "\"");
            return fmt::format("{} = [{}]", f.key, fmt::join(q, ", "));
          } else if constexpr (std::is_same_v<T, bool>) {
            return fmt::format("{} = {}", f.key, *p ? "true" : "false");
          } else {
            return fmt::format("{} = {}", f.key, *p);
          }
        },
        f.target);
  }

  bool wrong_type(const Section& sec, const Setting& f, const toml::node& v, const char* want) {
    return error(v.source(), fmt::format("[{}] '{}' must be {}, not {} (e.g. {})", sec.name, f.key, want, type_name(v),
                                         example(f)));
  }

  /// Records a refusal from the shared rule (settings.hpp): "[sec] key = <why>".
  bool refused(const Section& sec, const Setting& f, const toml::node& at, const std::string& why) {
    return error(at.source(), fmt::format("[{}] {} = {}", sec.name, f.key, why));
  }

  bool set(const Section& sec, const Setting& f, const toml::node& v) {
    return std::visit(
        [&](auto* p) -> bool {
          using T = std::remove_pointer_t<decltype(p)>;
          if constexpr (std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>) {
            if (!v.is_integer()) return wrong_type(sec, f, v, "an integer");
            const int64_t x = v.as_integer()->get();
            if (const std::string why = check_integer(f, x, fmt::format("{}", x)); !why.empty())
              return refused(sec, f, v, why);
            *p = static_cast<T>(x);  // the rule's range fits T (settings.cc)
            return true;
          } else if constexpr (std::is_same_v<T, double>) {
            double x = 0;
            std::string shown;
            if (v.is_integer()) {
              x = static_cast<double>(v.as_integer()->get());
              shown = fmt::format("{}", v.as_integer()->get());
            } else if (v.is_floating_point()) {
              x = v.as_floating_point()->get();
              shown = fmt::format("{}", x);
            } else {
              return wrong_type(sec, f, v, "a number");
            }
            if (const std::string why = check_number(f, x, shown); !why.empty()) return refused(sec, f, v, why);
            *p = x;
            return true;
          } else if constexpr (std::is_same_v<T, bool>) {
            if (!v.is_boolean()) return wrong_type(sec, f, v, "true or false");
            *p = v.as_boolean()->get();
            return true;
          } else if constexpr (std::is_same_v<T, std::string>) {
            if (!v.is_string()) return wrong_type(sec, f, v, "a string");
            std::string s = v.as_string()->get();
            if (const std::string why = check_choice(f, s, "\"" + s + "\""); !why.empty())
              return refused(sec, f, v, why);
            if (std::string_view(f.key) == "cm" && !s.empty() && std::filesystem::path(s).is_relative())
              s = (std::filesystem::path(path_).parent_path() / s).string();  // beside the scenario file
            *p = s;
            return true;
          } else {
            if (!v.is_array()) return wrong_type(sec, f, v, "an array of strings");
            std::vector<std::string> out;
            for (const toml::node& e : *v.as_array()) {
              if (!e.is_string()) return wrong_type(sec, f, e, "an array of strings");
              out.push_back(e.as_string()->get());
              if (const std::string why = check_choice(f, out.back(), "\"" + out.back() + "\""); !why.empty())
                return error(e.source(), fmt::format("[{}] {}: {}", sec.name, f.key, why));
            }
            *p = std::move(out);
            return true;
          }
        },
        f.target);
  }

  /// [controller]: which profiles the MRC QPs use, and on which hosts.
  bool load_controller(const toml::table& t) {
    ControllerPlan& plan = o_->controller;
    const std::vector<std::string> keys = {"ev_profile", "cc_profile", "hosts"};
    for (auto&& [k, v] : t) {
      const std::string key(k.str());
      if (key == "ev_profile" || key == "cc_profile") {
        if (!v.is_integer() || v.as_integer()->get() < 0 || v.as_integer()->get() > 16)
          return error(v.source(), fmt::format("[controller] '{}' must be a profile id 1..16 (0 = none), not {} "
                                               "(e.g. {} = 1)",
                                               key, v.is_integer() ? fmt::format("{}", v.as_integer()->get())
                                                                   : std::string(type_name(v)),
                                               key));
        (key == "ev_profile" ? plan.ev_profile : plan.cc_profile) = static_cast<uint64_t>(v.as_integer()->get());
      } else if (key == "hosts") {
        const toml::array* a = v.as_array();
        if (!a) return error(v.source(), "[controller] 'hosts' must be an array of host numbers (e.g. hosts = [0, 5])");
        plan.hosts.clear();
        for (const toml::node& e : *a) {
          if (!e.is_integer() || e.as_integer()->get() < 0)
            return error(e.source(), "[controller] hosts: each must be a host number >= 0 (e.g. hosts = [0, 5])");
          plan.hosts.push_back(static_cast<uint32_t>(e.as_integer()->get()));
        }
      } else {
        std::string hint = did_you_mean(key, keys);
        if (hint.empty()) hint = fmt::format(" (keys: {})", fmt::join(keys, ", "));
        return error(k.source(), fmt::format("[controller] unknown key '{}'{}", key, hint));
      }
    }
    return true;
  }

  /// [[format]], [[ev_profile]], [[cc_profile]]: mrcctl's controller file
  /// tables, read by its reader (messages "file:line: ev_profile[0].count:
  /// ..."), into the plan in the core's terms (the C API's bit values are
  /// the core's).
  bool load_profiles(const toml::table& root) {
    mrcctl::CtlFile cf;
    std::string msg;
    if (!mrcctl::read_ctl_tables(root, path_, cf, msg)) {
      why_ = msg;
      return false;
    }
    ControllerPlan& plan = o_->controller;
    plan.formats.clear();
    plan.ev_profiles.clear();
    plan.cc_profiles.clear();
    // The file's format modes are the core's bits (mrcctl::kFmt*).
    static_assert(mrcctl::kFmtStev == core::ctl::fmt_mode::kStev && mrcctl::kFmtSrv6 == core::ctl::fmt_mode::kSrv6 &&
                  mrcctl::kFmtUdp == core::ctl::fmt_mode::kUdp);
    for (const auto& f : cf.formats) plan.formats.push_back(CtlFormatSpec{f.id, f.mode, f.widths, f.online});
    for (const auto& p : cf.ev_profiles) {
      CtlEvProfileSpec s;
      s.id = p.id;
      // The file's mode is the C API's (enum mrc_ctl_ev_mode); the
      // simulator's controller takes the core's bits.
      s.mode = p.mode == MRC_CTL_EV_MODE_EXPLICIT         ? core::ctl::ev_mode::kExp
               : p.mode == MRC_CTL_EV_MODE_SRV6_GENERATED ? core::ctl::ev_mode::kGen
                                                          : core::ctl::ev_mode::kAuto;
      s.format = p.format;
      s.count = p.count;
      s.min_active = p.min_active;
      s.event_mask = p.event_mask;
      for (const auto& f : p.fields) s.fields.push_back(core::ctl::Field{f.width, f.init, f.min, f.max, f.mask});
      for (const auto& e : p.evs) s.evs.emplace_back(e.port, e.value);
      s.online = p.online;
      plan.ev_profiles.push_back(std::move(s));
    }
    for (const auto& c : cf.cc_profiles) {
      CtlCcProfileSpec s;
      s.id = c.id;
      s.nscc = c.nscc;
      // As mrc_ctl_cc_nscc_cfg's fields reach the core (src/api/ctl.cc).
      s.config.base_rtt = Duration::ns(c.base_rtt_ns);
      s.config.target_delay = Duration::ns(c.target_qdelay_ns);
      s.config.max_cwnd = c.max_cwnd_bytes;
      s.online = c.online;
      plan.cc_profiles.push_back(s);
    }
    return true;
  }

  bool load_failures(const toml::node& v) {
    if (!v.is_array_of_tables())
      return error(v.source(), "'failure' must be an array of tables: write each failure as [[failure]]");
    std::vector<std::string> texts;
    size_t n = 0;
    for (const toml::node& e : *v.as_array()) {
      ++n;
      const toml::table& t = *e.as_table();
      std::string text;
      if (!failure_text(t, n, &text)) return false;
      std::string msg;
      if (!parse_failure(text, &msg)) return error(t.source(), fmt::format("[[failure]] {}: {}", n, msg));
      texts.push_back(text);
    }
    o_->failures = texts;
    return true;
  }

  /// The parse_failure text of one [[failure]] table.
  bool failure_text(const toml::table& t, size_t n, std::string* text) {
    const std::string where = fmt::format("[[failure]] {}", n);
    if (const toml::node* spec = t.get("spec")) {
      if (!spec->is_string())
        return error(spec->source(), fmt::format("{}: 'spec' must be a string, not {} (e.g. spec = "
                                                 "\"switch-down:tier=t1,plane=0,index=1,at=3ms,for=1ms\")",
                                                 where, type_name(*spec)));
      if (t.size() > 1)
        return error(t.source(), fmt::format("{}: give either spec = \"...\" or kind = \"...\" with its keys, "
                                             "not both",
                                             where));
      *text = spec->as_string()->get();
      return true;
    }
    for (auto&& [k, v] : t) {
      const std::string key(k.str());
      if (std::find(kFailureKeys.begin(), kFailureKeys.end(), key) == kFailureKeys.end()) {
        std::vector<std::string> keys = kFailureKeys;
        keys.insert(keys.begin(), "spec");
        std::string hint = did_you_mean(key, keys);
        if (hint.empty()) hint = fmt::format(" (keys: {})", fmt::join(keys, ", "));
        return error(k.source(), fmt::format("{}: unknown key '{}'{}", where, key, hint));
      }
    }
    const toml::node* kind = t.get("kind");
    if (!kind)
      return error(t.source(), fmt::format("{}: needs kind = \"...\" ({}) or spec = \"...\"", where,
                                           fmt::join(kFailureKinds, ", ")));
    if (!kind->is_string())
      return error(kind->source(), fmt::format("{}: 'kind' must be a string, not {} (e.g. kind = \"switch-down\")",
                                               where, type_name(*kind)));
    std::string out = std::string(kind->as_string()->get()) + ":";
    bool first = true;
    for (const auto& key : kFailureKeys) {
      if (key == "kind") continue;
      const toml::node* v = t.get(key);
      if (!v) continue;
      std::string value;
      auto is = [&](const std::vector<std::string>& set) {
        return std::find(set.begin(), set.end(), key) != set.end();
      };
      if (is(kFailureTimeKeys)) {
        if (!v->is_string())
          return error(v->source(), fmt::format("{}: '{}' is a time: write it as a string with a unit, e.g. "
                                                "{} = \"3ms\" (ps, ns, us, ms, s)",
                                                where, key, key));
        value = v->as_string()->get();
      } else if (is(kFailureIntKeys)) {
        const bool single = is(kFailureSingleKeys);
        const bool all = v->is_string() && v->as_string()->get() == "*" && !single;
        if (!all && (!v->is_integer() || v->as_integer()->get() < 0))
          return error(v->source(), fmt::format("{}: '{}' must be an integer >= 0{}, not {} (e.g. {} = 1)", where, key,
                                                single ? "" : " or \"*\" (all)", type_name(*v), key));
        value = all ? "*" : fmt::format("{}", v->as_integer()->get());
      } else if (is(kFailureNumberKeys)) {
        if (v->is_integer()) value = fmt::format("{}", v->as_integer()->get());
        else if (v->is_floating_point()) value = fmt::format("{}", v->as_floating_point()->get());
        else
          return error(v->source(), fmt::format("{}: '{}' must be a number, not {} (e.g. {} = 0.5)", where, key,
                                                type_name(*v), key));
      } else {  // tier
        if (!v->is_string())
          return error(v->source(), fmt::format("{}: '{}' must be a string, not {} (e.g. {} = \"t1\")", where, key,
                                                type_name(*v), key));
        value = v->as_string()->get();
      }
      out += (first ? "" : ",") + key + "=" + value;
      first = false;
    }
    *text = out;
    return true;
  }

  std::string path_;
  SimOptions* o_;
  std::string why_;
};

}  // namespace

Status load_config_text(const std::string& text, const std::string& path, SimOptions* o, std::string* why) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    if (why) *why = fmt::format("{}:{}:{}: {}", path, e.source().begin.line, e.source().begin.column, e.description());
    return Errc::invalid_argument;
  }
  Loader loader(path, o);
  if (!loader.load(root)) {
    if (why) *why = loader.why();
    return Errc::invalid_argument;
  }
  return {};
}

Status load_config_file(const std::string& path, SimOptions* o, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (why) *why = path + ": cannot open the scenario file";
    return Errc::not_found;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return load_config_text(ss.str(), path, o, why);
}

}  // namespace mrc::sim::tool
