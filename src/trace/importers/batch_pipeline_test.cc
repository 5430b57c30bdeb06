#include "src/trace/importers/batch_pipeline.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace titan::trace {
namespace {

EventBatchBytes BatchNumbered(int i) {
  EventBatchBytes b;
  b.doc_offset = i;
  b.bytes.assign(16, 'x');
  b.len = 16;
  return b;
}

TEST(BatchPipelineTest, WorksOnEveryBatchInOrderAndRecyclesBuffers) {
  std::vector<int64_t> seen;  // written by the worker only; read after Drain
  BatchPipeline pipeline([&](const EventBatchBytes& b) {
    seen.push_back(b.doc_offset);
    return OkStatus();
  });
  EventBatchBytes next;
  int recycled = 0;
  for (int i = 0; i < 1000; ++i) {
    next.doc_offset = i;
    next.len = 16;
    if (next.bytes.capacity() >= 16) ++recycled;
    next.bytes.resize(16, 'x');
    ASSERT_TRUE(pipeline.Submit(&next).ok());
  }
  ASSERT_TRUE(pipeline.Drain().ok());
  ASSERT_EQ(seen.size(), 1000u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(seen[i], i);
  EXPECT_GT(recycled, 0) << "Submit hands back buffers the worker is done with";
}

TEST(BatchPipelineTest, TheFirstErrorStopsTheWorkAndIsReturned) {
  std::vector<int64_t> seen;
  BatchPipeline pipeline([&](const EventBatchBytes& b) -> Status {
    seen.push_back(b.doc_offset);
    if (b.doc_offset == 3) return InvalidArgumentError("batch 3 is bad");
    if (b.doc_offset == 5) return InvalidArgumentError("batch 5 is bad too");
    return OkStatus();
  });
  Status submitted;
  for (int i = 0; i < 50 && submitted.ok(); ++i) {
    EventBatchBytes b = BatchNumbered(i);
    submitted = pipeline.Submit(&b);
  }
  Status drained = pipeline.Drain();
  EXPECT_EQ(drained.message(), "batch 3 is bad");
  if (!submitted.ok()) EXPECT_EQ(submitted.message(), "batch 3 is bad");
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3})) << "nothing after the failing batch runs";
  EventBatchBytes late = BatchNumbered(99);
  EXPECT_EQ(pipeline.Submit(&late).message(), "batch 3 is bad");
}

TEST(BatchPipelineTest, DestroyingWithBatchesQueuedDoesNotHang) {
  std::vector<int64_t> seen;
  {
    BatchPipeline pipeline([&](const EventBatchBytes& b) {
      seen.push_back(b.doc_offset);
      return OkStatus();
    });
    for (int i = 0; i < 10; ++i) {
      EventBatchBytes b = BatchNumbered(i);
      ASSERT_TRUE(pipeline.Submit(&b).ok());
    }
  }  // joins; queued batches may be dropped
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<int64_t>(i));
}

}  // namespace
}  // namespace titan::trace
