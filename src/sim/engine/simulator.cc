#include "sim/engine/simulator.hpp"

namespace mrc::sim {

bool Simulator::run_until(Time end) {
  stop_ = false;
  while (!queue_.empty()) {
    if (queue_.top().at > end) {
      now_ = end;
      return true;
    }
    const Event e = queue_.pop();
    // The next handler's object is most likely cold: start loading it now.
    if (!queue_.empty()) __builtin_prefetch(queue_.top().node);
    now_ = e.at;
    ++events_;
    e.node->on_event(*this, e.tag);
    if (stop_) return !queue_.empty();
  }
  if (now_ < end && !end.is_never()) now_ = end;
  return false;
}

}  // namespace mrc::sim
