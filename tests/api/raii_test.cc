// The C++ wrapper (mrc.hpp) end to end: many QPs at once and one 256 MiB
// WRITE, verified byte for byte; errors surface as std::system_error.
#include "mrc/mrc.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

void tune(mrc_soft_device_attr& a) {
  a.udp_port = 24793;
  a.ev_port_base = 42000;
  a.evs_per_plane = 8;
  a.burst = 8;  // burst mode keeps the big transfer quick
}

#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kBig = size_t{64} << 20;  // sanitizers are ~5x slower
#else
constexpr size_t kBig = size_t{256} << 20;
#endif

size_t drain(mrc::Cq& cq, size_t n, std::vector<ibv_wc>* out = nullptr) {
  size_t got = 0;
  const auto end = Clock::now() + std::chrono::seconds(60);
  ibv_wc wc[32];
  while (got < n && Clock::now() < end) {
    const int k = cq.poll(wc);
    EXPECT_GE(k, 0);
    for (int i = 0; i < k; ++i) {
      EXPECT_EQ(wc[i].status, IBV_WC_SUCCESS) << mrc_wc_status_str(wc[i].status);
      if (out) out->push_back(wc[i]);
    }
    got += static_cast<size_t>(k);
  }
  return got;
}

TEST(Raii, ManyQpsAndA256MiBWriteArriveIntact) {
  mrc::SoftDevice da({"127.0.3.1", "127.0.3.3"}, tune);
  mrc::SoftDevice db({"127.0.3.2", "127.0.3.4"}, tune);
  const std::vector<ibv_gid> ga{da.gid(0), da.gid(1)}, gb{db.gid(0), db.gid(1)};
  da.set_peer(gb);
  db.set_peer(ga);
  mrc::Context ca(da), cb(db);
  mrc::Pd pa(da), pb(db);
  std::vector<uint8_t> src(kBig), dst(kBig, 0);
  for (size_t i = 0; i < src.size(); i += 4096) src[i] = static_cast<uint8_t>(i >> 12);
  for (size_t i = 1; i < src.size(); i += 997) src[i] = static_cast<uint8_t>(i);
  mrc::Mr ma(pa, src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE);
  mrc::Mr mb(pb, dst.data(), dst.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  mrc::Cq qa_cq(ca, 4096), qb_cq(cb, 4096);
  constexpr int kQps = 32;
  std::vector<std::unique_ptr<mrc::Qp>> qa, qb;
  for (int i = 0; i < kQps; ++i) {
    qa.push_back(std::make_unique<mrc::Qp>(ca, qa_cq, qa_cq, pa, 64));
    qb.push_back(std::make_unique<mrc::Qp>(cb, qb_cq, qb_cq, pb, 64));
  }
  for (int i = 0; i < kQps; ++i) {
    qa[static_cast<size_t>(i)]->connect(gb[0], qb[static_cast<size_t>(i)]->qpn(), 1000u + static_cast<uint32_t>(i), 77);
    qb[static_cast<size_t>(i)]->connect(ga[0], qa[static_cast<size_t>(i)]->qpn(), 77, 1000u + static_cast<uint32_t>(i));
  }
  // Every QP writes its own 1 MiB slice at once.
  for (int i = 0; i < kQps; ++i) {
    const uint64_t off = uint64_t{1} << 20 << 0;
    ibv_sge sge{reinterpret_cast<uint64_t>(src.data()) + static_cast<uint64_t>(i) * off, 1u << 20, ma.lkey()};
    ibv_send_wr wr{};
    wr.wr_id = static_cast<uint64_t>(i);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(dst.data()) + static_cast<uint64_t>(i) * off;
    wr.wr.rdma.rkey = mb.rkey();
    ASSERT_EQ(qa[static_cast<size_t>(i)]->post(wr), 0);
  }
  std::vector<ibv_wc> wcs;
  ASSERT_EQ(drain(qa_cq, kQps, &wcs), static_cast<size_t>(kQps));
  ASSERT_EQ(0, std::memcmp(src.data(), dst.data(), size_t{kQps} << 20));
  // One WRITE of the whole buffer on one QP.
  std::fill(dst.begin(), dst.end(), 0);
  ibv_sge sge{reinterpret_cast<uint64_t>(src.data()), static_cast<uint32_t>(kBig), ma.lkey()};
  ibv_send_wr wr{};
  wr.wr_id = 999;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(dst.data());
  wr.wr.rdma.rkey = mb.rkey();
  ASSERT_EQ(qa[0]->post(wr), 0);
  ASSERT_EQ(drain(qa_cq, 1), 1u);
  EXPECT_EQ(0, std::memcmp(src.data(), dst.data(), kBig));
  const mrc_soft_stats st = db.stats();
  EXPECT_EQ(st.rx_icrc_errors, 0u);
}

TEST(Raii, FailuresThrowWithTheCallAndErrno) {
  try {
    mrc::SoftDevice bad({"not-an-address"}, tune);
    FAIL() << "no exception";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), EINVAL);
    EXPECT_NE(std::string(e.what()).find("mrc_soft_open_device"), std::string::npos);
  }
  mrc::SoftDevice d({"127.0.3.9"}, tune);
  mrc::Context c(d);
  EXPECT_THROW(mrc::Cq(c, 0), std::system_error);
}

}  // namespace
