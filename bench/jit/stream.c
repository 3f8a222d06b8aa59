/* STREAM triad (a[i] = b[i] + s*c[i]) on 16M floats with OpenMP over every
   core: the memory-bandwidth ceiling for the fused elementwise case. Prints
   "stream_triad_GBps X" (best of 10, bytes = 3 arrays read/written). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  const long n = 16L * 1024 * 1024;
  float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
  if (!a || !b || !c) return 1;
#pragma omp parallel for
  for (long i = 0; i < n; ++i) a[i] = 0, b[i] = 1, c[i] = 2;
  double best = 1e30;
  for (int r = 0; r < 10; ++r) {
    double t0 = omp_get_wtime();
#pragma omp parallel for
    for (long i = 0; i < n; ++i) a[i] = b[i] + 3.0f * c[i];
    double t = omp_get_wtime() - t0;
    if (t < best) best = t;
  }
  printf("stream_triad_GBps %.2f\n", 3.0 * n * sizeof(float) / best / 1e9);
  printf("stream_check %g\n", (double)a[n / 2]);
  return 0;
}
