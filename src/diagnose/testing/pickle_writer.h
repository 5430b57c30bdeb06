// PickleWriter (tests and fuzzer seeds): writes pickles the way torch's C++ pickler writes a
// Flight Recorder dump (protocol 2: EMPTY_DICT + MARK ... SETITEMS, BINUNICODE strings memoized
// with BINPUT, BININT1/BININT/LONG1 integers, BINFLOAT, TUPLEn, typed int lists through
// GLOBAL torch.jit._pickle build_intlist + REDUCE), plus hostile pieces on request. Debian's
// torch 1.13 has no Flight Recorder, so the tests build dumps in its documented format with this.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace titan::diagnose::testing {

class PickleWriter {
 public:
  PickleWriter() { Raw("\x80\x02"); }
  PickleWriter& Op(char op) {
    out_ += op;
    return *this;
  }
  PickleWriter& Raw(std::string_view bytes) {
    out_ += bytes;
    return *this;
  }
  PickleWriter& Mark() { return Op('('); }
  PickleWriter& EmptyDict() { return Op('}'); }
  PickleWriter& EmptyList() { return Op(']'); }
  PickleWriter& SetItems() { return Op('u'); }
  PickleWriter& Appends() { return Op('e'); }
  PickleWriter& Tuple() { return Op('t'); }
  PickleWriter& Tuple2() { return Op('\x86'); }
  PickleWriter& None() { return Op('N'); }
  PickleWriter& Bool(bool v) { return Op(v ? '\x88' : '\x89'); }
  PickleWriter& Stop() { return Op('.'); }
  PickleWriter& Str(std::string_view s) {
    Op('X');
    Le(s.size(), 4);
    out_ += s;
    Op('q');  // BINPUT, as torch memoizes strings
    out_ += static_cast<char>(memo_++ & 0xff);
    return *this;
  }
  PickleWriter& Int(int64_t v) {
    if (v >= 0 && v < 256) {
      Op('K');
      Le(static_cast<uint64_t>(v), 1);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      Op('J');
      Le(static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(v))), 4);
    } else {
      Op('\x8a');
      Le(8, 1);
      Le(static_cast<uint64_t>(v), 8);
    }
    return *this;
  }
  PickleWriter& Float(double d) {
    Op('G');
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    for (int i = 7; i >= 0; --i) out_ += static_cast<char>((bits >> (8 * i)) & 0xff);
    return *this;
  }
  PickleWriter& Global(std::string_view module, std::string_view name) {
    Op('c');
    out_ += module;
    out_ += '\n';
    out_ += name;
    out_ += '\n';
    return *this;
  }
  // torch's typed list: GLOBAL build_intlist, MARK, EMPTY_LIST, MARK, items, APPENDS, TUPLE,
  // REDUCE.
  template <typename... Ints>
  PickleWriter& IntList(Ints... values) {
    Global("torch.jit._pickle", "build_intlist").Mark().EmptyList().Mark();
    (Int(values), ...);
    return Appends().Tuple().Op('R');
  }
  const std::string& bytes() const { return out_; }

 private:
  void Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  std::string out_;
  int memo_ = 0;
};

}  // namespace titan::diagnose::testing
