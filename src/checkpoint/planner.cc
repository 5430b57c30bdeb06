#include "src/checkpoint/planner.h"

#include <algorithm>
#include <numeric>

#include "src/checkpoint/manifest.h"

namespace titan::checkpoint {

std::vector<PlannedPiece> PlanReplicated(const std::vector<PlanInput>& inputs, int world_size,
                                         uint64_t split_bytes) {
  struct Candidate {
    PlannedPiece piece;
    uint64_t bytes;
  };
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const PlanInput& in = inputs[i];
    uint64_t elem = DTypeSize(in.dtype);
    uint64_t bytes = static_cast<uint64_t>(std::max<int64_t>(NumElements(in.shape), 0)) * elem;
    int64_t rows = in.shape.empty() ? 1 : in.shape[0];
    int64_t pieces = 1;
    if (!in.shape.empty() && split_bytes > 0 && bytes >= 2 * split_bytes && rows > 1) {
      pieces = std::min<int64_t>({static_cast<int64_t>(bytes / split_bytes), world_size, rows});
    }
    for (int64_t p = 0; p < pieces; ++p) {
      int64_t begin = rows * p / pieces, end = rows * (p + 1) / pieces;
      PlannedPiece piece;
      piece.input = i;
      piece.offsets.assign(in.shape.size(), 0);
      piece.lengths = in.shape;
      if (!in.shape.empty()) {
        piece.offsets[0] = begin;
        piece.lengths[0] = end - begin;
      }
      uint64_t piece_bytes =
          rows == 0 ? 0 : bytes / static_cast<uint64_t>(rows) * static_cast<uint64_t>(end - begin);
      candidates.push_back({std::move(piece), piece_bytes});
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const Candidate& a, const Candidate& b) {
                     if (a.bytes != b.bytes) return a.bytes > b.bytes;
                     const std::string& na = inputs[a.piece.input].name;
                     const std::string& nb = inputs[b.piece.input].name;
                     if (na != nb) return na < nb;
                     return a.piece.offsets < b.piece.offsets;
                   });
  std::vector<uint64_t> load(static_cast<size_t>(std::max(world_size, 1)), 0);
  std::vector<PlannedPiece> out;
  out.reserve(candidates.size());
  for (Candidate& c : candidates) {
    size_t owner = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[owner] += std::max<uint64_t>(c.bytes, 1);
    c.piece.owner = static_cast<int>(owner);
    out.push_back(std::move(c.piece));
  }
  return out;
}

}  // namespace titan::checkpoint
