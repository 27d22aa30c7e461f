// A DataSource whose whole position is its random generator and the number of batches drawn
// (every source exec/data has): state() and restore() written once. Internal to exec/data/
// (it brings in exec/layers/common.h's Rng, which data.h's users need not see).
#pragma once

#include <cstdint>

#include "exec/data/data.h"
#include "exec/layers/common.h"

namespace pw::exec {

class SeededDataSource : public DataSource {
 public:
  DataState state() const final { return {rng_.state(), batches_}; }
  void restore(const DataState& s) final {
    rng_.set_state(s.rng);
    batches_ = s.batches;
  }

 protected:
  explicit SeededDataSource(uint64_t seed) : rng_(seed) {}
  Rng rng_;
  int64_t batches_ = 0;
};

}  // namespace pw::exec
