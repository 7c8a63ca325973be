/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A program outside the OpenMRC tree, built against an installed OpenMRC
 * (tests/install/consumer_test.sh): two software devices on loopback
 * (127.0.0.1 and 127.0.0.2), one QP each, connected to each other; one
 * WRITE WITH IMMEDIATE of a patterned buffer from the first to the second,
 * checked byte for byte at the target. Prints "consumer ok" and exits 0, or
 * names the failing call and exits 1.
 *
 * usage: consumer [udp_port]; the EV source ports are udp_port + 20000 and
 * up (8 a plane).
 */
#define _POSIX_C_SOURCE 200809L
#include <mrc.h>
#include <mrc_ctl.h>
#include <openmrc/mrc_soft.h>
#include <openmrc/version.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kBytes = 64 * 1024, kImm = 0x1234 };

struct end {
  struct ibv_context *dev;
  struct mrc_context *ctx;
  struct ibv_pd *pd;
  struct mrc_cq *cq;
  struct mrc_qp *qp;
  struct ibv_mr *mr;
  unsigned char *buf;
};

static int fail(const char *what, int err) {
  fprintf(stderr, "consumer: %s failed: %s\n", what, strerror(err));
  return 1;
}

static int open_end(struct end *e, const char *addr, uint16_t port) {
  const char *planes[1] = {addr};
  struct mrc_soft_device_attr a;
  memset(&a, 0, sizeof a);
  a.plane_addrs = planes;
  a.num_planes = 1;
  a.udp_port = port;
  a.ev_port_base = (uint16_t)(port + 20000);
  a.evs_per_plane = 8;
  e->dev = mrc_soft_open_device(&a);
  if (!e->dev) return fail("mrc_soft_open_device", errno);
  e->ctx = mrc_create_context(e->dev, NULL);
  if (!e->ctx) return fail("mrc_create_context", errno);
  e->pd = mrc_soft_alloc_pd(e->dev);
  if (!e->pd) return fail("mrc_soft_alloc_pd", errno);
  e->buf = calloc(1, kBytes);
  if (!e->buf) return fail("calloc", ENOMEM);
  e->mr = mrc_soft_reg_mr(e->pd, e->buf, kBytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!e->mr) return fail("mrc_soft_reg_mr", errno);
  e->cq = mrc_create_cq(e->ctx, 64, NULL, NULL, 0);
  if (!e->cq) return fail("mrc_create_cq", errno);
  struct mrc_qp_init_attr ia;
  memset(&ia, 0, sizeof ia);
  ia.send_cq = ia.recv_cq = e->cq;
  ia.pd = e->pd;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
  ia.cap.max_send_sge = 1;
  e->qp = mrc_create_qp(e->ctx, &ia);
  if (!e->qp) return fail("mrc_create_qp", errno);
  return 0;
}

static int connect_qp(struct end *e, const struct end *peer) {
  union ibv_gid gid;
  int rc = mrc_soft_query_gid(peer->dev, 0, &gid);
  if (rc) return fail("mrc_soft_query_gid", rc);
  struct mrc_qp_attr m;
  memset(&m, 0, sizeof m);
  m.wimm.max_wimm = m.wimm.max_wimm_dest = 16;
  m.mpr.mpr = m.mpr.mpr_dest = 8;
  m.timeout = 14;
  m.retry.linear_cnt = 7;
  m.retry.exp_cnt = 7;
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  if ((rc = mrc_modify_qp(e->qp, &a, IBV_QP_STATE, NULL, 0))) return fail("mrc_modify_qp(INIT)", rc);
  a.qp_state = IBV_QPS_RTR;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = gid;
  if (mrc_get_qpn(peer->qp, &a.dest_qp_num)) return fail("mrc_get_qpn", errno);
  a.rq_psn = 1;
  a.path_mtu = IBV_MTU_4096;
  if ((rc = mrc_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_PATH_MTU,
                          &m, MRC_QP_MAX_WIMM_DEST | MRC_QP_MPR_DEST)))
    return fail("mrc_modify_qp(RTR)", rc);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 1;
  if ((rc = mrc_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, &m,
                          MRC_QP_MAX_WIMM | MRC_QP_MPR | MRC_QP_RETRY_CNT | MRC_QP_TIMEOUT)))
    return fail("mrc_modify_qp(RTS)", rc);
  return 0;
}

/* Polls `cq` until one completion arrives (at most 10 s). */
static int wait_one(struct mrc_cq *cq, struct ibv_wc *wc) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    int n = mrc_poll_cq(cq, 1, wc);
    if (n < 0) return fail("mrc_poll_cq", errno);
    if (n == 1) {
      if (wc->status != IBV_WC_SUCCESS) {
        fprintf(stderr, "consumer: completion status %s\n", mrc_wc_status_str(wc->status));
        return 1;
      }
      return 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec > 10) return fail("waiting for a completion", ETIMEDOUT);
  }
}

static void close_end(struct end *e) {
  if (e->qp) mrc_destroy_qp(e->qp);
  if (e->cq) mrc_destroy_cq(e->cq);
  if (e->mr) mrc_soft_dereg_mr(e->mr);
  if (e->pd) mrc_soft_dealloc_pd(e->pd);
  if (e->ctx) mrc_destroy_context(e->ctx);
  if (e->dev) mrc_soft_close_device(e->dev);
  free(e->buf);
}

int main(int argc, char **argv) {
  uint16_t port = (uint16_t)(argc > 1 ? atoi(argv[1]) : 24795);
  if (strcmp(openmrc_version(), OPENMRC_VERSION_STRING) != 0) {
    fprintf(stderr, "consumer: compiled against OpenMRC %s, runs with %s\n", OPENMRC_VERSION_STRING,
            openmrc_version());
    return 1;
  }
  struct end a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  int rc = open_end(&a, "127.0.0.1", port) || open_end(&b, "127.0.0.2", port) || connect_qp(&a, &b) ||
           connect_qp(&b, &a);
  if (!rc) {
    for (int i = 0; i < kBytes; ++i) a.buf[i] = (unsigned char)(i * 7 + 3);
    struct ibv_recv_wr rwr, *bad_rwr = NULL;
    memset(&rwr, 0, sizeof rwr);
    rwr.wr_id = 2;
    struct ibv_sge sge = {.addr = (uintptr_t)a.buf, .length = kBytes, .lkey = a.mr->lkey};
    struct ibv_send_wr wr, *bad_wr = NULL;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(kImm);
    wr.wr.rdma.remote_addr = (uintptr_t)b.buf;
    wr.wr.rdma.rkey = b.mr->rkey;
    struct ibv_wc wc;
    if ((rc = mrc_post_recv(b.qp, &rwr, &bad_rwr))) {
      rc = fail("mrc_post_recv", rc);
    } else if ((rc = mrc_post_send(a.qp, &wr, &bad_wr))) {
      rc = fail("mrc_post_send", rc);
    } else if (!(rc = wait_one(a.cq, &wc)) && !(rc = wait_one(b.cq, &wc))) {
      if (ntohl(wc.imm_data) != kImm || wc.wr_id != 2) {
        fprintf(stderr, "consumer: receive completion wr_id %llu imm 0x%x\n", (unsigned long long)wc.wr_id,
                ntohl(wc.imm_data));
        rc = 1;
      } else if (memcmp(a.buf, b.buf, kBytes) != 0) {
        fprintf(stderr, "consumer: the target's bytes differ from the source's\n");
        rc = 1;
      }
    }
  }
  close_end(&a);
  close_end(&b);
  if (!rc) printf("consumer ok: %d bytes written with OpenMRC %s\n", kBytes, openmrc_version());
  return rc;
}
