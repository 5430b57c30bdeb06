// FairQueue: the gateway's waiting room, free of I/O so that its policy is tested on its own.
//
// Requests wait in one bounded queue per priority class. The next request to dispatch comes
// from the highest-priority class that has one; inside a class, tenants share by weight with
// start-time fair queuing (each waiter's tag = max(virtual time, its tenant's last finish tag),
// the tenant's finish tag then grows by 1/weight; the smallest tag goes first), so a tenant
// that floods the queue delays itself, not the others. Ties keep arrival order. A tenant with
// no recent tag starts one share behind the virtual time (virtual time + 1/weight), as if it
// had just been served: minting a new tenant name (a header, an API key) for every request
// buys no place ahead of tenants already waiting, whose wait stays bounded by how many
// requests the others have queued, not by how fast they send.
//
// Memory: O(waiters + tenants with a recent finish tag); tags of tenants that fell behind the
// virtual time are dropped, in sweeps spaced so that each costs O(1) per dispatch amortised.
// Thread safety: none; owned by the gateway's event loop.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/gateway/config.h"

namespace titan::gateway {

// Why a request was not served by a replica. kNone: it was.
enum class Shed {
  kNone,
  kQueueFull,     // its class's queue is full (429)
  kDeadline,      // its expected wait exceeds its deadline (429, at once)
  kQueueTimeout,  // it waited longer than admission.queue_timeout or its deadline (429)
  kNoReplica,     // no replica is ready (503)
  kDraining,      // the gateway is shutting down (503)
};
std::string_view ShedName(Shed shed);

struct Waiter {
  uint64_t id = 0;
  size_t class_index = 0;
  std::string tenant;
  int64_t tokens = 0;       // prompt + max_tokens, for the per-replica token budget
  int64_t enqueued_ns = 0;  // monotonic
  int64_t deadline_ns = 0;  // absolute monotonic; 0: none
  void* owner = nullptr;    // the gateway's request, opaque here
};

class FairQueue {
 public:
  explicit FairQueue(const AdmissionConfig& config);
  // Applies new classes and weights (a reload); waiters of a class that is gone move to the
  // default class, keeping their order.
  void Reconfigure(const AdmissionConfig& config);

  // The index of class `name`, or of the default class when unknown or empty.
  size_t ClassIndex(std::string_view name) const;
  const std::string& ClassName(size_t index) const { return classes_[index].config.name; }
  // Tenants with a remembered finish tag, all classes (bounded by the sweeps; for tests).
  size_t tracked_tenants() const;
  size_t class_count() const { return classes_.size(); }

  // kQueueFull when w's class has max_queue waiters; else queued (kNone).
  Shed Push(Waiter w);
  // The next waiter to dispatch, or nullptr when none waits. Valid until the next change.
  const Waiter* Peek() const;
  // Up to `limit` waiters in dispatch order (Peek() first): the dispatcher looks past a waiter
  // that must wait for its own replica (affinity) or for room in a token budget.
  std::vector<const Waiter*> Front(size_t limit) const;
  // Removes and returns Peek()'s waiter. Precondition: Peek() != nullptr.
  Waiter Pop();
  // Removes waiter `id` for dispatch (it is served: the class's virtual time advances to its
  // tag). Precondition: `id` is queued.
  Waiter Take(uint64_t id);
  // Removes waiter `id` (timed out, cancelled). False when it is not queued.
  bool Remove(uint64_t id);

  // Waiters that would be dispatched before a newcomer of `class_index` (its class and higher).
  size_t AheadOf(size_t class_index) const;
  size_t depth(size_t class_index) const { return classes_[class_index].order.size(); }
  size_t size() const { return by_id_.size(); }

 private:
  struct Entry {
    double tag;
    uint64_t seq;
    bool operator<(const Entry& o) const { return tag != o.tag ? tag < o.tag : seq < o.seq; }
  };
  struct Class {
    PriorityClass config;
    std::map<Entry, Waiter> order;
    double virtual_time = 0;
    std::unordered_map<std::string, double> finish;  // tenant -> last finish tag
    size_t sweep_at = 64;  // sweep stale tags when `finish` grows past this
  };
  double WeightOf(const std::string& tenant) const;
  void Insert(size_t class_index, Waiter w);

  std::vector<Class> classes_;
  size_t default_class_ = 0;
  std::unordered_map<std::string, double> weights_;
  std::unordered_map<uint64_t, std::pair<size_t, Entry>> by_id_;
  uint64_t next_seq_ = 0;
};

}  // namespace titan::gateway
