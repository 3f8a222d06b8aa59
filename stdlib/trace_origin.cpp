#include "stdlib/trace_origin.hpp"

#include <algorithm>
#include <cctype>

#include "ir/aval_text.hpp"
#include "lang/ast.hpp"
#include "lang/tracer.hpp"

namespace pxl {

std::function<void(TraceContext&)> log_unknown_values(std::function<void(TraceContext&)> prepare,
                                                      std::shared_ptr<UnknownValueLog> log) {
  return [prepare, log](TraceContext& tc) {
    if (prepare) prepare(tc);
    if (tc.concretize) return; // the trace learns values itself
    TraceContext* ctx = &tc;
    tc.concretize = [ctx, log](int id) -> std::optional<Array> {
      // find_progenitors: the parameters the value is computed from.
      const Function& fn = ctx->function();
      std::vector<bool> seen(fn.values.size(), false);
      std::vector<int> todo{id};
      while (!todo.empty()) {
        int v = todo.back();
        todo.pop_back();
        if (v < 0 || static_cast<size_t>(v) >= seen.size() || seen[static_cast<size_t>(v)])
          continue;
        seen[static_cast<size_t>(v)] = true;
        int p = fn.values[static_cast<size_t>(v)].producer;
        if (p >= 0)
          for (int o : fn.body[static_cast<size_t>(p)].operands) todo.push_back(o);
      }
      log->params.clear();
      for (size_t k = 0; k < fn.params.size(); ++k)
        if (seen[static_cast<size_t>(fn.params[k])]) log->params.push_back(k);
      return std::nullopt;
    };
  };
}

Value unwrapped_function(const Value& fn) {
  Value f = fn;
  for (int depth = 0; depth < 100; ++depth) {
    const Value* inner = nullptr;
    if (f.is_obj(ObjKind::Builtin)) {
      for (const auto& [k, v] : f.as<BuiltinObj>()->attrs)
        if (k == "__wrapped__") inner = &v;
    } else if (f.is_obj(ObjKind::Opaque)) {
      inner = f.as<OpaqueObj>()->wrapped();
    }
    if (!inner) break;
    f = *inner;
  }
  return f;
}

std::string function_source_info(const Value& wrapped) {
  Value fn = unwrapped_function(wrapped);
  if (!fn.is_obj(ObjKind::Function)) return type_name(fn);
  const auto* f = fn.as<FunctionObj>();
  const std::string& name = f->name;
  if (!f->span.valid()) return name;
  int line = f->span.file->line_of(f->span.begin);
  // Python's co_firstlineno is the first decorator's line.
  while (line > 1) {
    std::string_view prev = f->span.file->line_text(line - 1);
    size_t b = prev.find_first_not_of(" \t");
    if (b == std::string_view::npos || prev[b] != '@') break;
    --line;
  }
  return name + " at " + f->span.file->path() + ":" + std::to_string(line);
}

bool quotes_unknown_value(const Error& e) {
  return e.code() == ErrCode::ConcreteValue ||
         (e.code() == ErrCode::Type &&
          e.message().find("his array is traced inside") != std::string::npos);
}

Error with_trace_origin(const Error& e, const std::string& what, const std::string& fn_info,
                        const std::vector<std::string>& names, const UnknownValueLog& log,
                        const std::string& traced_for) {
  if (!quotes_unknown_value(e)) return e;
  const std::string& m = e.message();
  const std::string tail = "its value is not known while the function is being traced";
  size_t start = m.find("his array is traced inside " + what + " (its type is ");
  size_t end = m.find(tail, start == std::string::npos ? 0 : start);
  if (start == std::string::npos || start == 0 || end == std::string::npos) return e;
  start -= 1; // the "T" or "t"
  end += tail.size();
  std::string origin = "The error occurred while tracing the function " + fn_info + " for " +
                       (traced_for.empty() ? what : traced_for) + ".";
  std::vector<std::string> args;
  for (size_t p : log.params)
    if (p < names.size() && !names[p].empty()) args.push_back(names[p]);
  if (!args.empty() && args.size() == log.params.size()) {
    std::string list;
    if (args.size() == 1)
      list = "the argument " + args[0];
    else if (args.size() == 2)
      list = "the arguments " + args[0] + " and " + args[1];
    else {
      list = "the arguments ";
      for (size_t i = 0; i + 1 < args.size(); ++i) list += args[i] + ", ";
      list += "and " + args.back();
    }
    origin +=
        std::string(
            " This concrete value was not available in Python because it depends on the value") +
        (args.size() > 1 ? "s" : "") + " of " + list + ".";
  }
  // The account follows a sentence (after a space or a newline) or opens the message.
  if (start > 0 && (m[start - 1] == ' ' || m[start - 1] == '\n')) {
    --start;
    origin = "\n" + origin;
  }
  Error out(e.code(), m.substr(0, start) + origin + m.substr(end), e.span());
  for (const TraceEntry& t : e.trace()) out.add_trace(t);
  return out;
}

Error concretization_error(const Error& e, const AVal& aval, const std::string& context) {
  std::string why = e.message();
  if (!why.empty()) why[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(why[0])));
  return Error(ErrCode::ConcreteValue,
               "ConcretizationTypeError: Abstract tracer value encountered where concrete value "
               "is expected: traced array with shape " +
                   array_type_str(aval.dtype, aval.shape) + "\n" + context + "\n" + why +
                   "\n\nSee "
                   "https://docs.jax.dev/en/latest/errors.html#jax.errors.ConcretizationTypeError",
               e.span(), e.hint());
}

} // namespace pxl
