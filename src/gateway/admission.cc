#include "src/gateway/admission.h"

#include <algorithm>

#include "src/base/check.h"

namespace titan::gateway {

std::string_view ShedName(Shed shed) {
  switch (shed) {
    case Shed::kNone:
      return "none";
    case Shed::kQueueFull:
      return "queue_full";
    case Shed::kDeadline:
      return "deadline";
    case Shed::kQueueTimeout:
      return "queue_timeout";
    case Shed::kNoReplica:
      return "no_replica";
    case Shed::kDraining:
      return "draining";
  }
  return "?";
}

FairQueue::FairQueue(const AdmissionConfig& config) { Reconfigure(config); }

void FairQueue::Reconfigure(const AdmissionConfig& config) {
  TITAN_CHECK(!config.classes.empty()) << "admission needs a class";
  weights_.clear();
  for (const TenantWeight& w : config.tenant_weights) weights_[w.tenant] = w.weight;
  // The same classes: new bounds and weights, and every waiter keeps its tag and place.
  bool same = classes_.size() == config.classes.size();
  for (size_t i = 0; same && i < classes_.size(); ++i) {
    same = classes_[i].config.name == config.classes[i].name;
  }
  if (same) {
    for (size_t i = 0; i < classes_.size(); ++i) {
      classes_[i].config = config.classes[i];
      if (classes_[i].config.name == config.default_class) default_class_ = i;
    }
    return;
  }
  std::vector<Waiter> queued;
  for (Class& c : classes_) {
    for (auto& [entry, w] : c.order) queued.push_back(std::move(w));
  }
  std::vector<std::string> old_names;
  for (const Class& c : classes_) old_names.push_back(c.config.name);
  classes_.clear();
  by_id_.clear();
  for (const PriorityClass& pc : config.classes) {
    classes_.push_back(Class{pc, {}, 0, {}});
  }
  default_class_ = 0;
  for (size_t i = 0; i < classes_.size(); ++i) {
    if (classes_[i].config.name == config.default_class) default_class_ = i;
  }
  // Re-queue by arrival (ties in their old dispatch order) so that no one loses their place.
  std::stable_sort(queued.begin(), queued.end(),
                   [](const Waiter& a, const Waiter& b) { return a.enqueued_ns < b.enqueued_ns; });
  for (Waiter& w : queued) {
    const size_t index = ClassIndex(w.class_index < old_names.size() ? old_names[w.class_index]
                                                                     : std::string_view());
    w.class_index = index;
    Insert(index, std::move(w));
  }
}

size_t FairQueue::ClassIndex(std::string_view name) const {
  for (size_t i = 0; i < classes_.size(); ++i) {
    if (classes_[i].config.name == name) return i;
  }
  return default_class_;
}

size_t FairQueue::tracked_tenants() const {
  size_t n = 0;
  for (const Class& c : classes_) n += c.finish.size();
  return n;
}

double FairQueue::WeightOf(const std::string& tenant) const {
  auto it = weights_.find(tenant);
  return it == weights_.end() ? 1.0 : it->second;
}

void FairQueue::Insert(size_t class_index, Waiter w) {
  Class& c = classes_[class_index];
  const double share = 1.0 / WeightOf(w.tenant);
  // A tenant without a recent tag enters as if it had just been served.
  double& finish = c.finish.try_emplace(w.tenant, c.virtual_time + share).first->second;
  const double start = std::max(c.virtual_time, finish);
  finish = start + share;
  const Entry entry{start, next_seq_++};
  by_id_[w.id] = {class_index, entry};
  c.order.emplace(entry, std::move(w));
}

Shed FairQueue::Push(Waiter w) {
  TITAN_CHECK(w.class_index < classes_.size()) << "no class " << w.class_index;
  Class& c = classes_[w.class_index];
  if (c.order.size() >= c.config.max_queue) return Shed::kQueueFull;
  Insert(w.class_index, std::move(w));
  return Shed::kNone;
}

const Waiter* FairQueue::Peek() const {
  for (const Class& c : classes_) {
    if (!c.order.empty()) return &c.order.begin()->second;
  }
  return nullptr;
}

std::vector<const Waiter*> FairQueue::Front(size_t limit) const {
  std::vector<const Waiter*> out;
  for (const Class& c : classes_) {
    for (const auto& [entry, w] : c.order) {
      if (out.size() >= limit) return out;
      out.push_back(&w);
    }
  }
  return out;
}

Waiter FairQueue::Pop() {
  const Waiter* head = Peek();
  TITAN_CHECK(head != nullptr) << "Pop on an empty queue";
  return Take(head->id);
}

Waiter FairQueue::Take(uint64_t id) {
  auto found = by_id_.find(id);
  TITAN_CHECK(found != by_id_.end()) << "Take of a waiter that is not queued";
  Class& c = classes_[found->second.first];
  auto it = c.order.find(found->second.second);
  c.virtual_time = std::max(c.virtual_time, it->first.tag);
  Waiter w = std::move(it->second);
  c.order.erase(it);
  by_id_.erase(found);
  // Tenants whose finish tag fell behind the virtual time would start there anyway: drop them.
  // The next sweep waits until the map has doubled, so sweeping is O(1) per dispatch amortised
  // even when few tags are stale yet.
  if (c.finish.size() > c.sweep_at) {
    for (auto f = c.finish.begin(); f != c.finish.end();) {
      f = f->second <= c.virtual_time ? c.finish.erase(f) : std::next(f);
    }
    c.sweep_at = std::max<size_t>(64, 2 * (c.finish.size() + c.order.size()));
  }
  return w;
}

bool FairQueue::Remove(uint64_t id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return false;
  classes_[it->second.first].order.erase(it->second.second);
  by_id_.erase(it);
  return true;
}

size_t FairQueue::AheadOf(size_t class_index) const {
  size_t ahead = 0;
  for (size_t i = 0; i <= class_index && i < classes_.size(); ++i) {
    ahead += classes_[i].order.size();
  }
  return ahead;
}

}  // namespace titan::gateway
