// SPDX-License-Identifier: BSD-2-Clause
#include "platform/pcap_writer.hpp"

#include <cerrno>
#include <cstring>

#include "platform/os_error.hpp"

namespace mrc::platform {

namespace {

// libpcap's own upper bound for a snapshot length (MAXIMUM_SNAPLEN).
constexpr uint32_t kMaxSnaplen = 262144;

void put_le32(uint8_t* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_le16(uint8_t* out, uint16_t v) {
  out[0] = static_cast<uint8_t>(v);
  out[1] = static_cast<uint8_t>(v >> 8);
}

}  // namespace

void encode_pcap_global_header(uint32_t snaplen, uint32_t linktype, uint8_t (&out)[kPcapGlobalHeaderBytes]) {
  put_le32(out, kPcapMagicNs);
  put_le16(out + 4, 2);   // version 2.4, the only one readers know
  put_le16(out + 6, 4);
  put_le32(out + 8, 0);   // thiszone: timestamps are UTC
  put_le32(out + 12, 0);  // sigfigs
  put_le32(out + 16, snaplen);
  put_le32(out + 20, linktype);
}

void encode_pcap_record_header(uint64_t ts_ns, uint32_t caplen, uint32_t origlen,
                               uint8_t (&out)[kPcapRecordHeaderBytes]) {
  put_le32(out, static_cast<uint32_t>(ts_ns / 1'000'000'000));
  put_le32(out + 4, static_cast<uint32_t>(ts_ns % 1'000'000'000));
  put_le32(out + 8, caplen);
  put_le32(out + 12, origlen);
}

Result<std::unique_ptr<PcapWriter>> PcapWriter::open(const std::string& path, const PcapOptions& opts,
                                                     std::string* why) {
  if (path.empty()) {
    if (why) *why = "pcap: the file name is empty";
    return Errc::invalid_argument;
  }
  if (opts.snaplen == 0 || opts.snaplen > kMaxSnaplen) {
    if (why) *why = "pcap: snaplen " + std::to_string(opts.snaplen) + " is outside 1.." + std::to_string(kMaxSnaplen);
    return Errc::invalid_argument;
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    const int err = errno;
    if (why) *why = "pcap: cannot create " + path + ": " + std::strerror(err);
    return record_os_error(err, "fopen");
  }
  // A large buffer: records are small and come one at a time.
  std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
  uint8_t hdr[kPcapGlobalHeaderBytes];
  encode_pcap_global_header(opts.snaplen, opts.linktype, hdr);
  if (std::fwrite(hdr, 1, sizeof hdr, f) != sizeof hdr) {
    const int err = errno;
    std::fclose(f);
    if (why) *why = "pcap: cannot write " + path + ": " + std::strerror(err);
    return record_os_error(err, "fwrite");
  }
  return std::unique_ptr<PcapWriter>(new PcapWriter(path, opts, f));
}

PcapWriter::~PcapWriter() { (void)close(); }

Status PcapWriter::fail_locked(const char* call) {
  const int err = errno != 0 ? errno : EIO;
  error_ = record_os_error(err, call);
  return error_;
}

Status PcapWriter::write(uint64_t ts_ns, std::span<const std::span<const uint8_t>> parts) {
  size_t len = 0;
  for (const auto& p : parts) len += p.size();
  const uint32_t origlen = len > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(len);
  const uint32_t caplen = origlen < opts_.snaplen ? origlen : opts_.snaplen;
  uint8_t rec[kPcapRecordHeaderBytes];
  encode_pcap_record_header(ts_ns, caplen, origlen, rec);

  std::lock_guard<std::mutex> g(mu_);
  if (!f_ || error_ != Errc::ok) return Errc::bad_state;
  if (opts_.max_packets != 0 && packets_.load(std::memory_order_relaxed) >= opts_.max_packets) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return Errc::too_big;
  }
  errno = 0;
  if (std::fwrite(rec, 1, sizeof rec, f_) != sizeof rec) return fail_locked("fwrite");
  size_t left = caplen;
  for (const auto& p : parts) {
    if (left == 0) break;
    const size_t n = p.size() < left ? p.size() : left;
    if (n != 0 && std::fwrite(p.data(), 1, n, f_) != n) return fail_locked("fwrite");
    left -= n;
  }
  packets_.fetch_add(1, std::memory_order_relaxed);
  return Status{};
}

Status PcapWriter::flush() {
  std::lock_guard<std::mutex> g(mu_);
  if (!f_) return Errc::bad_state;
  if (error_ != Errc::ok) return error_;
  errno = 0;
  if (std::fflush(f_) != 0) return fail_locked("fflush");
  return Status{};
}

Status PcapWriter::close() {
  std::lock_guard<std::mutex> g(mu_);
  if (!f_) return error_ == Errc::ok ? Status{} : Status{error_};
  errno = 0;
  if (std::fclose(f_) != 0 && error_ == Errc::ok) error_ = record_os_error(errno != 0 ? errno : EIO, "fclose");
  f_ = nullptr;
  return error_ == Errc::ok ? Status{} : Status{error_};
}

}  // namespace mrc::platform
