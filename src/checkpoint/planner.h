// Save planning: which rank writes which piece of which tensor.
//
// A sharded tensor slice is written by the rank that holds it. A replicated tensor (every rank
// holds the same full copy) is written once: large ones are split along dimension 0 into up to
// world_size row ranges, and pieces go to the least-loaded rank (largest first, ties by name,
// then lowest rank). The plan depends only on the replicated tensors' names, shapes and dtypes,
// so every rank computes the same plan without communicating.
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/checkpoint/dtype.h"

namespace titan::checkpoint {

struct PlanInput {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
};

struct PlannedPiece {
  size_t input = 0;  // index into the inputs
  std::vector<int64_t> offsets;
  std::vector<int64_t> lengths;
  int owner = 0;  // the rank that writes it
};

// Tensors of at least split_bytes are split along dimension 0 into pieces of about
// split_bytes or more (at most world_size pieces).
std::vector<PlannedPiece> PlanReplicated(const std::vector<PlanInput>& inputs, int world_size,
                                         uint64_t split_bytes);

}  // namespace titan::checkpoint
