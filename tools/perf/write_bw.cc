// SPDX-License-Identifier: BSD-2-Clause
// mrc_write_bw: RDMA WRITE bandwidth over the OpenMRC software device, in the
// manner of perftest's ib_write_bw. The client WRITEs into the server's
// buffers, keeping --tx-depth WRITEs outstanding on each QP and signalling one
// in --cq-mod; the server only answers the exchange and checks the data.
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "perf/perf_device.hpp"

namespace mrc::perf {
namespace {

constexpr uint64_t kSeqBits = 40;
constexpr uint64_t kSeqMask = (uint64_t{1} << kSeqBits) - 1;
constexpr uint32_t kChain = 16;  // WRs per mrc_post_send call
constexpr uint64_t kUnbounded = ~uint64_t{0};

struct QpRun {
  uint64_t posted = 0;
  uint64_t completed = 0;  // advanced by signalled completions
  uint64_t target = 0;
  std::vector<ibv_send_wr> wrs;
  std::vector<ibv_sge> sges;
};

/// One size on the client: returns the row of the table. With --timeline,
/// `timeline` receives what the Timeline measured.
BwRow run_size(Session& s, uint64_t size, TimelineReport* timeline) {
  const Options& o = s.o;
  const size_t nq = s.qps.size();
  std::vector<QpRun> runs(nq);
  const unsigned inline_flag = size <= s.inline_size ? static_cast<unsigned>(IBV_SEND_INLINE) : 0u;
  for (size_t q = 0; q < nq; ++q) {
    QpRun& r = runs[q];
    r.target = o.duration_s != 0 ? kUnbounded : o.iters;
    r.wrs.resize(kChain);
    r.sges.resize(kChain);
    for (uint32_t j = 0; j < kChain; ++j) {
      r.sges[j].addr = reinterpret_cast<uintptr_t>(s.src[q]->data());
      r.sges[j].length = static_cast<uint32_t>(size);
      r.sges[j].lkey = s.src[q]->lkey();
      ibv_send_wr& wr = r.wrs[j];
      wr = {};
      wr.opcode = IBV_WR_RDMA_WRITE;
      wr.sg_list = &r.sges[j];
      wr.num_sge = 1;
      wr.wr.rdma.remote_addr = s.remote.qps[q].addr;
      wr.wr.rdma.rkey = s.remote.qps[q].rkey;
    }
  }
  const uint64_t cq_mod = o.cq_mod;
  const uint64_t depth = s.send_depth;
  std::vector<ibv_wc> wcs(64);
  std::vector<RateSample> samples;
  samples.reserve(4096);
  const int64_t start = now_ns();
  const int64_t deadline = start + int64_t{o.duration_s} * 1000000000;
  int64_t last = start;
  bool stopping = o.duration_s == 0;
  uint64_t completed_msgs = 0;
  samples.push_back({0, 0});
  std::unique_ptr<Timeline> tl;
  if (timeline != nullptr) {
    tl = std::make_unique<Timeline>(o.timeline_ms, s.qps, static_cast<uint32_t>(s.local.plane_gids.size()),
                                    s.ev_events.get(), s.ctl);
    tl->begin(start);
  }

  for (;;) {
    if (!stopping && now_ns() >= deadline) {
      // Duration over: finish at the next signalled WRITE of each QP, so the
      // last one posted is signalled and its completion accounts for all.
      stopping = true;
      for (auto& r : runs) r.target = (r.posted + cq_mod - 1) / cq_mod * cq_mod;
    }
    bool can_post = false;
    bool all_done = true;
    for (size_t q = 0; q < nq; ++q) {
      QpRun& r = runs[q];
      while (r.posted < r.target && r.posted - r.completed < depth) {
        const uint64_t n = std::min<uint64_t>({kChain, r.target - r.posted, depth - (r.posted - r.completed)});
        for (uint64_t j = 0; j < n; ++j) {
          const uint64_t idx = r.posted + j;
          ibv_send_wr& wr = r.wrs[j];
          wr.wr_id = (uint64_t{q} << kSeqBits) | (idx + 1);
          const bool signalled = (idx + 1) % cq_mod == 0 || idx + 1 == r.target;
          wr.send_flags = inline_flag | (signalled ? static_cast<unsigned>(IBV_SEND_SIGNALED) : 0u);
          wr.next = j + 1 < n ? &r.wrs[j + 1] : nullptr;
        }
        ibv_send_wr* bad = nullptr;
        const int rc = mrc_post_send(s.qps[q], r.wrs.data(), &bad);
        if (rc == ENOMEM) {  // send queue full: count what went, poll first
          r.posted += bad != nullptr ? static_cast<uint64_t>(bad - r.wrs.data()) : 0;
          break;
        }
        if (rc != 0) throw PerfError(fmt::format("mrc_post_send: {} ({})", std::strerror(rc), rc));
        r.posted += n;
      }
      if (r.posted < r.target && r.posted - r.completed < depth) can_post = true;
      if (r.completed < r.target) all_done = false;
    }
    if (all_done && stopping) break;
    const int k = can_post ? s.send_cq->poll(wcs.data(), static_cast<int>(wcs.size()))
                           : s.send_cq->wait(wcs.data(), static_cast<int>(wcs.size()), o.timeout_s,
                                             "RDMA WRITE completions", &s.ch);
    if (k <= 0) continue;
    for (int i = 0; i < k; ++i) {
      check_wc(wcs[i], "RDMA WRITE");
      const uint64_t q = wcs[i].wr_id >> kSeqBits;
      const uint64_t seq = wcs[i].wr_id & kSeqMask;
      if (q >= nq) throw PerfError("completion with an unknown wr_id");
      if (seq > runs[q].completed) {
        completed_msgs += seq - runs[q].completed;
        runs[q].completed = seq;
      }
    }
    last = now_ns();
    samples.push_back({last - start, completed_msgs * size});
  }
  if (tl) *timeline = tl->finish(last);
  const double secs = static_cast<double>(last - start) / 1e9;
  BwRow row;
  row.bytes = size;
  row.iters = completed_msgs / nq;
  row.bw_avg = secs > 0 ? static_cast<double>(completed_msgs * size) / secs : 0;
  row.msg_rate = secs > 0 ? static_cast<double>(completed_msgs) / secs : 0;
  row.bw_peak = s.o.no_peak ? 0 : std::max(peak_rate(samples), row.bw_avg);
  return row;
}

std::string_view verify_word(bool verify, const SizeResult& r) {
  if (!verify) return "skipped";
  return r.status == SizeResult::ok ? "ok" : "mismatch";
}

void client(Session& s, JsonReport& report) {
  const Options& o = s.o;
  const auto sizes = size_list(o.all, o.size);
  std::fputs(bw_table_header(o.report_gbits).c_str(), stdout);
  // --run_infinitely: the list again from its start, until the process is stopped.
  for (size_t i = 0; i < sizes.size(); i = (i + 1 == sizes.size() && o.run_infinitely) ? 0 : i + 1) {
    const uint64_t size = sizes[i];
    SizeBegin b{size, salt_for(size, i), verify_enabled(o.verify, size)};
    for (auto& buf : s.src) fill_pattern(buf->data(), size, b.salt);
    s.ch.send(MsgType::size_begin, encode(b));
    (void)s.ch.expect(MsgType::ready, s.reply_timeout());
    TimelineReport timeline;
    const BwRow row = run_size(s, size, o.timeline_ms != 0 ? &timeline : nullptr);
    if (o.timeline_ms != 0) report.add_timeline(size, timeline);
    s.ch.send(MsgType::size_end, encode(SizeEnd{size, row.iters, bw_values(row)}));
    auto res = decode_size_result(s.ch.expect(MsgType::size_result, s.reply_timeout()));
    if (!res) throw PerfError("exchange: " + res.error);
    std::fputs(format_bw_row(row, o.report_gbits).c_str(), stdout);
    std::fflush(stdout);
    report.add_bw(row, o.report_gbits, verify_word(b.verify, *res.value));
    if (res.value->status == SizeResult::mismatch)
      throw PerfError(fmt::format("data verification failed for {} byte messages: the server found a wrong byte "
                                  "at offset {} of QP {}'s buffer",
                                  size, res.value->offset, res.value->qp));
  }
  s.ch.send(MsgType::done);
  std::fputs(result_line().c_str(), stdout);
}

void server(Session& s, JsonReport& report) {
  const Options& o = s.o;
  SizeHandlers h;
  h.prepare = [&](const SizeBegin& begin) {
    for (auto& buf : s.dst) std::memset(buf->data(), 0, begin.size);
  };
  h.finish = [&](const SizeBegin& begin, const SizeEnd& end, const SizeResult& r) {
    const BwRow row = bw_row_from(end);
    std::fputs(format_bw_row(row, o.report_gbits).c_str(), stdout);
    std::fflush(stdout);
    report.add_bw(row, o.report_gbits, verify_word(begin.verify, r));
    if (r.status == SizeResult::mismatch)
      throw PerfError(fmt::format("data verification failed for {} byte messages: wrong byte at offset {} of QP "
                                  "{}'s buffer",
                                  begin.size, r.offset, r.qp));
  };
  serve_sizes(s, bw_table_header(o.report_gbits), h);
}

}  // namespace
}  // namespace mrc::perf

int main(int argc, char** argv) {
  using namespace mrc::perf;
  return tool_main(Tool::write_bw, argc, argv, server, client);
}
