// LD_PRELOAD malloc counter for bench/jit/dispatch_cpu.py --mallocs: counts
// malloc, calloc, aligned_alloc and posix_memalign calls (glibc) and prints
// "mallocs N" to stderr when the process exits.
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_memalign(size_t, size_t);

static atomic_long calls;

void* malloc(size_t n) {
  atomic_fetch_add(&calls, 1);
  return __libc_malloc(n);
}
void* calloc(size_t a, size_t b) {
  atomic_fetch_add(&calls, 1);
  return __libc_calloc(a, b);
}
void* aligned_alloc(size_t align, size_t n) {
  atomic_fetch_add(&calls, 1);
  return __libc_memalign(align, n);
}
int posix_memalign(void** p, size_t align, size_t n) {
  atomic_fetch_add(&calls, 1);
  *p = __libc_memalign(align, n);
  return *p ? 0 : 12; // ENOMEM
}

__attribute__((destructor)) static void report(void) {
  fprintf(stderr, "mallocs %ld\n", (long)atomic_load(&calls));
}
