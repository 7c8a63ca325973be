// SPDX-License-Identifier: BSD-2-Clause
// Tests for platform/os_error.hpp.
#include "platform/os_error.hpp"

#include <gtest/gtest.h>

#include <cerrno>

namespace mrc::platform {
namespace {

TEST(PlatformOsError, MapsErrno) {
  EXPECT_EQ(errc_from_errno(EAGAIN), Errc::would_block);
  EXPECT_EQ(errc_from_errno(ENOBUFS), Errc::would_block);
  EXPECT_EQ(errc_from_errno(EADDRINUSE), Errc::busy);
  EXPECT_EQ(errc_from_errno(EMSGSIZE), Errc::too_big);
  EXPECT_EQ(errc_from_errno(ENOPROTOOPT), Errc::not_supported);
  EXPECT_EQ(errc_from_errno(EPERM), Errc::permission);
  EXPECT_EQ(errc_from_errno(EIO), Errc::io);
}

TEST(PlatformOsError, RecordsLastErrorPerThread) {
  EXPECT_EQ(record_os_error(EADDRINUSE, "bind"), Errc::busy);
  EXPECT_EQ(last_error().errno_value, EADDRINUSE);
  EXPECT_EQ(last_error_message(), "bind: Address already in use (EADDRINUSE)");
}

}  // namespace
}  // namespace mrc::platform
