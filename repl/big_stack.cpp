#include "repl/big_stack.hpp"

#include <pthread.h>

namespace pxl {

namespace {

struct Job {
  const std::function<int()>* body;
  int result = 0;
};

void* trampoline(void* arg) {
  auto* job = static_cast<Job*>(arg);
  job->result = (*job->body)();
  return nullptr;
}

} // namespace

int run_on_big_stack(const std::function<int()>& body, size_t stack_bytes) {
  Job job{&body};
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return body();
  pthread_t thread;
  bool started = pthread_attr_setstacksize(&attr, stack_bytes) == 0 &&
                 pthread_create(&thread, &attr, trampoline, &job) == 0;
  pthread_attr_destroy(&attr);
  if (!started) return body();
  pthread_join(thread, nullptr);
  return job.result;
}

} // namespace pxl
