// SPDX-License-Identifier: BSD-2-Clause
// mrc-sim: packet-level simulation of multi-plane AI fabrics with the real
// MRC protocol core on every NIC.
//
// With no arguments it runs the default scenario: a 2-tier cluster with 8
// planes x 100 Gb/s per NIC runs training steps of ring all-reduce while a T1
// switch reboots and a NIC-T0 link flaps, once per transport under test, and
// prints the results side by side. docs/mrc-sim.md is the user guide.
#include <fmt/core.h>
#include <sched.h>
#include <unistd.h>

#include <fstream>
#include <new>
#include <string>

#include "mrc-sim/mpi_ranks.hpp"
#include "mrc-sim/options.hpp"
#include "mrc-sim/output.hpp"
#include "mrc-sim/progress.hpp"
#include "platform/os_error.hpp"
#include "platform/pcap_writer.hpp"
#include "sim/host/capture.hpp"

using namespace mrc;
using namespace mrc::sim;
using namespace mrc::sim::tool;

namespace {

// Writes one set of output files into `dir`; false (after a message) if any fails.
template <class Files>
bool write_all(const std::string& dir, const char* what, const Files& files) {
  std::string why;
  for (const auto& f : files) {
    if (!write_file(dir, f.name, f.text, &why)) {
      fmt::print(stderr, "mrc-sim: {}\n", why);
      return false;
    }
  }
  fmt::print("wrote {} {} files to {}\n", files.size(), what, dir);
  return true;
}

// MemAvailable of /proc/meminfo in bytes (what can be allocated without
// swapping), or 0 where it cannot be read: then no limit is applied.
uint64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

// CPUs this process may run on (its affinity mask: mpirun binds each rank to
// its share of the cores), or 0 where it cannot be read.
uint32_t available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return static_cast<uint32_t>(CPU_COUNT(&set));
}

int run_main(int argc, char** argv) {
  // Under mpirun (several ranks): every rank runs its share of the
  // partitions; rank 0 alone prints and writes the results.
  std::string why;
  std::unique_ptr<Ranks> ranks;
  if (launcher_ranks() > 1) {
    ranks = start_mpi(&argc, &argv, &why);
    if (!ranks) {
      fmt::print(stderr, "mrc-sim: started by mpirun under {} ranks, but {}\n", launcher_ranks(), why);
      return 2;
    }
  }
  const bool lead = !ranks || ranks->rank() == 0;
  SimOptions o;
  if (const int rc = parse_command_line(argc, argv, &o); rc >= 0) return rc;
  o.memory_available_bytes = available_memory_bytes();  // resolve() refuses what would not fit
  o.cpus_available = available_cpus();                  // --threads 0: at most one per CPU
  if (ranks) o.ranks = ranks->size();
  auto resolved = resolve(o, &why);
  if (!resolved) {
    if (lead) fmt::print(stderr, "mrc-sim: {}\n", why);
    return 2;
  }
  ResolvedRun& run = *resolved;
  if (ranks && ranks->size() > 1) {
    run.scenario.ranks = ranks.get();
    if (!lead) {
      for (const auto& t : run.transports) (void)run_scenario(run.scenario, t);
      return 0;
    }
  }
  fmt::print("{}", describe(o, run));

  // The progress bar goes to stderr only, and only on a terminal: stdout and
  // the output files stay identical for the same configuration and seed.
  std::vector<RunResult> results;
  const bool tty = isatty(2) && !o.quiet;
  ProgressBar bar(stderr);
  if (tty) run.scenario.progress = [&bar](const Progress& p) { bar.update(p); };
  bool ok = true;
  std::vector<std::string> captured;  // what the capture wrote, said after the table
  for (const auto& t : run.transports) {
    // --pcap: every packet leaving a NIC (or --pcap-host's), serialized
    // with the real codec (sim/host/capture.hpp), stamped with simulated time.
    std::unique_ptr<platform::PcapWriter> pcap;
    uint64_t unframed = 0;
    if (!o.pcap.empty()) {
      platform::PcapOptions po;
      po.max_packets = o.pcap_max_packets;
      auto w = platform::PcapWriter::open(pcap_file_for(o, t.name), po, &why);
      if (!w) {
        fmt::print(stderr, "mrc-sim: {}\n", why);
        return 1;
      }
      pcap = std::move(*w);
      run.scenario.packet_tap = [&pcap, &unframed, host = o.pcap_host, max = o.pcap_max_packets,
                                  frame = std::vector<uint8_t>()](
                                    Time now, uint32_t h, const Packet& p) mutable {
        if ((host != kAllHosts && h != host) || pcap->packets() >= max) return;
        if (!frame_packet(p, frame)) {
          ++unframed;
          return;
        }
        (void)pcap->write(static_cast<uint64_t>(now.ps() / 1000), frame);
      };
    }
    if (tty) bar.begin(t.name);
    results.push_back(run_scenario(run.scenario, t));
    if (tty) bar.finish(results.back().completed);
    if (pcap) {
      const uint64_t n = pcap->packets();
      if (Status s = pcap->close(); !s) {
        fmt::print(stderr, "mrc-sim: pcap: writing {} failed: {}\n", pcap->path(), platform::last_error_message());
        ok = false;
      }
      captured.push_back(fmt::format("wrote {} ({} packets{}{})", pcap->path(), n,
                                     n >= o.pcap_max_packets ? ", --pcap-max-packets reached" : "",
                                     unframed ? fmt::format(", {} not serializable", unframed) : ""));
      run.scenario.packet_tap = nullptr;
    }
  }
  fmt::print("{}", summary_table(results));
  if (!captured.empty()) fmt::print("\n");
  for (const auto& c : captured) fmt::print("{}\n", c);

  if (!o.json_out.empty() || !o.csv_dir.empty() || !o.svg_dir.empty()) fmt::print("\n");
  if (!o.json_out.empty()) {
    if (Status s = write_file("", o.json_out, results_json(results, o.seed), &why); !s) {
      fmt::print(stderr, "mrc-sim: {}\n", why);
      ok = false;
    } else {
      fmt::print("wrote {}\n", o.json_out);
    }
  }
  if (!o.csv_dir.empty()) ok = write_all(o.csv_dir, "CSV", csv_files(results)) && ok;
  if (!o.svg_dir.empty())
    ok = write_all(o.svg_dir, "SVG",
                   svg_files(results, SvgOptions{o.plot_from_us, o.plot_to_us,
                                                 static_cast<double>(run.scenario.topology.hosts) *
                                                     run.scenario.topology.num_planes() *
                                                     static_cast<double>(run.scenario.topology.host_link_bps) / 1e9})) &&
         ok;
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // The estimate can be wrong (a workload heavier than the model, or memory
  // taken by others since): running out still ends with a message and an
  // exit code, not an abort.
  try {
    return run_main(argc, argv);
  } catch (const std::bad_alloc&) {
    fmt::print(stderr,
               "mrc-sim: out of memory (std::bad_alloc) while building or running the simulation; make it "
               "smaller (--hosts, --planes, --evs-per-plane, --qps-per-peer) or run it on a larger machine\n");
    return 3;
  }
}
