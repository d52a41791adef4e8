/* SPDX-License-Identifier: MIT */
/*
 * fdio.h - the transport functions shared by the methods built on file
 * descriptors (pipe, fifo, unix sockets, tcp): a side reads one fd and
 * writes another (or the same).
 */
#ifndef CANAL_BENCH_IPC_FDIO_H
#define CANAL_BENCH_IPC_FDIO_H

#include <stddef.h>
#include <sys/types.h>

struct ipc_fds {
	int rfd, wfd;
	int owned; /* close() closes them */
};

/* A context for open(): malloc'ed, NULL on failure. */
struct ipc_fds *ipc_fds_new(int rfd, int wfd, int owned);
/* Byte streams (pipe, fifo, unix-stream, tcp): exactly len bytes, partial
 * transfers handled; recv returns len, or fewer at EOF, or -errno. */
int ipc_fd_send_stream(void *ctx, const void *buf, size_t len);
ssize_t ipc_fd_recv_stream(void *ctx, void *buf, size_t len);
/* Message sockets (unix-dgram, unix-seqpacket): one send per message; recv
 * returns the real length of the message (MSG_TRUNC), so a wrong size is
 * seen. */
int ipc_fd_send_msg(void *ctx, const void *buf, size_t len);
ssize_t ipc_fd_recv_msg(void *ctx, void *buf, size_t len);
void ipc_fds_close(void *ctx);

#endif
