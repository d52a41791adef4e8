/* SPDX-License-Identifier: MIT */
/*
 * osu_mpi.c - the peer of bench/engine/osu.c written with MPI, as an MPI
 * user would: MPI_Send/MPI_Recv for the latency, MPI_Isend/MPI_Irecv and
 * MPI_Waitall over a window of 64 for the bandwidths. Same sizes,
 * iterations, warm-up and output as osu.c (and as the OSU programs).
 * OSU_KIND: 0 latency, 1 bw, 2 bibw.
 *   mpirun -n 2 --mca btl self,vader mpi_osu_latency [--max-size B] ...
 */
#include "../../engine/osu_common.h" /* osu_buffer: aligned as OSU's */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LARGE 8192
#define WINDOW 64
#define TAG 1
#define ACK_TAG 2

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	size_t min_size = 1, max_size = (size_t)4 << 20;
	long iters_opt = 0, warm_opt = -1;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--min-size"))
			min_size = strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--max-size"))
			max_size = strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--iterations"))
			iters_opt = strtol(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--warmup"))
			warm_opt = strtol(argv[i + 1], NULL, 0);
	}
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_osu: needs exactly 2 processes\n");
		MPI_Finalize();
		return 1;
	}
	int peer = 1 - rank;
	char *sbuf = osu_buffer(max_size, 'a'), *rbuf = osu_buffer(max_size, 'b');
	if (!sbuf || !rbuf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	if (rank == 0) {
		printf("# OSU-style %s Test (MPI)\n# Size  %s\n",
		       OSU_KIND == 0 ? "Latency" : OSU_KIND == 1 ? "Bandwidth" : "Bi-Directional Bandwidth",
		       OSU_KIND == 0 ? "Latency (us)" : "Bandwidth (MB/s)");
		fflush(stdout);
	}
	MPI_Request req[2 * WINDOW];
	char ack[4];
	for (size_t sz = min_size; sz <= max_size; sz *= 2) {
		int n = (int)sz;
		long iters = OSU_KIND == 0 ? (sz > LARGE ? 1000 : 10000) : (sz > LARGE ? 20 : 100);
		long skip = OSU_KIND == 0 ? (sz > LARGE ? 10 : 100) : (sz > LARGE ? 2 : 10);
		if (iters_opt > 0)
			iters = iters_opt;
		if (warm_opt >= 0)
			skip = warm_opt;
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = 0;
		for (long i = 0; i < iters + skip; i++) {
			if (i == skip)
				t0 = MPI_Wtime();
			if (OSU_KIND == 0) {
				if (rank == 0) {
					MPI_Send(sbuf, n, MPI_CHAR, peer, TAG, MPI_COMM_WORLD);
					MPI_Recv(rbuf, n, MPI_CHAR, peer, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				} else {
					MPI_Recv(rbuf, n, MPI_CHAR, peer, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
					MPI_Send(sbuf, n, MPI_CHAR, peer, TAG, MPI_COMM_WORLD);
				}
			} else if (OSU_KIND == 1) {
				if (rank == 0) {
					for (int j = 0; j < WINDOW; j++)
						MPI_Isend(sbuf, n, MPI_CHAR, peer, TAG, MPI_COMM_WORLD, &req[j]);
					MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
					MPI_Recv(ack, 4, MPI_CHAR, peer, ACK_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				} else {
					for (int j = 0; j < WINDOW; j++)
						MPI_Irecv(rbuf, n, MPI_CHAR, peer, TAG, MPI_COMM_WORLD, &req[j]);
					MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
					MPI_Send(ack, 4, MPI_CHAR, peer, ACK_TAG, MPI_COMM_WORLD);
				}
			} else {
				for (int j = 0; j < WINDOW; j++)
					MPI_Irecv(rbuf, n, MPI_CHAR, peer, TAG, MPI_COMM_WORLD, &req[j]);
				for (int j = 0; j < WINDOW; j++)
					MPI_Isend(sbuf, n, MPI_CHAR, peer, TAG, MPI_COMM_WORLD, &req[WINDOW + j]);
				MPI_Waitall(2 * WINDOW, req, MPI_STATUSES_IGNORE);
			}
		}
		double s = MPI_Wtime() - t0;
		if (rank == 0) {
			if (OSU_KIND == 0)
				printf("%-10zu%18.2f\n", sz, s * 1e6 / (2.0 * (double)iters));
			else
				printf("%-10zu%18.2f\n", sz,
				       (double)sz / 1e6 * (double)iters * WINDOW * (OSU_KIND == 2 ? 2 : 1) / s);
			fflush(stdout);
		}
	}
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return 0;
}
