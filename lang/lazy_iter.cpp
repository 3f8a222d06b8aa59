// itertools' endless iterators (see lazy_iter.hpp).
#include "lang/lazy_iter.hpp"

#include "lang/interp_impl.hpp"

namespace pxl {

namespace {

// The base of the endless ones: listing them is an error.
struct EndlessIter : LazyIterObj {
  bool items(ValueList&) const override {
    throw Error(ErrCode::Value, "cannot list the endless iterator " + repr() +
                                    " (take items with next(), zip() or itertools.islice)");
  }
  bool items(InterpreterImpl&, ValueList& out) override { return items(out); }
};

struct CountIter : EndlessIter {
  CountIter(Value s, Value d) : cur(std::move(s)), step(std::move(d)) {}
  Value cur, step;
  std::string type_name() const override { return "count"; }
  std::string repr() const override {
    // Python shows the step unless it is the int 1.
    bool unit = step.is_int() && step.i == 1;
    return "count(" + pxl::repr(cur) + (unit ? "" : ", " + pxl::repr(step)) + ")";
  }
  bool next(InterpreterImpl& in, Value& out) override {
    out = cur;
    cur = in.binary_op(BinOpKind::Add, cur, step, Span{});
    return true;
  }
};

struct CycleIter : LazyIterObj {
  explicit CycleIter(ValueList v) : items_(std::move(v)) {}
  std::string type_name() const override { return "cycle"; }
  std::string repr() const override { return "<itertools.cycle object>"; }
  bool items(ValueList& out) const override {
    if (!items_.empty())
      throw Error(ErrCode::Value, "cannot list the endless iterator itertools.cycle (take items "
                                  "with next(), zip() or itertools.islice)");
    out.clear();
    return true;
  }
  bool items(InterpreterImpl&, ValueList& out) override { return items(out); }
  bool next(InterpreterImpl&, Value& out) override {
    if (items_.empty()) return false;
    out = items_[pos_++ % items_.size()];
    return true;
  }

private:
  ValueList items_;
  size_t pos_ = 0;
};

struct RepeatIter : EndlessIter {
  explicit RepeatIter(Value v) : obj(std::move(v)) {}
  Value obj;
  std::string type_name() const override { return "repeat"; }
  std::string repr() const override { return "repeat(" + pxl::repr(obj) + ")"; }
  bool next(InterpreterImpl&, Value& out) override {
    out = obj;
    return true;
  }
};

} // namespace

Value make_count_iter(Value start, Value step) {
  return Value::object(std::make_shared<CountIter>(std::move(start), std::move(step)));
}
Value make_cycle_iter(ValueList items) {
  return Value::object(std::make_shared<CycleIter>(std::move(items)));
}
Value make_repeat_iter(Value obj) {
  return Value::object(std::make_shared<RepeatIter>(std::move(obj)));
}

} // namespace pxl
