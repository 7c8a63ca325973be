// SPDX-License-Identifier: BSD-2-Clause
// Software devices through libibverbs (src/api/verbs.cc), called as a
// program calls them: this test links libopenmrc.so before libibverbs, as
// OCP's examples link lib_mrc.so, and uses only <infiniband/verbs.h> for
// the devices, PDs and MRs and <mrc.h> for the rest.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "mrc.h"
#include "mrc_ctl.h"
#include "openmrc/mrc_soft.h"

namespace {

/// Writes `text` to a file of its own and points $OPENMRC_CONFIG at it.
class ConfigFile {
 public:
  explicit ConfigFile(const std::string& text) {
    char tmpl[] = "/tmp/openmrc-verbs-test-XXXXXX";
    const int fd = mkstemp(tmpl);
    EXPECT_GE(fd, 0);
    close(fd);
    path_ = tmpl;
    std::ofstream(path_) << text;
    setenv("OPENMRC_CONFIG", path_.c_str(), 1);
  }
  ~ConfigFile() {
    unsetenv("OPENMRC_CONFIG");
    std::remove(path_.c_str());
  }

 private:
  std::string path_;
};

/// How many devices the real libibverbs lists (RDMA NICs, rxe, ...).
int real_device_count() {
  void* lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 0;
  using List = ibv_device** (*)(int*);
  using Free = void (*)(ibv_device**);
  auto list = reinterpret_cast<List>(dlsym(lib, "ibv_get_device_list"));
  auto free_list = reinterpret_cast<Free>(dlsym(lib, "ibv_free_device_list"));
  int n = 0;
  ibv_device** l = list ? list(&n) : nullptr;
  if (l) free_list(l);
  return l ? n : 0;
}

ibv_device* find(ibv_device** list, int n, const char* name) {
  for (int i = 0; i < n; ++i)
    if (std::strcmp(ibv_get_device_name(list[i]), name) == 0) return list[i];
  return nullptr;
}

constexpr const char* kTwoDevices = R"(
[[device]]
name = "mrc_a"
planes = ["127.0.21.1", "127.0.22.1"]
udp_port = 24811

[[device]]
name = "mrc_b"
planes = ["127.0.21.2", "127.0.22.2"]
udp_port = 24811
ev_mode = "udp"
peer_rule = "offset"
)";

TEST(Verbs, ConfiguredDevicesAreListedNextToRealOnes) {
  ConfigFile cfg(kTwoDevices);
  const int real = real_device_count();
  int n = -1;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr) << strerror(errno);
  EXPECT_EQ(n, real + 2);
  EXPECT_EQ(list[n], nullptr) << "the list ends with NULL";
  ibv_device* a = find(list, n, "mrc_a");
  ibv_device* b = find(list, n, "mrc_b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(ibv_get_device_guid(a), ibv_get_device_guid(b));
  EXPECT_EQ(ibv_get_device_index(a), -1);
  ibv_free_device_list(list);
}

TEST(Verbs, QueriesPdsAndMrsOnASoftDevice) {
  ConfigFile cfg(R"([[device]]
name = "mrc_q"
planes = ["127.0.21.3", "127.0.22.3"]
udp_port = 24812
)");
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr);
  ibv_device* dev = find(list, n, "mrc_q");
  ASSERT_NE(dev, nullptr);
  ibv_context* ctx = ibv_open_device(dev);
  ASSERT_NE(ctx, nullptr) << strerror(errno);
  ibv_free_device_list(list);  // the open context outlives the list
  EXPECT_STREQ(ibv_get_device_name(ctx->device), "mrc_q");

  ibv_device_attr da{};
  ASSERT_EQ(ibv_query_device(ctx, &da), 0);
  EXPECT_EQ(da.phys_port_cnt, 2);
  EXPECT_GT(da.max_qp, 0);
  EXPECT_EQ(std::strncmp(da.fw_ver, "openmrc", 7), 0);
  ibv_device_attr_ex dax{};
  EXPECT_EQ(ibv_query_device_ex(ctx, nullptr, &dax), 0) << "the inline call falls back to ibv_query_device";
  EXPECT_EQ(dax.orig_attr.phys_port_cnt, 2);

  ibv_port_attr pa{};
  ASSERT_EQ(ibv_query_port(ctx, 2, &pa), 0);
  EXPECT_EQ(pa.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_EQ(pa.active_mtu, IBV_MTU_4096);
  EXPECT_EQ(pa.gid_tbl_len, 4);
  ibv_port_attr none{};
  EXPECT_EQ(ibv_query_port(ctx, 3, &none), EINVAL);

  ibv_gid g{}, soft{};
  ASSERT_EQ(mrc_soft_query_gid(ctx, 1, &soft), 0);
  for (int idx = 0; idx < pa.gid_tbl_len; ++idx) {
    ASSERT_EQ(ibv_query_gid(ctx, 2, idx, &g), 0);
    EXPECT_EQ(std::memcmp(&g, &soft, sizeof g), 0) << "every GID index holds the port's address";
  }
  errno = 0;
  EXPECT_EQ(ibv_query_gid(ctx, 2, pa.gid_tbl_len, &g), -1);
  EXPECT_EQ(errno, EINVAL);
  ibv_gid_entry ge{};
  ASSERT_EQ(ibv_query_gid_ex(ctx, 1, 3, &ge, 0), 0);
  EXPECT_EQ(ge.gid_type, IBV_GID_TYPE_ROCE_V2);

  ibv_pd* pd = ibv_alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  std::vector<uint8_t> buf(1 << 16);
  ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ASSERT_NE(mr, nullptr) << strerror(errno);
  EXPECT_EQ(mr->context, ctx);
  EXPECT_NE(mr->rkey, 0u);
  // Relaxed ordering is optional: granted as nothing.
  ibv_mr* relaxed = ibv_reg_mr(pd, buf.data(), 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
  ASSERT_NE(relaxed, nullptr);
  EXPECT_EQ(ibv_dereg_mr(relaxed), 0);

  // What the software device leaves to the MRC API answers with the verbs
  // error rather than reaching libibverbs with an object it does not know.
  errno = 0;
  EXPECT_EQ(ibv_create_cq(ctx, 16, nullptr, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  errno = 0;
  EXPECT_EQ(ibv_create_comp_channel(ctx), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ibv_qp_init_attr qa{};
  errno = 0;
  EXPECT_EQ(ibv_create_qp(pd, &qa), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  errno = 0;
  EXPECT_EQ(ibv_alloc_mw(pd, IBV_MW_TYPE_1), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr_iova(pd, buf.data(), 4096, 0x1000, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);

  EXPECT_EQ(ibv_dealloc_pd(pd), EBUSY) << "an MR still uses it";
  errno = 0;
  EXPECT_EQ(ibv_close_device(ctx), -1);
  EXPECT_EQ(errno, EBUSY);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  EXPECT_EQ(ibv_close_device(ctx), 0);
  EXPECT_STREQ(ibv_wc_status_str(IBV_WC_SUCCESS), mrc_wc_status_str(IBV_WC_SUCCESS));
}

/// One side of a connection built the OCP way.
struct Side {
  ibv_context* dev = nullptr;
  mrc_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_mr* mr = nullptr;
  mrc_cq* cq = nullptr;
  mrc_qp* qp = nullptr;
  std::vector<uint8_t> mem = std::vector<uint8_t>(1 << 18);
  ibv_gid gid{};
  uint32_t qpn = 0;

  void open(ibv_device* d) {
    dev = ibv_open_device(d);
    ASSERT_NE(dev, nullptr) << strerror(errno);
    mrc_device_attr da{};
    int supported = 0;
    ASSERT_EQ(mrc_query_device(dev, &da, &supported), 0);
    ASSERT_NE(supported, 0);
    mrc_context_attr ca{MRC_API_VER_LATEST};
    ctx = mrc_create_context(dev, &ca);
    ASSERT_NE(ctx, nullptr);
    pd = ibv_alloc_pd(dev);
    ASSERT_NE(pd, nullptr);
    mr = ibv_reg_mr(pd, mem.data(), mem.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    ASSERT_NE(mr, nullptr);
    cq = mrc_create_cq(ctx, 64, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
    mrc_qp_init_attr qa{};
    qa.send_cq = qa.recv_cq = cq;
    qa.pd = pd;
    qa.cap.max_send_wr = 16;
    qa.cap.max_recv_wr = 16;
    qa.cap.max_send_sge = 1;
    qp = mrc_create_qp(ctx, &qa);
    ASSERT_NE(qp, nullptr);
    ASSERT_EQ(ibv_query_gid(dev, 1, 3, &gid), 0);
    ASSERT_EQ(mrc_get_qpn(qp, &qpn), 0);
  }
  /// INIT, RTR, RTS with ibverbs attributes only, as OCP's benchmark does.
  void connect(const Side& peer) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    ASSERT_EQ(mrc_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, nullptr, 0),
              0);
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_4096;
    a.dest_qp_num = peer.qpn;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = peer.gid;
    a.ah_attr.grh.sgid_index = 3;
    a.ah_attr.port_num = 1;
    ASSERT_EQ(mrc_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_PATH_MTU,
                            nullptr, 0),
              0);
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    ASSERT_EQ(mrc_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_TIMEOUT,
                            nullptr, 0),
              0);
  }
  void close() {
    EXPECT_EQ(mrc_destroy_qp(qp), 0);
    EXPECT_EQ(mrc_destroy_cq(cq), 0);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    EXPECT_EQ(ibv_dealloc_pd(pd), 0);
    EXPECT_EQ(mrc_destroy_context(ctx), 0);
    EXPECT_EQ(ibv_close_device(dev), 0);
  }
};

ibv_wc poll_one(mrc_cq* cq) {
  ibv_wc wc{};
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < end)
    if (mrc_poll_cq(cq, 1, &wc) == 1) return wc;
  ADD_FAILURE() << "no completion";
  wc.status = IBV_WC_GENERAL_ERR;
  return wc;
}

// Two configured devices of two planes each: B's GID is its plane-0
// address, and A reaches B's plane 1 by the offset rule (127.0.22.2), with
// no mrc_soft_set_peer anywhere.
TEST(Verbs, AWriteBetweenDevicesFoundThroughLibibverbs) {
  ConfigFile cfg(kTwoDevices);
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr);
  Side a, b;
  a.open(find(list, n, "mrc_a"));
  b.open(find(list, n, "mrc_b"));
  ibv_free_device_list(list);
  if (HasFatalFailure()) return;
  a.connect(b);
  b.connect(a);
  if (HasFatalFailure()) return;

  ibv_recv_wr rwr{};
  rwr.wr_id = 7;
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(mrc_post_recv(b.qp, &rwr, &rbad), 0);
  for (size_t i = 0; i < a.mem.size(); ++i) a.mem[i] = static_cast<uint8_t>(i * 13 + 1);
  ibv_sge sge{reinterpret_cast<uintptr_t>(a.mem.data()), static_cast<uint32_t>(a.mem.size()), a.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 1;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(0x5eed);
  wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(b.mem.data());
  wr.wr.rdma.rkey = b.mr->rkey;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(mrc_post_send(a.qp, &wr, &bad), 0);
  const ibv_wc sent = poll_one(a.cq);
  EXPECT_EQ(sent.status, IBV_WC_SUCCESS) << ibv_wc_status_str(sent.status);
  const ibv_wc got = poll_one(b.cq);
  EXPECT_EQ(got.status, IBV_WC_SUCCESS) << ibv_wc_status_str(got.status);
  EXPECT_EQ(got.wr_id, 7u);
  EXPECT_EQ(ntohl(got.imm_data), 0x5eedu);
  EXPECT_EQ(std::memcmp(a.mem.data(), b.mem.data(), a.mem.size()), 0);
  uint64_t per_plane[2] = {};
  ASSERT_EQ(mrc_soft_query_qp_plane_packets(a.qp, per_plane, 2), 2);
  EXPECT_GT(per_plane[0], 0u);
  EXPECT_GT(per_plane[1], 0u);
  mrc_soft_stats st{};
  ASSERT_EQ(mrc_soft_query_stats(b.dev, &st), 0);
  EXPECT_EQ(st.rx_unknown_source, 0u) << "plane 1 reached the peer at the address the offset rule gives";
  EXPECT_GT(st.rx_packets, 0u);
  a.close();
  b.close();
}

TEST(Verbs, ABadConfigurationListsNoSoftDeviceAndNamesTheField) {
  const int real = real_device_count();
  {
    ConfigFile cfg("[[device]]\nname = \"x\"\nplanes = [\"127.0.21.9\"]\nev_mode = \"fast\"\n");
    testing::internal::CaptureStderr();
    int n = -1;
    ibv_device** list = ibv_get_device_list(&n);
    const std::string err = testing::internal::GetCapturedStderr();
    ASSERT_NE(list, nullptr);
    EXPECT_EQ(n, real);
    EXPECT_NE(err.find("device[0].ev_mode"), std::string::npos) << err;
    ibv_free_device_list(list);
  }
  {
    setenv("OPENMRC_CONFIG", "/nonexistent/openmrc.toml", 1);
    testing::internal::CaptureStderr();
    int n = -1;
    ibv_device** list = ibv_get_device_list(&n);
    const std::string err = testing::internal::GetCapturedStderr();
    unsetenv("OPENMRC_CONFIG");
    ASSERT_NE(list, nullptr);
    EXPECT_EQ(n, real);
    EXPECT_NE(err.find("OPENMRC_CONFIG"), std::string::npos) << err;
    ibv_free_device_list(list);
  }
  {
    ConfigFile cfg("[[device]]\nname = \"x\"\nplanes = [\"127.0.21.9\"]\n[[device.peer]]\ngid = \"127.0.21.8\"\n"
                   "planes = [\"127.0.21.8\", \"127.0.22.8\"]\n");
    testing::internal::CaptureStderr();
    int n = -1;
    ibv_device** list = ibv_get_device_list(&n);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(n, real);
    EXPECT_NE(err.find("device[0].peer[0].planes"), std::string::npos) << err;
    ibv_free_device_list(list);
  }
}

// Every other mrc_soft_device_attr field has a key of its name: what the
// perf tools' flags describe, a program's configuration can too.
TEST(Verbs, TheConfigurationSetsTheDevicesAttributes) {
  char pcap[] = "/tmp/openmrc-verbs-pcap-XXXXXX";
  const int fd = mkstemp(pcap);
  ASSERT_GE(fd, 0);
  close(fd);
  std::remove(pcap);
  ConfigFile cfg(std::string("[[device]]\nname = \"mrc_attrs\"\nplanes = [\"127.0.23.1\", \"127.0.24.1\"]\n"
                             "udp_port = 24813\nevs_per_plane = 3\nnum_engines = 2\ntransport = \"roce_rc\"\n"
                             "link_rate_bps = \"none\"\nno_ecn = true\nbusy_poll = false\nseed = 7\n"
                             "dscp_control = 46\nchannel_bulk_bytes_per_ms = -1\npcap_path = \"") +
                 pcap + "\"\n");
  int n = -1;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr);
  ibv_device* d = find(list, n, "mrc_attrs");
  ASSERT_NE(d, nullptr);
  ibv_context* ctx = ibv_open_device(d);
  ibv_free_device_list(list);
  ASSERT_NE(ctx, nullptr) << strerror(errno);
  EXPECT_EQ(access(pcap, F_OK), 0) << "pcap_path: the capture file is created at open";
  mrc_ctl_attr a{};
  ASSERT_EQ(mrc_ctl_query_device(ctx, &a), 0);
  EXPECT_EQ(a.ev.ev_max_count_profile, 6u) << "evs_per_plane = 3 on two planes";
  EXPECT_EQ(ibv_close_device(ctx), 0);
  std::remove(pcap);

  const int real = real_device_count();
  for (const char* bad : {"dscp_control = 64\n", "busy_poll = 1\n", "transport = \"tcp\"\n", "evs_per_plane = 0\n"}) {
    ConfigFile c(std::string("[[device]]\nname = \"x\"\nplanes = [\"127.0.23.9\"]\n") + bad);
    testing::internal::CaptureStderr();
    ibv_device** l = ibv_get_device_list(&n);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(n, real) << bad;
    const std::string key = std::string(bad).substr(0, std::string(bad).find(' '));
    EXPECT_NE(err.find("device[0]." + key), std::string::npos) << err;
    ibv_free_device_list(l);
  }
}

TEST(Verbs, WithoutAFileOneDefaultDeviceIsListed) {
  if (access("/etc/openmrc/devices.toml", F_OK) == 0) GTEST_SKIP() << "/etc/openmrc/devices.toml exists here";
  unsetenv("OPENMRC_CONFIG");
  int n = -1;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(n, real_device_count() + 1);
  EXPECT_NE(find(list, n, "mrc_soft0"), nullptr);
  ibv_free_device_list(list);
}

}  // namespace
