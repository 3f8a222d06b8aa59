// jax.closure_convert(fun, *example_args): fun traced on the example
// arguments; the traced values of enclosing transformations it closes over
// (which a custom_vjp/custom_jvp rule must not capture) are hoisted out as
// extra arguments. Returns (converted_fun, hoisted) where
// converted_fun(*args, *hoisted) computes fun(*args). Values known when it is
// traced (eager arrays) stay closed over, as JAX's non-perturbed constants.
#include "stdlib/closure_convert.hpp"

#include "lang/args.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/trace_util.hpp"

namespace pxl {

namespace {

Value closure_convert(InterpreterImpl& in, CallArgs& a) {
  if (a.pos.empty() || !a.kw.empty())
    throw Error(ErrCode::Arguments,
                "closure_convert(fun, *example_args) takes positional arguments");
  Span where = in.ops().loc;
  ValueList examples(a.pos.begin() + 1, a.pos.end());
  auto t = std::make_shared<TracedFunction>(
      trace_function(in, a.pos[0], examples, where, "closure_convert"));
  std::vector<size_t> hoisted_at;
  ValueList hoisted;
  for (size_t i = 0; i < t->consts.size(); ++i)
    if (!t->consts[i]->concrete) {
      hoisted_at.push_back(i);
      hoisted.push_back(make_array(t->consts[i]));
    }
  size_t nh = hoisted_at.size();
  Value converted = make_builtin("converted_fun", [t, hoisted_at, nh](InterpreterImpl& in,
                                                                      CallArgs& c) {
    Span where = in.ops().loc;
    if (!c.kw.empty() || c.pos.size() < nh)
      throw Error(ErrCode::Arguments,
                  "converted_fun() takes the example arguments, then the hoisted values", where);
    size_t nargs = c.pos.size() - nh;
    ValueList args(c.pos.begin(), c.pos.begin() + static_cast<std::ptrdiff_t>(nargs));
    ValueList leaves;
    TreeDef tree = tree_flatten(in, make_tuple(args), leaves);
    if (!(tree == t->in_tree))
      throw Error(ErrCode::Type,
                  "The inputs to the closure produced by closure_convert must have the same Pytree "
                  "structure as the example arguments passed when closure_convert was called. "
                  "Expected " +
                      t->in_tree.repr() + ", but got " + tree.repr(),
                  where);
    std::vector<Tensor> params = leaf_tensors(in, args, where);
    TracedFunction run = *t;
    for (size_t k = 0; k < nh; ++k)
      run.consts[hoisted_at[k]] = in.to_tensor(c.pos[nargs + k], where);
    return apply_traced(in, run, params);
  });
  return make_tuple({converted, make_list(hoisted)});
}

} // namespace

void add_closure_convert(Value& jax) {
  jax.as<ModuleObj>()->env->vars["closure_convert"] =
      make_builtin("closure_convert", closure_convert);
}

} // namespace pxl
