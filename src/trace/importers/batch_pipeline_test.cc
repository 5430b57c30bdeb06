#include "src/trace/importers/batch_pipeline.h"

#include <atomic>
#include <string>
#include <thread>
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

// Each slot remembers which batch was parsed into it; merges record that in order.
struct Recorder {
  explicit Recorder(int workers) : slots(BatchPipeline::SlotsFor(workers), -1) {}
  Status Parse(const EventBatchBytes& b, size_t slot) {
    if (slots[slot] != -1) return InternalError("a slot parsed again before its merge");
    slots[slot] = b.doc_offset;
    return OkStatus();
  }
  Status Merge(size_t slot) {
    merged.push_back(slots[slot]);
    slots[slot] = -1;
    return OkStatus();
  }
  std::vector<int64_t> slots;   // by slot; a slot is touched by one thread at a time
  std::vector<int64_t> merged;  // merges run one at a time; read after Drain
};

TEST(BatchPipelineTest, ParsesOnEveryWorkerAndMergesInOrderRecyclingBuffers) {
  for (int workers : {1, 2, 4}) {
    SCOPED_TRACE(workers);
    Recorder r(workers);
    BatchPipeline pipeline(
        workers, [&](const EventBatchBytes& b, size_t slot) { return r.Parse(b, slot); },
        [&](size_t slot) { return r.Merge(slot); });
    ASSERT_EQ(pipeline.slots(), BatchPipeline::SlotsFor(workers));
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
    ASSERT_EQ(r.merged.size(), 1000u);
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(r.merged[i], i);
    EXPECT_GT(recycled, 0) << "Submit hands back buffers the workers are done with";
  }
}

TEST(BatchPipelineTest, ParsesRunAtOnce) {
  // Two workers: the first parse waits until the second has started, which only a second thread
  // can do (the test hangs, and the CTest timeout fails it, if parses ran one at a time).
  std::atomic<int> started{0};
  Recorder r(2);
  BatchPipeline pipeline(
      2,
      [&](const EventBatchBytes& b, size_t slot) {
        started.fetch_add(1);
        while (b.doc_offset == 0 && started.load() < 2) std::this_thread::yield();
        return r.Parse(b, slot);
      },
      [&](size_t slot) { return r.Merge(slot); });
  for (int i = 0; i < 2; ++i) {
    EventBatchBytes b = BatchNumbered(i);
    ASSERT_TRUE(pipeline.Submit(&b).ok());
  }
  ASSERT_TRUE(pipeline.Drain().ok());
  EXPECT_EQ(r.merged, (std::vector<int64_t>{0, 1}));
}

TEST(BatchPipelineTest, TheFirstErrorInOrderStopsTheWorkAndIsReturned) {
  for (int workers : {1, 3}) {
    SCOPED_TRACE(workers);
    Recorder r(workers);
    BatchPipeline pipeline(
        workers,
        [&](const EventBatchBytes& b, size_t slot) -> Status {
          if (b.doc_offset == 3) return InvalidArgumentError("batch 3 is bad");
          if (b.doc_offset == 4) return InvalidArgumentError("batch 4 is bad too");
          return r.Parse(b, slot);
        },
        [&](size_t slot) -> Status {
          if (r.slots[slot] == 5) return InvalidArgumentError("batch 5 does not merge");
          return r.Merge(slot);
        });
    Status submitted;
    for (int i = 0; i < 50 && submitted.ok(); ++i) {
      EventBatchBytes b = BatchNumbered(i);
      submitted = pipeline.Submit(&b);
    }
    Status drained = pipeline.Drain();
    EXPECT_EQ(drained.message(), "batch 3 is bad");
    if (!submitted.ok()) {
      EXPECT_EQ(submitted.message(), "batch 3 is bad");
    }
    EXPECT_EQ(r.merged, (std::vector<int64_t>{0, 1, 2})) << "nothing after the failing batch";
    EventBatchBytes late = BatchNumbered(99);
    EXPECT_EQ(pipeline.Submit(&late).message(), "batch 3 is bad");
  }
}

TEST(BatchPipelineTest, AMergeErrorStopsTheWorkToo) {
  Recorder r(2);
  BatchPipeline pipeline(
      2, [&](const EventBatchBytes& b, size_t slot) { return r.Parse(b, slot); },
      [&](size_t slot) -> Status {
        if (r.slots[slot] == 2) return InvalidArgumentError("batch 2 does not merge");
        return r.Merge(slot);
      });
  Status submitted;
  for (int i = 0; i < 50 && submitted.ok(); ++i) {
    EventBatchBytes b = BatchNumbered(i);
    submitted = pipeline.Submit(&b);
  }
  EXPECT_EQ(pipeline.Drain().message(), "batch 2 does not merge");
  EXPECT_EQ(r.merged, (std::vector<int64_t>{0, 1}));
}

TEST(BatchPipelineTest, DestroyingWithBatchesQueuedDoesNotHang) {
  Recorder r(2);
  {
    BatchPipeline pipeline(
        2, [&](const EventBatchBytes& b, size_t slot) { return r.Parse(b, slot); },
        [&](size_t slot) { return r.Merge(slot); });
    for (int i = 0; i < 10; ++i) {
      EventBatchBytes b = BatchNumbered(i);
      ASSERT_TRUE(pipeline.Submit(&b).ok());
    }
  }  // joins; queued batches may be dropped
  for (size_t i = 0; i < r.merged.size(); ++i) EXPECT_EQ(r.merged[i], static_cast<int64_t>(i));
}

}  // namespace
}  // namespace titan::trace
