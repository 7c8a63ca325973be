// SPDX-License-Identifier: BSD-2-Clause
// Conversions between the C API's verbs types and the core's, shared by the
// API's translation units. Internal to src/api.
#pragma once

#include <infiniband/verbs.h>

#include "api/objects.hpp"
#include "core/types.hpp"
#include "platform/sock_addr.hpp"
#include "util/result.hpp"

namespace mrc::api {

/// A GID as an address: ::ffff:a.b.c.d is IPv4, anything else IPv6 (port 0).
platform::SockAddr gid_to_addr(const ibv_gid& gid);
ibv_gid addr_to_gid(const platform::SockAddr& a);
/// The errno an OCP call returns for a core error.
int errno_of(Errc e);
/// Delivers a device event to the context that owns the object it names
/// (engine thread).
void route_event(SoftDevice& dev, const core::Event& e);

// The controller's side of QPs and CQs (ctl.cc).
/// `qp` moves to controller profiles (ev, cc): holds them (errno EINVAL if
/// one is not ONLINE) before the QP is modified ...
int ctl_attach_qp(SoftDevice& dev, uint64_t ev, uint64_t cc);
/// ... drops a hold (the new one when the modify failed, a destroyed QP's) ...
void ctl_detach_qp(SoftDevice& dev, uint64_t ev, uint64_t cc);
/// ... or, when the modify succeeded, drops the QP's old hold and records
/// the new one.
void ctl_set_qp_profiles(SoftDevice& dev, mrc_qp* qp, uint64_t ev, uint64_t cc);
/// A QP that reached RTR denies its profile's DENIED EVs.
void ctl_apply_denials(SoftDevice& dev, mrc_qp* qp);
/// A QP's EV changed state (engine thread).
void ctl_on_ev_event(SoftDevice& dev, const core::EvEvent& e);
/// An endpoint request's answer or timeout, for the batch call waiting on it.
void ctl_on_ep_result(SoftDevice& dev, const core::ProbeResult& r);
/// mrc_destroy_cq for an EV event CQ.
int ctl_destroy_event_cq(mrc_cq* cq);

}  // namespace mrc::api
