// SPDX-License-Identifier: BSD-2-Clause
// The table of mrc-sim's settings: for each one its scenario-file section and
// key, its command-line flag, its help text, the SimOptions field it sets and
// the rule its value must follow. The command line (options.cc) and the TOML
// scenario file (config_file.cc) are both built from this one table, so a
// setting is accepted or refused the same way, with the same words, whichever
// way it is given. Checks that involve several settings (the topology's shape,
// failures naming existing links, EVs per QP) stay in resolve().
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "mrc-sim/options.hpp"

namespace mrc::sim::tool {

/// The values one setting accepts. Which part applies depends on the type of
/// the field: integers use int_min..int_max, numbers min..max (min excluded
/// when min_open), strings and string lists `choices` (empty = any text).
struct Rule {
  uint64_t int_min = 0;
  uint64_t int_max = std::numeric_limits<uint64_t>::max();
  double min = 0;
  double max = std::numeric_limits<double>::max();
  bool min_open = false;
  std::vector<std::string> choices = {};
  std::vector<uint64_t> values = {};  ///< for integers: the only values accepted, if any
  /// Said after the range in messages and help, e.g. "0 = derived".
  const char* note = nullptr;
};

/// An integer from lo to hi (both included).
Rule integer(uint64_t lo, uint64_t hi, const char* note = nullptr);
/// A finite number from lo (excluded if open) to hi.
Rule number(double lo, double hi, bool open = false, const char* note = nullptr);
/// One of `names`.
Rule one_of(std::vector<std::string> names);
/// An integer among `values`.
Rule one_of_values(std::vector<uint64_t> values);
/// Any text (paths) or a boolean.
Rule any();

using Target = std::variant<uint32_t*, uint64_t*, double*, bool*, std::string*, std::vector<std::string>*>;

struct Setting {
  const char* section;  ///< scenario-file section, e.g. "topology.queue"
  const char* key;      ///< key in that section, e.g. "data_bytes"
  const char* flag;     ///< CLI11 flag name ("--hosts", "!--no-default-failures"); nullptr = file only
  const char* help;     ///< --help text (the accepted range is added to it)
  Target target;
  Rule rule;
};

/// Every setting, in the scenario file's order, bound to `o`'s fields.
std::vector<Setting> settings(SimOptions& o);

/// The transports transport_by_name() knows (kTransportNames as a list).
const std::vector<std::string>& transport_names();

/// What `s` accepts, e.g. "an integer from 2 to 1048576", "a number > 0 and
/// <= 10000 (0 = ...)", "one of srv6, ecmp".
std::string accepted(const Setting& s);

/// Why a value is refused for `s`, or "" if it is accepted. `shown` is the
/// value as the user wrote it; the message starts with it, e.g.
/// "-5 is out of range (an integer from 1 to 2147483648)" or
/// "\"clos\" is not one of clos2, fattree2, fattree3 (did you mean 'clos2'?)".
std::string check_integer(const Setting& s, int64_t v, const std::string& shown);
std::string check_number(const Setting& s, double v, const std::string& shown);
std::string check_choice(const Setting& s, const std::string& v, const std::string& shown);

/// The same checks on a command-line value, parsed strictly for the field's
/// type (an integer field takes digits only, a number field a finite number).
/// For a string-list field `text` is one element.
std::string check_text(const Setting& s, std::string_view text);

/// " (did you mean 'x'?)" for the candidate closest to `name` within two
/// edits, else "".
std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace mrc::sim::tool
