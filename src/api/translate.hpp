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

}  // namespace mrc::api
