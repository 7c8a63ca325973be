// SPDX-License-Identifier: BSD-2-Clause
// TOML scenario files for mrc-sim (--config FILE). A file sets any of the
// settings the flags set, in sections:
//
//   [topology]        kind, routing, planes, hosts, t0_down, t0_up, t1, pods,
//                     t2, rate_gbps, fabric_rate_gbps, link_delay_ns,
//                     switch_latency_ns, reconverge_ms
//   [topology.queue]  the QueueConfig fields (data_bytes, ecn_kmin_bytes, ...)
//   [workload]        kind, bytes, steps, compute_us, fan_in, victim, cm
//   [[failure]]       one table per failure: spec = "<parse_failure text>",
//                     or kind = "..." and that kind's keys (times as strings
//                     with a unit: at = "3ms")
//   [run]             transports, seed, time_limit_ms, sample_us,
//                     qps_per_peer, evs_per_plane, mrc_qps_per_peer,
//                     roce_qps_per_peer, mrc_ack_timeout, roce_ack_timeout,
//                     mrc_retry_count, roce_retry_count, mtu, base_rtt_us,
//                     default_failures
//   [output]          json, csv, svg, quiet, series, plot_from_us, plot_to_us
//   [[format]], [[ev_profile]], [[cc_profile]]
//                     controller profiles, in mrcctl's shape and read by its
//                     reader (tools/mrcctl/ctl_file.hpp), into
//                     SimOptions::controller
//   [controller]      ev_profile, cc_profile: the profiles the MRC QPs use;
//                     hosts: on which hosts (default every host)
//
// The keys, their flags and the values they accept are the table in
// settings.hpp; docs/mrc-sim.md documents every key; examples/scenarios/
// holds examples.
#pragma once

#include <string>

#include "mrc-sim/options.hpp"
#include "util/result.hpp"

namespace mrc::sim::tool {

/// Loads the TOML scenario file at `path` into `o`: each key the file sets
/// replaces that setting, the others keep their values in `o`. [[failure]]
/// tables, if any, replace o->failures as a whole. A relative `cm` path is
/// taken relative to the file's directory; output paths relative to the
/// working directory.
///
/// Errors (Errc::not_found for an unreadable file, Errc::invalid_argument
/// otherwise) leave `o` partly updated; `why` then reads
/// "<path>:<line>: <what is wrong and the fix>", e.g.
///   topo.toml:7: [topology] unknown key 'host' (did you mean 'hosts'?)
///   topo.toml:3: [topology] 'hosts' must be an integer, not a string (e.g. hosts = 64)
/// for TOML syntax errors, unknown sections or keys, values of the wrong
/// type, out of range or not among the allowed choices, and failures that
/// parse_failure() rejects; errors in the profile tables are mrcctl's
/// reader's ("t.toml:6: ev_profile[0].events[0]: must be ..."). Whether the
/// settings fit together (the topology, failures naming existing links, the
/// profiles as the core's controller takes them) is checked later, by
/// resolve().
Status load_config_file(const std::string& path, SimOptions* o, std::string* why);

/// Same as load_config_file() on TOML `text`; `path` names it in messages
/// and anchors relative paths.
Status load_config_text(const std::string& text, const std::string& path, SimOptions* o, std::string* why);

}  // namespace mrc::sim::tool
