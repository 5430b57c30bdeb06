// A safe reader of pickles that hold plain values only (dicts, lists, tuples, sets, strings,
// bytes, numbers, booleans, None), such as PyTorch's NCCL Flight Recorder dumps.
//
// It interprets the pickle opcodes of protocols 0 to 5 itself and never constructs an object:
// a global is accepted only when it is one of the pure list builders torch's C++ pickler writes
// (torch.jit._pickle.build_intlist, build_doublelist, build_boollist) or collections.OrderedDict,
// each read as the plain list or dict it builds; any other class, BUILD, persistent id or
// extension code is refused with an error naming it and its byte offset.
//
// The result is a tree of nodes in one arena (no allocation per value; strings point into the
// input where the pickle stores them raw). A value the memo references twice is shared, not
// copied, so a hostile pickle cannot make the tree grow beyond its own size; walkers bound their
// depth, which also stops at a container that contains itself.
//
// Thread safety: a PickleTree is immutable after ReadPlainPickle; the input must outlive it.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"

namespace titan::diagnose {

class PickleTree {
 public:
  enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kString, kBytes, kList, kDict };
  struct Node {
    Kind kind = Kind::kNone;
    int64_t i = 0;                 // kBool, kInt
    double d = 0;                  // kFloat
    std::string_view s;            // kString, kBytes
    uint32_t first = 0, last = 0;  // kList (tuples and sets too), kDict: slots (keys, values)
    uint32_t count = 0;            // items (a dict's keys and values both count)
  };
  using Id = uint32_t;  // 0 is "no node"

  const Node& node(Id id) const { return nodes_[id]; }
  Id root() const { return root_; }
  // The items of a list (or a dict's keys and values in turn).
  std::vector<Id> Items(Id container) const;
  // A dict's value for a string key; 0 if absent or not a dict.
  Id Get(Id dict, std::string_view key) const;
  // The node as JSON (dict keys as strings), at most `max_depth` deep (deeper: an error).
  Result<nlohmann::json> ToJson(Id id, int max_depth = 64) const;

 private:
  friend class PickleMachine;
  struct Slot {
    Id value = 0;
    uint32_t next = 0;
  };
  std::vector<Node> nodes_{Node{}};  // [0] is the null node
  std::vector<Slot> slots_{Slot{}};
  std::deque<std::string> decoded_;  // strings that needed decoding
  Id root_ = 0;
};

// INVALID_ARGUMENT naming `what`, the byte offset and the opcode for a malformed pickle, a refused
// global, or more than `max_nodes` values.
Result<PickleTree> ReadPlainPickle(std::string_view data, std::string_view what,
                                   int64_t max_nodes = 50'000'000);

// Whether `data` starts like a pickle of protocol 2 or later (the PROTO opcode).
bool LooksLikePickle(std::string_view data);

}  // namespace titan::diagnose
