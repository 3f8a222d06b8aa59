// checkify's internals (stdlib/checkify*.cpp): the Error's parts, the codes'
// messages, the check sites recorded in traced code, and the walk that
// functionalizes them.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "ir/function.hpp"
#include "lang/interp_impl.hpp"
#include "stdlib/checkify.hpp"
#include "stdlib/namedtuple.hpp"
#include "stdlib/pytree.hpp"

namespace pxl::checkify_impl {

inline constexpr const char* kNan = "NaNError";
inline constexpr const char* kDiv = "DivisionByZeroError";
inline constexpr const char* kOob = "OOBError";
inline constexpr const char* kCheck = "FailedCheckError";

// The static part of one error code (JAX's metadata: the exception's treedef).
struct ErrorMeta {
  std::string kind; // kNan, kDiv, kOob or kCheck
  std::string prim; // NaN: the primitive
  Shape shape;      // OOB: the indexed array's shape
  std::string fmt;  // check: the message (a str.format string)
  TreeDef tree;     // check: of the tuple (positional..., keyword values...)
  size_t npos = 0;
  std::vector<std::string> keywords;
};

// One error type's slot (JAX's _pred, _code and _payload entries).
struct Slot {
  Tensor pred, code;
  std::vector<Tensor> payload;
};
using ErrState = std::map<std::string, Slot>; // error type -> slot

// The error type (JAX's ErrorEffect): the kind, and for a check the types of
// its formatting arguments; and back to the kind.
std::string slot_key(const std::string& kind, std::span<const Tensor> payload);
std::string slot_kind(const std::string& key);

// Per interpreter: the codes' messages and the Error class.
struct State {
  InterpreterImpl* in = nullptr;
  int64_t next_code = 1;
  std::map<int64_t, ErrorMeta> meta;
  std::shared_ptr<NamedTupleType> type;
  int64_t add(ErrorMeta m) {
    int64_t c = next_code++;
    meta[c] = std::move(m);
    return c;
  }
};

// A check()/check_error() recorded in traced code: the error's slots (their
// types and payload sizes); the operands are each slot's pred, code, payload.
struct CheckSiteImpl : CheckSite {
  std::shared_ptr<State> st;
  std::vector<std::pair<std::string, size_t>> slots;
  bool debug = false;
  ErrState unpack(std::span<const Tensor> xs) const;
  // Raises the error the operands hold (a check that runs without checkify).
  void run(std::span<const Array> values) const override;
};

// An index bounds check that indexing recorded under checkify: its operands
// are the predicate and JAX's OOBError payload (index, axis, size).
struct OobSite : CheckSite {
  Shape shape;
  void run(std::span<const Array>) const override {} // left out of a run without checkify
};

// lax.cond on a traced predicate traces every branch: under checkify a branch
// begins (and ends) with one of these, whose operand is the predicate under
// which the branch is taken, so that its errors count only then.
struct BranchSite : CheckSite {
  bool begin = true;
  void run(std::span<const Array>) const override {}
};

// Error.get(): None, the message, or per failing example "at mapped index i: ...".
std::optional<std::string> error_message(InterpreterImpl& in, const State& st, const ErrState& err);
// JAX's JaxRuntimeError (a ValueError) with `msg`.
Error runtime_error(const std::string& msg);

// JAX's checkify interpreter: binds f's instructions in `cx` (with f's
// params and consts), adding the checks of the `enabled` error kinds, and
// threads `err` through them. Returns f's results.
std::vector<Tensor> checkify_function(InterpreterImpl& in, State& st, OpContext& cx,
                                      const std::set<std::string>& enabled, const Function& f,
                                      std::span<const Tensor> params,
                                      std::span<const Tensor> consts, ErrState& err);

} // namespace pxl::checkify_impl
