#include "stdlib/arraylike_checks.hpp"

#include <array>
#include <map>
#include <utility>
#include <vector>

#include "lang/args.hpp"

namespace pxl {

namespace {

enum class ArgKind : uint8_t {
  Param,  // one parameter, by position or keyword
  Seq,    // each element of a list/tuple parameter (concatenate's arrays)
  VarArgs // each positional argument from `index` on (*args)
};

// JAX's texts: numpy-level check_arraylike, a lax primitive's bind, and the
// dtype lookup or abstractification some functions reach first.
enum class ErrStyle : uint8_t {
  Numpy,  // "sum requires ndarray or scalar arguments, got <class 'list'> at position 0."
  Lax,    // "Error interpreting argument to add as a JAX value. ..."
  Dtype,  // "Cannot determine dtype of [0.5]"
  JaxType // "Argument '[1.0]' of type '<class 'list'>' is not a valid JAX type"
};

struct CheckRow {
  const char* module;
  const char* function;
  const char* param;
  int index; // positional index; -1 for a keyword-only parameter
  ArgKind kind;
  ErrStyle style;
  const char* err; // the function name the error reports (jnp.abs reports "absolute")
  int pos;         // the position it reports (for Seq/VarArgs, that of the first element)
  bool none_ok;    // the parameter defaults to None, so None is allowed
  bool chained;    // a Seq whose positions follow the previous Seq's (select's choicelist)
  bool str_first;  // checked only when the first positional argument is a string (einsum's
                   // subscripts form; its interleaved form holds lists of its own)
};

constexpr CheckRow kRows[] = {
#include "stdlib/arraylike_table.inc"
};

// What JAX's _arraylike refuses among the values a pytree flattens: a
// container or None. A lax primitive refuses a string as well; a dtype lookup
// only a list or tuple; an abstractification a list, tuple or dict.
bool arraylike(const Value& v, ErrStyle style) {
  if (v.is_obj(ObjKind::List) || v.is_obj(ObjKind::Tuple)) return false;
  switch (style) {
  case ErrStyle::Dtype:
    return true;
  case ErrStyle::JaxType:
    return !v.is_obj(ObjKind::Dict);
  case ErrStyle::Numpy:
    return !v.is_none() && !v.is_obj(ObjKind::Dict);
  case ErrStyle::Lax:
    return !v.is_none() && !v.is_obj(ObjKind::Dict) && !v.is_obj(ObjKind::Str);
  }
  return true;
}

[[noreturn]] void reject(InterpreterImpl& in, const CheckRow& row, const Value& v, size_t pos) {
  std::string cls = repr(in.call(in.builtin("type"), ValueList{v}, Span{}));
  std::string at = std::to_string(pos);
  if (row.style == ErrStyle::Numpy)
    throw Error(ErrCode::Type, std::string(row.err) +
                                   " requires ndarray or scalar arguments, got " + cls +
                                   " at position " + at + ".");
  if (row.style == ErrStyle::Dtype)
    throw Error(ErrCode::Type, "Cannot determine dtype of " + repr(v));
  if (row.style == ErrStyle::JaxType)
    throw Error(ErrCode::Type,
                "Argument '" + repr(v) + "' of type '" + cls + "' is not a valid JAX type");
  throw Error(ErrCode::Type, std::string("Error interpreting argument to ") + row.err +
                                 " as a JAX value. The problematic value is of type " + cls +
                                 " and was passed to " + row.err + " at position " + at + ".");
}

const Value* argument(const CheckRow& row, const CallArgs& a) {
  if (row.index >= 0 && static_cast<size_t>(row.index) < a.pos.size()) return &a.pos[row.index];
  for (const auto& [name, v] : a.kw)
    if (name == row.param) return &v;
  return nullptr;
}

// The checks of one function, in the order of its parameters (JAX checks the
// leading ones first).
void check_call(InterpreterImpl& in, const std::vector<const CheckRow*>& rows, const CallArgs& a) {
  size_t seq_end = 0; // the position after the last sequence's elements
  for (const CheckRow* row : rows) {
    if (row->str_first && (a.pos.empty() || !a.pos[0].is_obj(ObjKind::Str))) continue;
    if (row->kind == ArgKind::VarArgs) {
      for (size_t k = static_cast<size_t>(row->index); k < a.pos.size(); ++k)
        if (!arraylike(a.pos[k], row->style)) reject(in, *row, a.pos[k], row->pos + k - row->index);
      continue;
    }
    const Value* v = argument(*row, a);
    if (!v || (v->is_none() && row->none_ok)) continue;
    if (row->kind == ArgKind::Param) {
      if (!arraylike(*v, row->style)) reject(in, *row, *v, row->pos);
      continue;
    }
    const ValueList* items = sequence_items(*v);
    if (!items) continue; // an array (iterated along its first axis) or the function's own error
    size_t base = row->chained ? seq_end : static_cast<size_t>(row->pos);
    for (size_t k = 0; k < items->size(); ++k)
      if (!arraylike((*items)[k], row->style)) reject(in, *row, (*items)[k], base + k);
    seq_end = base + items->size();
  }
}

} // namespace

void add_arraylike_checks(InterpreterImpl& in) {
  std::map<std::pair<std::string, std::string>, std::vector<const CheckRow*>> by_function;
  for (const CheckRow& row : kRows) by_function[{row.module, row.function}].push_back(&row);
  std::map<std::string, Value> modules;
  for (auto& [key, rows] : by_function) {
    auto [mod_name, fn_name] = key;
    auto m = modules.find(mod_name);
    if (m == modules.end()) {
      Value mod;
      try {
        mod = in.import_module(mod_name, Span{}, "");
      } catch (const Error&) { // a module pxl does not have
      }
      m = modules.emplace(mod_name, mod).first;
    }
    if (!m->second.is_obj(ObjKind::Module)) continue;
    auto& vars = m->second.as<ModuleObj>()->env->vars;
    auto it = vars.find(fn_name);
    if (it == vars.end()) continue; // a function pxl does not have
    Value inner = it->second;
    it->second = make_builtin(fn_name, [inner, rows](InterpreterImpl& in, CallArgs& a) {
      check_call(in, rows, a);
      return in.call(inner, a, Span{});
    });
  }
  // JAX's aliases that are the same function object (jax.nn.swish is silu).
  for (auto [mod_name, alias, name] :
       {std::array<const char*, 3>{"jax.nn", "swish", "silu"},
        std::array<const char*, 3>{"jax.nn", "hard_swish", "hard_silu"}}) {
    auto m = modules.find(mod_name);
    if (m == modules.end() || !m->second.is_obj(ObjKind::Module)) continue;
    auto& vars = m->second.as<ModuleObj>()->env->vars;
    if (auto f = vars.find(name); f != vars.end()) vars[alias] = f->second;
  }
}

} // namespace pxl
