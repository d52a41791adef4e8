/* echo_server.c - a TCP echo server written as sequential code: a task per
 * connection on canal's runtime. Each connection task keeps a receive
 * stream open (one receive armed in the kernel for the connection's whole
 * life, instead of one per read) and sends back what it reads. The program
 * then runs CLIENTS client tasks against its own server on the loopback,
 * each checking every byte of its echoes, and exits.
 * Build: cc echo_server.c $(pkg-config --cflags --libs canal) -o echo_server */
#include <canal/task.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CLIENTS 100
#define ROUNDS 200

static int listener;
static struct sockaddr_in server_addr;
static _Atomic int failures, clients_left = CLIENTS;

/* One connection: echo until the client closes. */
static void connection(void *arg)
{
	int fd = (int)(long)arg;
	struct canal_io_rstream *in;
	char buf[4096];

	if (canal_io_rstream_open(fd, &in) != 0) {
		close(fd);
		return;
	}
	for (;;) {
		ssize_t n = canal_io_rstream_recv(in, buf, sizeof buf, -1, NULL);
		if (n <= 0)
			break; /* 0: the client closed; < 0: -errno */
		for (ssize_t off = 0; off < n;) {
			ssize_t w = canal_io_send(fd, buf + off, (size_t)(n - off),
						  0, -1, NULL);
			if (w < 0)
				goto out;
			off += w;
		}
	}
out:
	canal_io_rstream_close(in); /* the stream first, then the socket */
	close(fd);
}

/* Accept CLIENTS connections, a task for each. */
static void acceptor(void *arg)
{
	(void)arg;
	for (int i = 0; i < CLIENTS; i++) {
		int fd = canal_io_accept(listener, NULL, NULL,
					 SOCK_NONBLOCK | SOCK_CLOEXEC, -1, NULL);
		int one = 1;
		if (fd >= 0)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		if (fd < 0 || canal_spawn(connection, (void *)(long)fd) != 0) {
			failures++;
			if (fd >= 0)
				close(fd);
		}
	}
	close(listener);
}

/* A client: ROUNDS messages of varying length, each echo checked. */
static void client(void *arg)
{
	unsigned id = (unsigned)(long)arg;
	char out[1000], back[1000];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (canal_io_connect(fd, (struct sockaddr *)&server_addr,
			     sizeof server_addr, -1, NULL) != 0)
		goto fail;
	for (unsigned r = 0; r < ROUNDS; r++) {
		size_t len = 1 + (id * 31 + r * 17) % sizeof out;
		for (size_t i = 0; i < len; i++)
			out[i] = (char)(id + r + i);
		if (canal_io_send(fd, out, len, 0, -1, NULL) != (ssize_t)len)
			goto fail;
		for (size_t got = 0; got < len;) {
			ssize_t n = canal_io_recv(fd, back + got, len - got, 0,
						  -1, NULL);
			if (n <= 0)
				goto fail;
			got += (size_t)n;
		}
		if (memcmp(out, back, len) != 0)
			goto fail;
	}
	close(fd);
	clients_left--;
	return;
fail:
	failures++;
	close(fd);
	clients_left--;
}

static void main_task(void *arg)
{
	(void)arg;
	socklen_t len = sizeof server_addr;
	server_addr.sin_family = AF_INET;
	server_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* port 0: any */
	listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (listener < 0 ||
	    bind(listener, (struct sockaddr *)&server_addr, len) != 0 ||
	    listen(listener, CLIENTS) != 0 ||
	    getsockname(listener, (struct sockaddr *)&server_addr, &len) != 0) {
		perror("echo_server: listen");
		failures++;
		return;
	}
	canal_spawn(acceptor, NULL);
	for (long i = 0; i < CLIENTS; i++)
		canal_spawn(client, (void *)i);
}

int main(void)
{
	int r = canal_run(main_task, NULL, NULL); /* returns when all ended */
	if (r != 0 || failures != 0 || clients_left != 0) {
		fprintf(stderr, "echo_server: canal_run %d, %d failures\n", r,
			(int)failures);
		return 1;
	}
	printf("echo_server: %d clients x %d messages echoed by a task per "
	       "connection, every byte checked\n", CLIENTS, ROUNDS);
	return 0;
}
