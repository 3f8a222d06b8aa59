// Collectives benchmark: psum (all_reduce), all_gather and all_to_all of float32
// on N CPU devices (one thread each, as pxl runs them), plus a STREAM-like
// triad for the memory-bandwidth bound. One line per measurement:
//   pxl <op> <devices> <bytes per device> <latency us> <GB/s>
//   stream triad <threads> <bytes per array> <best GB/s>
// GB/s is the per-device input size over the time of one call ("algorithm
// bandwidth"), the number MPI benchmarks report. bench/collectives/run.sh
// puts these beside Open MPI and JAX.
//
//   bench_collectives [--devices 2,4,8] [--sizes 1024,67108864] [--ops psum,all_gather,all_to_all]
//                     [--stream]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/collectives.hpp"

using namespace pxl;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<long long> parse_list(const char* s) {
  std::vector<long long> v;
  for (const char* p = s; *p;) {
    char* end;
    v.push_back(std::strtoll(p, &end, 10));
    p = *end ? end + 1 : end;
  }
  return v;
}
std::vector<std::string> parse_names(const std::string& s) {
  std::vector<std::string> v;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == ',') v.push_back(s.substr(start, i - start)), start = i + 1;
  return v;
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// One measurement: every device thread allocates and first-touches its own
// buffers, then the op runs back to back; device 0 times the loop between two
// barriers so the pool's start-up is not counted.
void measure(DeviceThreads& pool, const std::string& op, int n, long long bytes) {
  CommWorld world(n, 1);
  GroupLayout g;
  g.num_participants = n;
  g.groups.push_back({});
  for (int i = 0; i < n; ++i) g.groups[0].push_back(i);
  const int64_t count = bytes / 4;
  const int64_t out_count = op == "all_gather" ? count * n : count;
  // Fewer timed calls for big buffers: one 64 MiB call takes tens of ms.
  long long iters = bytes <= (1 << 20) ? 20000 : 5;
  long long warm = bytes <= (1 << 20) ? 500 : 1;
  double elapsed = 0;
  long long done = 0;
  CollectiveSite site{op, "bench"};
  pool.run(n, [&](int t) {
    std::unique_ptr<float[]> in(new float[size_t(count)]), out(new float[size_t(out_count)]);
    for (int64_t i = 0; i < count; ++i) in[size_t(i)] = float(t + 1) * 0.5f + float(i % 13);
    std::memset(out.get(), 0, size_t(out_count) * 4);
    LocalBuffers mine[1] = {{in.get(), out.get()}};
    auto once = [&] {
      if (op == "psum")
        world.all_reduce(t, mine, g, ReduceKind::Sum, DType::Float32, count, site);
      else if (op == "all_gather")
        world.all_gather(t, mine, g, DType::Float32, count, site);
      else
        world.all_to_all(t, mine, g, DType::Float32, count, site);
    };
    for (long long i = 0; i < warm; ++i) once();
    world.barrier(t, site);
    auto t0 = Clock::now();
    long long calls = 0;
    for (; calls < iters; ++calls) once();
    world.barrier(t, site);
    if (t == 0) {
      elapsed = seconds(Clock::now() - t0);
      done = calls;
    }
  });
  double lat = elapsed / double(done);
  std::printf("pxl %s %d %lld %.2f %.3f\n", op.c_str(), n, bytes, lat * 1e6,
              double(bytes) / lat / 1e9);
  std::fflush(stdout);
}

// STREAM triad a = b + s*c on `threads` threads over arrays of `bytes` each;
// the best of several passes, counting 3 arrays moved (STREAM's convention).
void stream(int threads, long long bytes) {
  size_t n = size_t(bytes) / 8;
  std::unique_ptr<double[]> a(new double[n]), b(new double[n]), c(new double[n]);
  auto part = [&](int t, auto fn) {
    std::vector<std::thread> ts;
    for (int i = 0; i < t; ++i)
      ts.emplace_back([&, i] { fn(n * size_t(i) / size_t(t), n * size_t(i + 1) / size_t(t)); });
    for (auto& x : ts) x.join();
  };
  part(threads, [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) a[i] = 0, b[i] = 1, c[i] = 2;
  });
  double best = 1e30;
  for (int rep = 0; rep < 10; ++rep) {
    auto t0 = Clock::now();
    part(threads, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0 * c[i];
    });
    best = std::min(best, seconds(Clock::now() - t0));
  }
  std::printf("stream triad %d %lld %.3f\n", threads, bytes, 3.0 * double(n) * 8 / best / 1e9);
}

} // namespace

int main(int argc, char** argv) {
  std::vector<long long> devices = {2, 4, 8}, sizes = {1024, 64ll << 20};
  std::vector<std::string> ops = {"psum", "all_gather", "all_to_all"};
  bool do_stream = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--devices" && i + 1 < argc)
      devices = parse_list(argv[++i]);
    else if (a == "--sizes" && i + 1 < argc)
      sizes = parse_list(argv[++i]);
    else if (a == "--ops" && i + 1 < argc)
      ops = parse_names(argv[++i]);
    else if (a == "--stream")
      do_stream = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--devices 2,4,8] [--sizes 1024,67108864] "
                   "[--ops psum,all_gather,all_to_all] [--stream]\n",
                   argv[0]);
      return 2;
    }
  }
  if (do_stream) {
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    stream(int(cores), 64ll << 20);
    return 0;
  }
  long long max_dev = *std::max_element(devices.begin(), devices.end());
  DeviceThreads pool(static_cast<int>(max_dev));
  for (const std::string& op : ops)
    for (long long bytes : sizes)
      for (long long n : devices) measure(pool, op, int(n), bytes);
  return 0;
}
