// SPDX-License-Identifier: BSD-2-Clause
#include <gtest/gtest.h>

#include "harness/fabric.hpp"

using namespace mrc;
using namespace mrc::harness;

TEST(Smoke, OneMegabyteWrite) {
  FabricConfig fc;
  fc.planes = 2;
  fc.paths_per_plane = 4;
  Fabric f(fc);
  auto& src = f.alloc(0, 1 << 20);
  auto& dst = f.alloc(1, 1 << 20);
  for (size_t i = 0; i < src.mem.size(); ++i) src.mem[i] = static_cast<uint8_t>(i * 7 + 3);
  auto qp = f.connect(0, 1);
  core::SendWr wr;
  wr.wr_id = 42;
  wr.local_addr = src.addr();
  wr.lkey = src.mr.lkey;
  wr.length = 1 << 20;
  wr.remote_addr = dst.addr();
  wr.rkey = dst.mr.rkey;
  ASSERT_TRUE(f.ep(0).post_send(f.now(), qp.a, wr).ok());
  f.kick(0);
  bool done = false;
  core::WorkCompletion wc;
  f.run_until([&] {
    while (auto e = f.next_event(0)) {
      if (auto* w = std::get_if<core::WorkCompletion>(&*e)) { wc = *w; done = true; }
    }
    return done;
  }, Time::zero() + Duration::ms(10));
  ASSERT_TRUE(done);
  EXPECT_EQ(wc.status, core::WcStatus::success);
  EXPECT_EQ(wc.wr_id, 42u);
  EXPECT_EQ(src.mem, dst.mem);
  printf("finished at %.2f us, sent %lu\n", f.now().to_us(), static_cast<unsigned long>(f.stats().sent));
}
