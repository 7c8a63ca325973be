// SPDX-License-Identifier: BSD-2-Clause
// PcapWriter: writes packets to a classic libpcap capture file, for Wireshark
// and tshark (docs/wireshark.md).
//
// Format (written here directly; no libpcap): the 24-byte global header with
// the nanosecond-resolution magic 0xa1b23c4d, version 2.4, the snapshot
// length and the link type, then per packet a 16-byte record header
// (seconds, nanoseconds, captured length, original length) and the captured
// bytes. Every field is written little-endian (readers detect the byte order
// from the magic). Nanosecond timestamps keep simulated times exact to the
// nanosecond.
//
// Records are whole IP packets (LINKTYPE_RAW: the first nibble says IPv4 or
// IPv6), which is what the software device and the simulator capture: they
// have no Ethernet header to show.
//
// Thread safety: write() may be called from any number of threads; records
// never interleave. Buffered: the file is complete after flush() or
// destruction.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "util/result.hpp"

namespace mrc::platform {

/// Link types (tcpdump.org "link-layer header types").
inline constexpr uint32_t kLinktypeRaw = 101;   ///< raw IPv4 or IPv6, by the version nibble
inline constexpr uint32_t kLinktypeIpv4 = 228;
inline constexpr uint32_t kLinktypeIpv6 = 229;

/// Magic of a nanosecond-resolution pcap file, as a 32-bit value.
inline constexpr uint32_t kPcapMagicNs = 0xa1b23c4d;
inline constexpr size_t kPcapGlobalHeaderBytes = 24;
inline constexpr size_t kPcapRecordHeaderBytes = 16;

/// Writes the global header of a nanosecond pcap file into `out`.
void encode_pcap_global_header(uint32_t snaplen, uint32_t linktype, uint8_t (&out)[kPcapGlobalHeaderBytes]);

/// Writes a record header: timestamp `ts_ns` (nanoseconds since the epoch the
/// capture uses: the Unix epoch for real captures, time 0 for simulations),
/// `caplen` bytes follow, the packet had `origlen`.
void encode_pcap_record_header(uint64_t ts_ns, uint32_t caplen, uint32_t origlen,
                               uint8_t (&out)[kPcapRecordHeaderBytes]);

struct PcapOptions {
  /// Bytes kept of each packet (longer ones are cut, their original length
  /// recorded): 1..262144.
  uint32_t snaplen = 65535;
  uint32_t linktype = kLinktypeRaw;
  /// Records written at most; later write()s are refused and counted in
  /// dropped(), so a long run cannot fill the disk. 0 = no limit.
  uint64_t max_packets = 0;
};

class PcapWriter {
 public:
  /// Creates (or truncates) `path` and writes the global header. Fails with
  /// Errc::invalid_argument for an empty path or a snaplen outside
  /// 1..262144, or with the errno of fopen()/fwrite() mapped as
  /// errc_from_errno() does (not_found for a missing directory, permission,
  /// io, ...); `why` (if given) then says which file and why.
  static Result<std::unique_ptr<PcapWriter>> open(const std::string& path, const PcapOptions& opts = {},
                                                  std::string* why = nullptr);
  /// Flushes and closes the file (errors there are lost: call close() to
  /// see them).
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  /// Appends one packet made of `parts` concatenated (e.g. headers, payload,
  /// ICRC), stamped `ts_ns`. Thread-safe. Fails, writing nothing, with
  /// Errc::too_big once max_packets records are written (counted in
  /// dropped()), Errc::bad_state after close() or an earlier write error,
  /// Errc::io (or the mapped errno) if the write fails; a failed write
  /// leaves the file unusable past the last whole record.
  Status write(uint64_t ts_ns, std::span<const std::span<const uint8_t>> parts);
  /// One contiguous packet.
  Status write(uint64_t ts_ns, std::span<const uint8_t> packet) {
    const std::span<const uint8_t> one[1] = {packet};
    return write(ts_ns, one);
  }

  /// Pushes buffered records to the file. Errors as write().
  Status flush();
  /// Flushes and closes; later writes fail with Errc::bad_state. Returns the
  /// first error the file had, if any.
  Status close();

  /// Records written.
  uint64_t packets() const { return packets_.load(std::memory_order_relaxed); }
  /// Packets refused because max_packets was reached.
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  const std::string& path() const { return path_; }

 private:
  PcapWriter(std::string path, const PcapOptions& opts, std::FILE* f) : path_(std::move(path)), opts_(opts), f_(f) {}
  Status fail_locked(const char* call);

  const std::string path_;
  const PcapOptions opts_;
  std::mutex mu_;
  std::FILE* f_ = nullptr;  ///< guarded by mu_; null once closed
  Errc error_ = Errc::ok;   ///< guarded by mu_: the first failure
  std::atomic<uint64_t> packets_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace mrc::platform
