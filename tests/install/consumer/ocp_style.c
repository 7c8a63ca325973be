/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A program written the way OCP's MRC examples are, built against an
 * installed OpenMRC (tests/install/consumer_test.sh): the device comes from
 * ibv_get_device_list / ibv_open_device, the GID from ibv_query_gid, the
 * PD and MR from ibv_alloc_pd / ibv_reg_mr, and the MRC API does the rest;
 * QPs are brought up with ibverbs attributes only. Nothing here names an
 * OpenMRC call: the software device is whatever $OPENMRC_CONFIG describes.
 *
 *   ocp_style server DEVICE TCP_PORT
 *   ocp_style client DEVICE TCP_PORT SERVER_IPV4
 *
 * The two sides swap {QPN, GID, buffer address, rkey} over TCP; the client
 * WRITEs WITH IMMEDIATE a patterned 256 KiB buffer into the server's, the
 * server checks it byte for byte and says so over TCP, and the client says
 * when its own completion arrived (the server stays up until then). Prints
 * "ocp_style <role> ok" and exits 0, or names the failing call and exits 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <mrc.h>

#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { kBytes = 256 * 1024, kImm = 0x0c9 };

struct wire {
  uint32_t qpn;
  uint32_t rkey;
  uint64_t addr;
  union ibv_gid gid;
};

static const char *role = "?";

static int fail(const char *what, int err) {
  fprintf(stderr, "ocp_style %s: %s failed: %s\n", role, what, strerror(err));
  return 1;
}

static int full_io(int fd, void *p, size_t n, int sending) {
  char *c = p;
  while (n > 0) {
    ssize_t k = sending ? write(fd, c, n) : read(fd, c, n);
    if (k <= 0) return -1;
    c += k;
    n -= (size_t)k;
  }
  return 0;
}

/* The server accepts one connection, the client retries for 10 s. */
static int tcp_connect(int server, int port, const char *host) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  if (server) {
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 1)) return -1;
    int c = accept(fd, NULL, NULL);
    close(fd);
    return c;
  }
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1) return -1;
  for (int i = 0; i < 200; ++i) {
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return -1;
}

static int poll_one(struct mrc_cq *cq, struct ibv_wc *wc) {
  time_t end = time(NULL) + 20;
  while (time(NULL) < end) {
    int n = mrc_poll_cq(cq, 1, wc);
    if (n < 0) return fail("mrc_poll_cq", errno);
    if (n == 1) {
      if (wc->status != IBV_WC_SUCCESS) {
        fprintf(stderr, "ocp_style %s: completion: %s\n", role, ibv_wc_status_str(wc->status));
        return 1;
      }
      return 0;
    }
  }
  fprintf(stderr, "ocp_style %s: no completion within 20 s\n", role);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 4 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")) ||
      (!strcmp(argv[1], "client") && argc < 5)) {
    fprintf(stderr, "usage: ocp_style server DEVICE TCP_PORT | client DEVICE TCP_PORT SERVER_IPV4\n");
    return 2;
  }
  role = argv[1];
  const int server = !strcmp(role, "server");
  int ndev = 0;
  struct ibv_device **list = ibv_get_device_list(&ndev);
  if (!list) return fail("ibv_get_device_list", errno);
  struct ibv_device *device = NULL;
  for (int i = 0; i < ndev; ++i)
    if (!strcmp(ibv_get_device_name(list[i]), argv[2])) device = list[i];
  if (!device) {
    fprintf(stderr, "ocp_style %s: no device %s among %d\n", role, argv[2], ndev);
    return 1;
  }
  struct ibv_context *dev = ibv_open_device(device);
  if (!dev) return fail("ibv_open_device", errno);
  ibv_free_device_list(list);

  struct ibv_port_attr port;
  if (ibv_query_port(dev, 1, &port)) return fail("ibv_query_port", errno);
  if (port.state != IBV_PORT_ACTIVE) return fail("port 1 active", EIO);
  struct mrc_device_attr da;
  int supported = 0;
  if (mrc_query_device(dev, &da, &supported) || !supported) return fail("mrc_query_device", errno);
  struct mrc_context_attr ca = {.mrc_api_version_used = MRC_API_VER_LATEST};
  struct mrc_context *ctx = mrc_create_context(dev, &ca);
  if (!ctx) return fail("mrc_create_context", errno);
  struct ibv_pd *pd = ibv_alloc_pd(dev);
  if (!pd) return fail("ibv_alloc_pd", errno);
  unsigned char *buf = calloc(1, kBytes);
  if (!buf) return fail("calloc", ENOMEM);
  struct ibv_mr *mr = ibv_reg_mr(pd, buf, kBytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!mr) return fail("ibv_reg_mr", errno);
  struct mrc_cq *cq = mrc_create_cq(ctx, 64, NULL, NULL, 0);
  if (!cq) return fail("mrc_create_cq", errno);
  struct mrc_qp_init_attr qa;
  memset(&qa, 0, sizeof qa);
  qa.send_cq = qa.recv_cq = cq;
  qa.pd = pd;
  qa.cap.max_send_wr = 16;
  qa.cap.max_recv_wr = 16;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  struct mrc_qp *qp = mrc_create_qp(ctx, &qa);
  if (!qp) return fail("mrc_create_qp", errno);

  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  int rc = mrc_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, NULL, 0);
  if (rc) return fail("mrc_modify_qp INIT", rc);

  struct wire me, peer;
  memset(&me, 0, sizeof me);
  if (mrc_get_qpn(qp, &me.qpn)) return fail("mrc_get_qpn", errno);
  if (ibv_query_gid(dev, 1, 3, &me.gid)) return fail("ibv_query_gid", errno);
  me.rkey = mr->rkey;
  me.addr = (uint64_t)(uintptr_t)buf;
  int fd = tcp_connect(server, atoi(argv[3]), server ? NULL : argv[4]);
  if (fd < 0) return fail("TCP connection", errno);
  if (full_io(fd, &me, sizeof me, 1) || full_io(fd, &peer, sizeof peer, 0)) return fail("exchange", EIO);

  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_4096;
  a.dest_qp_num = peer.qpn;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = peer.gid;
  a.ah_attr.grh.sgid_index = 3;
  a.ah_attr.port_num = 1;
  rc = mrc_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_PATH_MTU, NULL, 0);
  if (rc) return fail("mrc_modify_qp RTR", rc);
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  rc = mrc_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY,
                     NULL, 0);
  if (rc) return fail("mrc_modify_qp RTS", rc);

  struct ibv_wc wc;
  char done = 0;
  if (server) {
    struct ibv_recv_wr rwr, *rbad = NULL;
    memset(&rwr, 0, sizeof rwr);
    rwr.wr_id = 2;
    if ((rc = mrc_post_recv(qp, &rwr, &rbad))) return fail("mrc_post_recv", rc);
    if (full_io(fd, &done, 1, 1)) return fail("ready", EIO); /* the receive is posted */
    if (poll_one(cq, &wc)) return 1;
    if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || ntohl(wc.imm_data) != kImm) return fail("immediate", EBADMSG);
    for (size_t i = 0; i < kBytes; ++i)
      if (buf[i] != (unsigned char)(i * 31 + 7)) return fail("data check", EBADMSG);
    if (full_io(fd, &done, 1, 1)) return fail("answer", EIO);
    /* The client's WRITE completes when this side's ACK reaches it: stay
     * up until it says so. */
    if (full_io(fd, &done, 1, 0)) return fail("the client's completion", EIO);
  } else {
    if (full_io(fd, &done, 1, 0)) return fail("ready", EIO);
    for (size_t i = 0; i < kBytes; ++i) buf[i] = (unsigned char)(i * 31 + 7);
    struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = kBytes, .lkey = mr->lkey};
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(kImm);
    wr.wr.rdma.remote_addr = peer.addr;
    wr.wr.rdma.rkey = peer.rkey;
    if ((rc = mrc_post_send(qp, &wr, &bad))) return fail("mrc_post_send", rc);
    if (poll_one(cq, &wc)) return 1;
    if (full_io(fd, &done, 1, 0)) return fail("the server's check", EIO);
    if (full_io(fd, &done, 1, 1)) return fail("completion", EIO);
  }
  close(fd);
  if ((rc = mrc_destroy_qp(qp))) return fail("mrc_destroy_qp", rc);
  if ((rc = mrc_destroy_cq(cq))) return fail("mrc_destroy_cq", rc);
  if ((rc = ibv_dereg_mr(mr))) return fail("ibv_dereg_mr", rc);
  if ((rc = ibv_dealloc_pd(pd))) return fail("ibv_dealloc_pd", rc);
  if (mrc_destroy_context(ctx)) return fail("mrc_destroy_context", errno);
  if (ibv_close_device(dev)) return fail("ibv_close_device", errno);
  free(buf);
  printf("ocp_style %s ok: %d bytes %s through %s\n", role, kBytes, server ? "received" : "written", argv[2]);
  return 0;
}
