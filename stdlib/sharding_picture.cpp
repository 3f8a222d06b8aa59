// jax.debug.visualize_array_sharding's picture, drawn as JAX draws it when its
// output is not a terminal: a `rich` table (square box, a line between rows,
// no colour) with one cell per block, sized from the block's share of the
// array (jax/_src/debugging.py visualize_sharding), then fitted into an
// 80-column console the way rich's Table shrinks columns that do not fit.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "stdlib/sharding.hpp"

namespace pxl {

namespace {

constexpr double kHeightToWidth = 2.5;

struct Cell {
  std::string entry;
  int top = 0, right = 0, bottom = 0, left = 0;
};

// Python's round(): halves to even (rich's ratio_reduce uses it).
int64_t round_half_even(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

// rich's ratio_reduce: take `total` off `values` in proportion to `ratios`,
// each by at most its `maximums` entry.
std::vector<int> ratio_reduce(int total, std::vector<int> ratios, const std::vector<int>& maximums,
                              const std::vector<int>& values) {
  for (size_t i = 0; i < ratios.size(); ++i)
    if (!maximums[i]) ratios[i] = 0;
  int total_ratio = 0;
  for (int r : ratios) total_ratio += r;
  if (!total_ratio) return values;
  int remaining = total;
  std::vector<int> out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (ratios[i] && total_ratio > 0) {
      int d = static_cast<int>(std::min<int64_t>(
          maximums[i], round_half_even(static_cast<double>(ratios[i]) * remaining / total_ratio)));
      out.push_back(values[i] - d);
      remaining -= d;
      total_ratio -= ratios[i];
    } else {
      out.push_back(values[i]);
    }
  }
  return out;
}

// rich's Table._collapse_widths: narrow the widest columns first.
std::vector<int> collapse_widths(std::vector<int> widths, int max_width) {
  auto sum = [](const std::vector<int>& v) {
    int s = 0;
    for (int x : v) s += x;
    return s;
  };
  int total = sum(widths), excess = total - max_width;
  while (total && excess > 0) {
    int max_col = *std::max_element(widths.begin(), widths.end()), second = 0;
    for (int w : widths)
      if (w != max_col) second = std::max(second, w);
    int diff = max_col - second;
    std::vector<int> ratios;
    for (int w : widths) ratios.push_back(w == max_col ? 1 : 0);
    if (!diff) break;
    widths = ratio_reduce(excess, ratios, std::vector<int>(widths.size(), std::min(excess, diff)),
                          widths);
    total = sum(widths);
    excess = total - max_width;
  }
  return widths;
}

// The width rich measures for a padded cell given `avail` columns.
int measure(const Cell& c, int avail) {
  int extra = c.left + c.right;
  if (avail - extra < 1) return avail;
  return std::min(extra + static_cast<int>(c.entry.size()), avail);
}

// The entry's lines at width w as rich wraps a table cell's text (overflow
// "ellipsis"): words filled greedily, a word longer than a line on a line of
// its own, and a line too long for w cut to w - 1 characters and an ellipsis.
std::vector<std::string> wrap(const std::string& text, int w) {
  std::vector<std::string> words, lines;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    words.push_back(text.substr(i, j - i));
    i = j + 1;
  }
  std::string line;
  auto flush = [&] {
    if (line.empty()) return;
    lines.push_back(static_cast<int>(line.size()) > w
                        ? line.substr(0, static_cast<size_t>(w - 1)) + "…"
                        : line);
    line.clear();
  };
  for (const std::string& word : words) {
    if (!line.empty() && static_cast<int>(line.size() + 1 + word.size()) <= w) {
      line += " " + word;
      continue;
    }
    flush();
    line = word;
  }
  flush();
  return lines;
}

// The characters of UTF-8 `s` (the ellipsis is three bytes).
int chars(const std::string& s) {
  int n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// `s` cut to its first `n` characters (UTF-8: the box-drawing characters
// count one each), as the console crops lines wider than itself.
std::string crop(const std::string& s, int n) {
  size_t bytes = 0;
  for (int taken = 0; bytes < s.size() && taken < n; ++taken) {
    ++bytes;
    while (bytes < s.size() && (static_cast<unsigned char>(s[bytes]) & 0xC0) == 0x80) ++bytes;
  }
  return s.substr(0, bytes);
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

} // namespace

std::string sharding_picture(const ShardedData& d, const std::string& platform,
                             const PictureOptions& opts) {
  if (opts.max_width <= 0) return ""; // a console without columns prints nothing
  const int base_height = static_cast<int>(10 * opts.scale);
  const Shape& shape = d.global.shape;
  if (shape.empty() || shape.size() > 2)
    throw Error(ErrCode::Value,
                "`visualize_sharding` only works for shapes with 1 and 2 dimensions.");
  const bool two_d = shape.size() == 2;
  const double aspect = static_cast<double>(two_d ? shape[1] : 1) /
                        static_cast<double>(std::max<int64_t>(shape[0], 1));
  const int base_width = static_cast<int>(base_height * aspect);

  // Each block's devices, and its share of the rows and columns.
  std::map<std::pair<int64_t, int64_t>, std::set<int>> devices;
  std::map<std::pair<int64_t, int64_t>, std::pair<double, double>>
      share; // (height, width); height < 0: 1-d
  int64_t nrows = 1, ncols = 1;
  for (int64_t pos = 0; pos < d.mesh.size(); ++pos) {
    ShardBlock b = block_of(d.mesh, d.spec, shape, pos);
    auto chunk = [&](size_t dim) { return b.shape[dim] ? b.start[dim] / b.shape[dim] : 0; };
    std::pair<int64_t, int64_t> at =
        two_d ? std::make_pair(chunk(0), chunk(1)) : std::make_pair(int64_t{0}, chunk(0));
    double h = two_d ? static_cast<double>(b.shape[0]) / static_cast<double>(shape[0]) : -1.0;
    double w = static_cast<double>(b.shape[two_d ? 1 : 0]) /
               static_cast<double>(std::max<int64_t>(shape[two_d ? 1 : 0], 1));
    share[at] = {h, w};
    devices[at].insert(d.mesh.device_ids[static_cast<size_t>(pos)]);
    nrows = std::max(nrows, at.first + 1);
    ncols = std::max(ncols, at.second + 1);
  }

  std::vector<std::vector<Cell>> cells(static_cast<size_t>(nrows),
                                       std::vector<Cell>(static_cast<size_t>(ncols)));
  for (auto& [at, devs] : devices) {
    Cell& c = cells[static_cast<size_t>(at.first)][static_cast<size_t>(at.second)];
    c.entry = platform + " ";
    bool first = true;
    for (int id : devs) c.entry += (first ? "" : ",") + std::to_string(id), first = false;
    auto [h, w] = share[at];
    int width = static_cast<int>(w * base_width * kHeightToWidth);
    int height = h < 0 ? 1 : static_cast<int>(h * base_height);
    width = std::min(std::max(width, opts.min_width), opts.max_width);
    // Python's divmod floors: a negative padding becomes 0 below.
    auto fdiv = [](int a) { return static_cast<int>(std::floor(a / 2.0)); };
    int lp = fdiv(width - static_cast<int>(c.entry.size()) - 2);
    int rp = lp + (width - static_cast<int>(c.entry.size()) - 2 - 2 * lp);
    int tp = fdiv(height - 2);
    int bp = tp + (height - 2 - 2 * tp);
    c.top = std::max(tp, 0), c.right = std::max(rp, 0), c.bottom = std::max(bp, 0),
    c.left = std::max(lp, 0);
  }

  // Column widths as rich's Table computes them within the console.
  // JAX's console is max_width columns wide.
  const int avail = opts.max_width - static_cast<int>(ncols + 1);
  std::vector<int> widths(static_cast<size_t>(ncols), 0);
  auto measure_all = [&](const std::vector<int>& limit) {
    std::vector<int> out(static_cast<size_t>(ncols), 0);
    for (size_t j = 0; j < out.size(); ++j)
      for (const auto& row : cells) out[j] = std::max(out[j], measure(row[j], limit[j]));
    return out;
  };
  widths = measure_all(std::vector<int>(static_cast<size_t>(ncols), avail));
  for (int& w : widths) w = std::max(w, 1);
  int total = 0;
  for (int w : widths) total += w;
  if (total > avail) {
    widths = collapse_widths(widths, avail);
    total = 0;
    for (int w : widths) total += w;
    if (total > avail)
      widths = ratio_reduce(total - avail, std::vector<int>(widths.size(), 1), widths, widths);
    widths = measure_all(widths);
  }

  for (int& w : widths) w = std::max(w, 0); // a console narrower than the borders

  auto rule = [&](const char* l, const char* mid, const char* r) {
    std::string s = l;
    for (size_t j = 0; j < widths.size(); ++j)
      s += repeat("─", widths[j]) + (j + 1 < widths.size() ? mid : r);
    return crop(s, opts.max_width) + "\n";
  };
  std::string out = rule("┌", "┬", "┐");
  for (size_t i = 0; i < cells.size(); ++i) {
    std::vector<std::vector<std::string>> rendered;
    size_t height = 0;
    for (size_t j = 0; j < widths.size(); ++j) {
      const Cell& c = cells[i][j];
      int w = widths[j], inner = w - c.left - c.right;
      if (w == 0) { // rich draws nothing of a cell without room
        rendered.emplace_back();
        continue;
      }
      std::vector<std::string> lines(static_cast<size_t>(c.top),
                                     std::string(static_cast<size_t>(w), ' '));
      // rich's Align: the text as a block as wide as its longest line could
      // be (its whole length, at most `inner`), lines left-justified in it,
      // the block centred.
      const int block = std::min(inner, static_cast<int>(c.entry.size()));
      if (inner > 0)
        for (const std::string& t : wrap(c.entry, inner)) {
          int excess = inner - block;
          lines.push_back(
              std::string(static_cast<size_t>(c.left + excess / 2), ' ') + t +
              std::string(static_cast<size_t>(block - chars(t) + excess - excess / 2 + c.right),
                          ' '));
        }
      lines.insert(lines.end(), static_cast<size_t>(c.bottom),
                   std::string(static_cast<size_t>(w), ' '));
      height = std::max(height, lines.size());
      rendered.push_back(std::move(lines));
    }
    height = std::max<size_t>(height, 1); // a row is a line at least
    for (size_t k = 0; k < height; ++k) {
      std::string line = "│";
      for (size_t j = 0; j < widths.size(); ++j)
        line += (k < rendered[j].size() ? rendered[j][k]
                                        : std::string(static_cast<size_t>(widths[j]), ' ')) +
                "│";
      out += crop(line, opts.max_width) + "\n";
    }
    out += i + 1 < cells.size() ? rule("├", "┼", "┤") : rule("└", "┴", "┘");
  }
  return out;
}

} // namespace pxl
