#include "stdlib/pretty_doc.hpp"

#include <utility>

namespace pxl::pp {

namespace {

Doc node(DocNode::Kind k, std::string s = {}, int n = 0, std::vector<Doc> ch = {}) {
  auto d = std::make_shared<DocNode>();
  d->kind = k;
  d->text = std::move(s);
  d->indent = n;
  d->children = std::move(ch);
  return d;
}

enum class Mode { Flat, Break };

struct Item {
  int indent;
  Mode mode;
  const DocNode* doc;
};

// Whether `d` printed flat takes at most `width` columns (JAX measures the
// group alone, not what follows it).
bool fits(const DocNode* d, int width) {
  std::vector<const DocNode*> agenda{d};
  while (width >= 0 && !agenda.empty()) {
    const DocNode* x = agenda.back();
    agenda.pop_back();
    switch (x->kind) {
    case DocNode::Kind::Nil:
      break;
    case DocNode::Kind::Text:
    case DocNode::Kind::Break:
      width -= static_cast<int>(x->text.size());
      break;
    case DocNode::Kind::Concat:
      for (auto it = x->children.rbegin(); it != x->children.rend(); ++it)
        agenda.push_back(it->get());
      break;
    case DocNode::Kind::Nest:
    case DocNode::Kind::Group:
      agenda.push_back(x->children[0].get());
      break;
    }
  }
  return width >= 0;
}

} // namespace

Doc nil() { return node(DocNode::Kind::Nil); }
Doc text(std::string s) { return node(DocNode::Kind::Text, std::move(s)); }
Doc concat(std::vector<Doc> docs) { return node(DocNode::Kind::Concat, {}, 0, std::move(docs)); }
Doc brk(std::string flat) { return node(DocNode::Kind::Break, std::move(flat)); }
Doc nest(int n, Doc d) { return node(DocNode::Kind::Nest, {}, n, {std::move(d)}); }
Doc group(Doc d) { return node(DocNode::Kind::Group, {}, 0, {std::move(d)}); }

Doc join(const Doc& sep, const std::vector<Doc>& docs) {
  if (docs.empty()) return nil();
  std::vector<Doc> xs{docs[0]};
  for (size_t i = 1; i < docs.size(); ++i) {
    xs.push_back(sep);
    xs.push_back(docs[i]);
  }
  return concat(std::move(xs));
}

std::string format(const Doc& d, int width) {
  std::string out;
  int col = 0;
  std::vector<Item> agenda{{0, Mode::Break, d.get()}};
  while (!agenda.empty()) {
    Item it = agenda.back();
    agenda.pop_back();
    const DocNode* x = it.doc;
    switch (x->kind) {
    case DocNode::Kind::Nil:
      break;
    case DocNode::Kind::Text:
      out += x->text;
      col += static_cast<int>(x->text.size());
      break;
    case DocNode::Kind::Concat:
      for (auto c = x->children.rbegin(); c != x->children.rend(); ++c)
        agenda.push_back({it.indent, it.mode, c->get()});
      break;
    case DocNode::Kind::Break:
      if (it.mode == Mode::Break) {
        out += "\n" + std::string(static_cast<size_t>(it.indent), ' ');
        col = it.indent;
      } else {
        out += x->text;
        col += static_cast<int>(x->text.size());
      }
      break;
    case DocNode::Kind::Nest:
      agenda.push_back({it.indent + x->indent, it.mode, x->children[0].get()});
      break;
    case DocNode::Kind::Group: {
      Mode m = it.mode == Mode::Flat || fits(x->children[0].get(), width - col) ? Mode::Flat
                                                                                : Mode::Break;
      agenda.push_back({it.indent, m, x->children[0].get()});
      break;
    }
    }
  }
  return out;
}

} // namespace pxl::pp
