/* The Open MPI peer of bench_collectives: MPI_Allreduce (sum), MPI_Allgather
 * and MPI_Alltoall of float32 with the same per-rank sizes, one rank per
 * "device". Prints the same line format:
 *   mpi <op> <ranks> <bytes per rank> <latency us> <GB/s>
 * Run: mpirun -np N mpi_peer [sizes...]   (run.sh does this for N = 2, 4, 8)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void measure(const char* op, long long bytes, int rank, int size) {
  long long count = bytes / 4;
  long long out_count = strcmp(op, "all_gather") == 0 ? count * size : count;
  float* in = malloc((size_t)count * 4);
  float* out = malloc((size_t)out_count * 4);
  for (long long i = 0; i < count; ++i) in[i] = (float)(rank + 1) * 0.5f + (float)(i % 13);
  memset(out, 0, (size_t)out_count * 4);
  int iters = bytes <= (1 << 20) ? 20000 : 5, warm = bytes <= (1 << 20) ? 500 : 1;
  double t0 = 0;
  for (int i = 0; i < warm + iters; ++i) {
    if (i == warm) {
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = MPI_Wtime();
    }
    if (strcmp(op, "psum") == 0)
      MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else if (strcmp(op, "all_gather") == 0)
      MPI_Allgather(in, (int)count, MPI_FLOAT, out, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
    else
      MPI_Alltoall(in, (int)(count / size), MPI_FLOAT, out, (int)(count / size), MPI_FLOAT,
                   MPI_COMM_WORLD);
  }
  double mine = MPI_Wtime() - t0, slowest = 0;
  MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    double lat = slowest / iters;
    printf("mpi %s %d %lld %.2f %.3f\n", op, size, bytes, lat * 1e6, (double)bytes / lat / 1e9);
    fflush(stdout);
  }
  free(in);
  free(out);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* ops[] = {"psum", "all_gather", "all_to_all"};
  long long sizes[8] = {1024, 64ll << 20};
  int nsizes = 2;
  if (argc > 1) {
    nsizes = 0;
    for (int i = 1; i < argc && nsizes < 8; ++i) sizes[nsizes++] = atoll(argv[i]);
  }
  for (int o = 0; o < 3; ++o)
    for (int s = 0; s < nsizes; ++s) measure(ops[o], sizes[s], rank, size);
  MPI_Finalize();
  return 0;
}
