// A stand-in for libnccl over the fake driver's memory (host memory), for
// test_cuda.cpp. The ranks of a clique rendezvous in each collective (one
// thread per rank, as pxl's device threads call them), reduce in rank order,
// and the calls pxl made are counted -- cliques created (with their GPUs),
// groups, operations -- so the tests can check the communicator caching, the
// grouping and the rank/GPU mapping without a GPU. Only what pxl uses exists.
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

enum Kind { AllReduce, AllGather, ReduceScatter, Send, Recv };
struct Call {
  Kind kind;
  const void* send;
  void* recv;
  size_t count;
  int dtype, op, peer;
};

struct Clique {
  int n = 0;
  std::mutex mu;
  std::condition_variable cv;
  int waiting = 0;
  uint64_t generation = 0;
  std::vector<std::vector<Call>> posted; // per rank: its calls of this round
};

struct Comm {
  Clique* clique;
  int rank;
};

// Counters for the tests (pxl_fake_nccl_*), shared by the device threads.
struct Stats {
  std::mutex mu;
  std::string cliques; // "0,1;2,3;" the GPUs of each clique created, in order
  int groups = 0, calls = 0, destroyed = 0;
} stats;

thread_local int group_depth = 0;
thread_local std::vector<std::pair<Comm*, Call>> queued;

void barrier(Clique& q, std::unique_lock<std::mutex>& lock) {
  uint64_t gen = q.generation;
  if (++q.waiting == q.n) {
    q.waiting = 0;
    ++q.generation;
    q.cv.notify_all();
  } else {
    q.cv.wait(lock, [&] { return q.generation != gen; });
  }
}

size_t size_of(int dtype) {
  switch (dtype) {
  case 0: // int8
  case 1: // uint8
    return 1;
  case 6: // f16
  case 9: // bf16
    return 2;
  case 4:
  case 5:
  case 8: // 64-bit
    return 8;
  default:
    return 4;
  }
}

template <class T> T apply(int op, T a, T b) {
  switch (op) {
  case 0:
    return a + b;
  case 1:
    return a * b;
  case 2:
    return a > b ? a : b;
  default:
    return a < b ? a : b;
  }
}

template <class T>
void reduce_typed(const std::vector<const void*>& ins, void* out, size_t n, int op) {
  for (size_t i = 0; i < n; ++i) {
    T acc = static_cast<const T*>(ins[0])[i];
    for (size_t r = 1; r < ins.size(); ++r) acc = apply(op, acc, static_cast<const T*>(ins[r])[i]);
    static_cast<T*>(out)[i] = acc;
  }
}

// Rank order, like pxl's CPU mesh (real NCCL reduces in ring order).
int reduce(const std::vector<const void*>& ins, void* out, size_t n, int dtype, int op) {
  switch (dtype) {
  case 1:
    return reduce_typed<uint8_t>(ins, out, n, op), 0;
  case 2: // int32 wraps: add as uint32
    if (op == 0) return reduce_typed<uint32_t>(ins, out, n, op), 0;
    return reduce_typed<int32_t>(ins, out, n, op), 0;
  case 3:
    return reduce_typed<uint32_t>(ins, out, n, op), 0;
  case 7:
    return reduce_typed<float>(ins, out, n, op), 0;
  case 8:
    return reduce_typed<double>(ins, out, n, op), 0;
  default:
    return 5; // ncclInvalidUsage: halves are not faked
  }
}

// Runs rank c's calls of one round once every rank has posted its own.
int run_round(Comm* c, std::vector<Call> calls) {
  Clique& q = *c->clique;
  {
    std::unique_lock<std::mutex> lock(q.mu);
    q.posted[c->rank] = std::move(calls);
    barrier(q, lock);
  }
  int status = 0;
  const std::vector<Call>& mine = q.posted[c->rank];
  std::vector<int> received(q.n, 0); // per peer: its sends to me already matched
  for (size_t i = 0; i < mine.size() && status == 0; ++i) {
    const Call& m = mine[i];
    size_t bytes = m.count * size_of(m.dtype);
    auto peer_call = [&](int r) -> const Call* {
      return i < q.posted[r].size() && q.posted[r][i].kind == m.kind ? &q.posted[r][i] : nullptr;
    };
    switch (m.kind) {
    case AllReduce:
    case ReduceScatter: {
      std::vector<const void*> ins;
      size_t offset = m.kind == ReduceScatter ? c->rank * bytes : 0;
      for (int r = 0; r < q.n; ++r) {
        const Call* p = peer_call(r);
        if (!p) return 5;
        ins.push_back(static_cast<const char*>(p->send) + offset);
      }
      status = reduce(ins, m.recv, m.count, m.dtype, m.op);
      break;
    }
    case AllGather:
      for (int r = 0; r < q.n; ++r) {
        const Call* p = peer_call(r);
        if (!p) return 5;
        std::memcpy(static_cast<char*>(m.recv) + r * bytes, p->send, bytes);
      }
      break;
    case Recv: {
      int seen = 0;
      const Call* match = nullptr;
      for (const Call& p : q.posted[m.peer])
        if (p.kind == Send && p.peer == c->rank && seen++ == received[m.peer]) {
          match = &p;
          break;
        }
      if (!match || match->count != m.count) return 5;
      ++received[m.peer];
      std::memcpy(m.recv, match->send, bytes);
      break;
    }
    case Send:
      break;
    }
  }
  std::unique_lock<std::mutex> lock(q.mu);
  barrier(q, lock); // the senders' buffers stay untouched until every rank read them
  return status;
}

int submit(Comm* c, Call call) {
  {
    std::lock_guard<std::mutex> lock(stats.mu);
    ++stats.calls;
  }
  if (group_depth > 0) {
    queued.push_back({c, call});
    return 0;
  }
  return run_round(c, {call});
}

} // namespace

extern "C" {
int ncclGetVersion(int* v) { return *v = 22300, 0; }
int ncclCommInitAll(Comm** comms, int n, const int* devs) {
  auto* q = new Clique();
  q->n = n;
  q->posted.resize(n);
  std::string gpus;
  for (int r = 0; r < n; ++r) {
    comms[r] = new Comm{q, r};
    gpus += (r ? "," : "") + std::to_string(devs[r]);
  }
  std::lock_guard<std::mutex> lock(stats.mu);
  stats.cliques += gpus + ";";
  return 0;
}
int ncclCommDestroy(Comm* c) {
  // The clique lives as long as the process (its other ranks may still point at it).
  delete c;
  std::lock_guard<std::mutex> lock(stats.mu);
  ++stats.destroyed;
  return 0;
}
int ncclGroupStart() {
  if (group_depth++ == 0) {
    std::lock_guard<std::mutex> lock(stats.mu);
    ++stats.groups;
  }
  return 0;
}
int ncclGroupEnd() {
  if (--group_depth > 0) return 0;
  // One round per communicator, in the order the group first used them.
  std::vector<std::pair<Comm*, Call>> calls = std::move(queued);
  queued.clear();
  std::vector<Comm*> order;
  for (auto& [c, call] : calls)
    if (std::find(order.begin(), order.end(), c) == order.end()) order.push_back(c);
  for (Comm* c : order) {
    std::vector<Call> mine;
    for (auto& [d, call] : calls)
      if (d == c) mine.push_back(call);
    if (int r = run_round(c, std::move(mine))) return r;
  }
  return 0;
}
int ncclAllReduce(const void* s, void* r, size_t n, int t, int op, Comm* c, void*) {
  return submit(c, {AllReduce, s, r, n, t, op, -1});
}
int ncclAllGather(const void* s, void* r, size_t n, int t, Comm* c, void*) {
  return submit(c, {AllGather, s, r, n, t, 0, -1});
}
int ncclReduceScatter(const void* s, void* r, size_t n, int t, int op, Comm* c, void*) {
  return submit(c, {ReduceScatter, s, r, n, t, op, -1});
}
int ncclSend(const void* s, size_t n, int t, int peer, Comm* c, void*) {
  return submit(c, {Send, s, nullptr, n, t, 0, peer});
}
int ncclRecv(void* r, size_t n, int t, int peer, Comm* c, void*) {
  return submit(c, {Recv, nullptr, r, n, t, 0, peer});
}
const char* ncclGetErrorString(int r) {
  return r == 5 ? "invalid usage (fake NCCL)" : "fake NCCL error";
}

// For the tests.
const char* pxl_fake_nccl_cliques() {
  static thread_local std::string copy;
  std::lock_guard<std::mutex> lock(stats.mu);
  copy = stats.cliques;
  return copy.c_str();
}
void pxl_fake_nccl_counts(int* groups, int* calls, int* destroyed) {
  std::lock_guard<std::mutex> lock(stats.mu);
  *groups = stats.groups;
  *calls = stats.calls;
  *destroyed = stats.destroyed;
}
}
