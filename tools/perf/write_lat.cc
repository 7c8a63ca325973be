// SPDX-License-Identifier: BSD-2-Clause
// mrc_write_lat: RDMA WRITE latency over the OpenMRC software device, in the
// manner of perftest's ib_write_lat: a ping-pong between client and server,
// reported as one-way latency (round trip / 2).
//
// Why WRITE WITH IMMEDIATE and not "poll on the last byte": ib_write_lat's
// classic loop has each side spin on the last byte of its buffer, relying on
// an RC QP placing a message's bytes in order, so that the last byte arriving
// means the whole message has. MRC sprays one message's packets over many
// paths and places each packet wherever it lands, in any order: the last
// byte may be written before the first, and polling it would time messages
// that are not complete (and read torn data). The receive completion of a
// WRITE WITH IMMEDIATE is generated only when every packet of the message has
// been placed, and in order across messages, so it is the correct and
// portable "message arrived" signal on MRC. Each side therefore keeps empty
// receives posted and answers each completion with its own WRITE WITH IMM.
#include <arpa/inet.h>
#include <fmt/core.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "perf/perf_device.hpp"

namespace mrc::perf {
namespace {

/// The immediate of iteration `it` (kStopImm is reserved for the stop message).
uint32_t imm_of(uint64_t it) { return static_cast<uint32_t>(it % kStopImm); }

/// Posts and tracks write_lat's signalled WRITE WITH IMMs on QP 0.
class Sender {
 public:
  Sender(Session& s, uint64_t size) : s_(s) {
    sge_.addr = reinterpret_cast<uintptr_t>(s.src[0]->data());
    sge_.length = static_cast<uint32_t>(size);
    sge_.lkey = s.src[0]->lkey();
    wr_.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr_.sg_list = &sge_;
    wr_.num_sge = 1;
    wr_.send_flags = IBV_SEND_SIGNALED | (size <= s.inline_size ? static_cast<unsigned>(IBV_SEND_INLINE) : 0u);
    wr_.wr.rdma.remote_addr = s.remote.qps[0].addr;
    wr_.wr.rdma.rkey = s.remote.qps[0].rkey;
  }

  void post(uint32_t imm) {
    // Keep a slot free: retire send completions when the queue is nearly full.
    while (outstanding_ + 1 >= s_.send_depth) retire(true);
    wr_.wr_id = imm;
    wr_.imm_data = htonl(imm);
    ibv_send_wr* bad = nullptr;
    if (int rc = mrc_post_send(s_.qps[0], &wr_, &bad); rc != 0)
      throw PerfError(fmt::format("mrc_post_send: {} ({})", std::strerror(rc), rc));
    ++outstanding_;
  }

  /// Polls the send CQ (waiting for one completion when `block`).
  void retire(bool block) {
    ibv_wc wc[16];
    const int k = block ? s_.send_cq->wait(wc, 16, s_.o.timeout_s, "RDMA WRITE WITH IMM completions", &s_.ch)
                        : s_.send_cq->poll(wc, 16);
    for (int i = 0; i < k; ++i) check_wc(wc[i], "RDMA WRITE WITH IMM");
    outstanding_ -= static_cast<uint32_t>(k);
  }

  void drain() {
    while (outstanding_ > 0) retire(true);
  }

 private:
  Session& s_;
  ibv_sge sge_{};
  ibv_send_wr wr_{};
  uint32_t outstanding_ = 0;
};

/// Waits for the peer's next WRITE WITH IMM, reposts the receive and returns its immediate.
uint32_t receive(Session& s, const char* what) {
  ibv_wc wc{};
  (void)s.recv_cq->wait(&wc, 1, s.o.timeout_s, what, &s.ch);
  check_wc(wc, "receive of a WRITE WITH IMM");
  if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || (wc.wc_flags & IBV_WC_WITH_IMM) == 0)
    throw PerfError(fmt::format("unexpected receive completion (opcode {})", static_cast<int>(wc.opcode)));
  s.post_recvs(0, 1);
  return ntohl(wc.imm_data);
}

void check_imm(uint32_t got, uint32_t want) {
  if (got != want)
    throw PerfError(fmt::format("WRITE WITH IMM out of order: immediate {} where {} was due", got, want));
}

/// The one-way samples of one size, in the order measured.
std::vector<double> run_size_client(Session& s, uint64_t size) {
  const Options& o = s.o;
  Sender tx(s, size);
  std::vector<double> samples;
  samples.reserve(o.duration_s != 0 ? 1u << 20 : o.iters);
  const int64_t deadline = now_ns() + int64_t{o.duration_s} * 1000000000;
  for (uint64_t it = 0;; ++it) {
    if (o.duration_s != 0 ? now_ns() >= deadline : it == o.iters) break;
    const int64_t t0 = now_ns();
    tx.post(imm_of(it));
    const uint32_t imm = receive(s, "the server's answer");
    const int64_t t1 = now_ns();
    check_imm(imm, imm_of(it));
    samples.push_back(static_cast<double>(t1 - t0) / 2000.0);
    tx.retire(false);
  }
  tx.post(kStopImm);
  tx.drain();
  return samples;
}

void run_size_server(Session& s, uint64_t size) {
  Sender tx(s, size);
  for (uint64_t it = 0;; ++it) {
    const uint32_t imm = receive(s, "the client's next message");
    if (imm == kStopImm) break;
    check_imm(imm, imm_of(it));
    tx.post(imm);
    tx.retire(false);
  }
  tx.drain();
}

std::string_view verify_word(bool verify, bool ok) {
  if (!verify) return "skipped";
  return ok ? "ok" : "mismatch";
}

void client(Session& s, JsonReport& report) {
  const Options& o = s.o;
  const auto sizes = size_list(o.all, o.size);
  std::fputs(lat_table_header().c_str(), stdout);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const uint64_t size = sizes[i];
    SizeBegin b{size, salt_for(size, i), verify_enabled(o.verify, size)};
    fill_pattern(s.src[0]->data(), size, b.salt);
    std::memset(s.dst[0]->data(), 0, size);
    s.ch.send(MsgType::size_begin, encode(b));
    (void)s.ch.expect(MsgType::ready, s.reply_timeout());
    std::vector<double> samples = run_size_client(s, size);
    const std::string unsorted = o.report_unsorted ? format_lat_samples(samples) : std::string();
    const LatRow row = lat_stats(size, samples);  // sorts them
    s.ch.send(MsgType::size_end, encode(SizeEnd{size, row.iters, lat_values(row)}));
    auto res = decode_size_result(s.ch.expect(MsgType::size_result, s.reply_timeout()));
    if (!res) throw PerfError("exchange: " + res.error);
    // The server's answers carried the same pattern: check the last one here.
    const SizeResult mine = b.verify && row.iters > 0 ? s.verify_dst(size, b.salt) : SizeResult{};
    const bool ok = res.value->status != SizeResult::mismatch && mine.status != SizeResult::mismatch;
    std::fputs(format_lat_row(row).c_str(), stdout);
    if (o.report_histogram) std::fputs((o.report_unsorted ? unsorted : format_lat_samples(samples)).c_str(), stdout);
    std::fflush(stdout);
    report.add_lat(row, verify_word(b.verify, ok));
    if (res.value->status == SizeResult::mismatch)
      throw PerfError(fmt::format("data verification failed for {} byte messages: the server found a wrong byte "
                                  "at offset {}",
                                  size, res.value->offset));
    if (mine.status == SizeResult::mismatch)
      throw PerfError(fmt::format("data verification failed for {} byte messages: wrong byte at offset {} of the "
                                  "server's answer",
                                  size, mine.offset));
  }
  s.ch.send(MsgType::done);
  std::fputs(result_line().c_str(), stdout);
}

void server(Session& s, JsonReport& report) {
  SizeHandlers h;
  h.prepare = [&](const SizeBegin& begin) {
    fill_pattern(s.src[0]->data(), begin.size, begin.salt);
    std::memset(s.dst[0]->data(), 0, begin.size);
  };
  h.traffic = [&](const SizeBegin& begin) { run_size_server(s, begin.size); };
  h.finish = [&](const SizeBegin& begin, const SizeEnd& end, const SizeResult& r) {
    const LatRow row = lat_row_from(end);
    std::fputs(format_lat_row(row).c_str(), stdout);
    std::fflush(stdout);
    report.add_lat(row, verify_word(begin.verify, r.status != SizeResult::mismatch));
    if (r.status == SizeResult::mismatch)
      throw PerfError(fmt::format("data verification failed for {} byte messages: wrong byte at offset {}",
                                  begin.size, r.offset));
  };
  serve_sizes(s, lat_table_header(), h);
}

}  // namespace
}  // namespace mrc::perf

int main(int argc, char** argv) {
  using namespace mrc::perf;
  return tool_main(Tool::write_lat, argc, argv, server, client);
}
