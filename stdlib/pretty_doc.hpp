// A small document pretty printer with JAX's layout rules (jax._src.pretty_printer,
// after Lindig's "Strictly Pretty"): a group prints flat (its breaks as their
// text) when the group alone fits in the rest of the line, else its breaks are
// newlines indented by the enclosing nests. Used to print jaxprs as JAX does.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace pxl::pp {

struct DocNode;
using Doc = std::shared_ptr<const DocNode>;

struct DocNode {
  enum class Kind { Nil, Text, Concat, Break, Nest, Group } kind = Kind::Nil;
  std::string text;          // Text; Break: its flat text
  int indent = 0;            // Nest
  std::vector<Doc> children; // Concat; Nest and Group: one child
};

Doc nil();
Doc text(std::string s);
Doc concat(std::vector<Doc> docs);
Doc brk(std::string flat = " ");
Doc nest(int n, Doc d);
Doc group(Doc d);
Doc join(const Doc& sep, const std::vector<Doc>& docs);
std::string format(const Doc& d, int width = 80);

} // namespace pxl::pp
