// The `args` fields titan reads from an event, shared by the DOM and On-Demand batch parsers
// (both simdjson value types offer get_int64()/get_string()). Each parser instantiates the
// template with its own value type, so the AVX2-compiled instance never replaces the other.
#pragma once

#include <cstdint>
#include <string_view>

#include "src/trace/importers/event_batch.h"
#include "src/trace/model.h"

namespace titan::trace::internal {

struct ArgsState {
  CollectiveArgs coll;
  bool has_coll = false;
};

// Applies one `args` member to the op or its collective arguments; unknown keys are ignored.
template <typename Value>
inline void ApplyArg(std::string_view key, Value& v, RankTrace* out, Op* op, ArgsState* st) {
  int64_t i;
  std::string_view s;
  CollectiveArgs& coll = st->coll;
  switch (key.size()) {
    case 3:
      if ((key == "Seq" || key == "seq") && !v.get_int64().get(i)) {
        coll.seq = i;
        st->has_coll = true;
      }
      break;
    case 5:
      if (key == "dtype" && !v.get_string().get(s)) coll.dtype = InternString(out, s);
      break;
    case 6:
      if (key == "stream" && !v.get_int64().get(i)) op->stream = i;
      break;
    case 10:
      if (key == "Group size" && !v.get_int64().get(i)) {
        coll.group_size = static_cast<int32_t>(i);
        st->has_coll = true;
      }
      break;
    case 11:
      if (key == "correlation" && !v.get_int64().get(i)) op->correlation = i;
      break;
    case 13:
      if (key == "In msg nelems" && !v.get_int64().get(i)) coll.in_nelems = i;
      break;
    case 14:
      if (key == "Out msg nelems" && !v.get_int64().get(i)) coll.out_nelems = i;
      break;
    case 15:
      if (key == "Collective name" && !v.get_string().get(s)) {
        coll.collective_name = InternString(out, s);
        st->has_coll = true;
      }
      break;
    case 18:
      if (key == "Process Group Name" && !v.get_string().get(s)) {
        coll.process_group = InternString(out, s);
        st->has_coll = true;
      }
      break;
    case 19:
      if (key == "Process Group Ranks" && !v.get_string().get(s)) {
        coll.process_group_ranks = InternString(out, s);
      }
      break;
    case 25:
      if (key == "Process Group Description" && !v.get_string().get(s)) {
        coll.process_group_desc = InternString(out, s);
      }
      break;
    default:
      break;
  }
}

inline void FinishArgs(const ArgsState& st, RankTrace* out, Op* op) {
  if (st.has_coll) op->collective = AddCollective(out, st.coll);
}

}  // namespace titan::trace::internal
