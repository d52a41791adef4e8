/* SPDX-License-Identifier: MIT */
/*
 * transfer/shm.c - the shared-memory driver: one segment per pair of
 * processes, holding two single-producer single-consumer byte rings (one
 * per direction) of variable-length packet records.
 *
 * SEGMENT: a file in the rendezvous directory (canal-launch puts it on
 * /dev/shm), created by the lower rank under a temporary name, initialised,
 * then renamed (so the higher rank never sees a half-made segment); the
 * higher rank maps it, stores its pid and unlinks it. Layout: a 4 KiB
 * header page (magic, geometry, both pids, both rings' indices on their own
 * cache lines), then ring 0's data (lower -> higher), then ring 1's.
 *
 * RING: head and tail are byte counters that never wrap (2^64). A record
 * is an 8-byte header word {u32 len (low half), u32 mark} and len bytes,
 * padded to 8; mark is REC_PACKET, or REC_WRAP, which says "skip to the
 * ring's start" (a record never straddles the end, so the reader hands out
 * a pointer into the ring: the packet is parsed in place, no copy). A header
 * word of 0 means "no record here yet".
 * Invariants (as each side checks them on the other's counter):
 *  I1 tail <= head, head - tail <= RING_BYTES.
 *  I2 Only the producer writes head and the bytes in [tail+size.., head);
 *     only the consumer writes tail.
 *  I3 The header word at head (the next record's place) is 0: before it
 *     publishes a record, the producer zeroes the word just past it (room
 *     for it is part of every send's space check), and the segment starts
 *     zero-filled.
 * The consumer polls the header word at its tail, not the producer's head:
 * a small message then costs one shared cache line (header and payload
 * together) instead of two (the head's line, then the record's), and the
 * head's line is not pulled back and forth by a spinning reader (issue 15:
 * the 8-byte round trip). head is still published, for the consistency
 * check of shm_health() and for shm_idle()'s peer.
 * Memory ordering: the producer writes the payload and zeroes the next
 * header word, then stores the record's header word with release (a WRAP
 * record's word last of all, after the record it leads to at offset 0),
 * then head with release; the consumer loads the header word with acquire,
 * then reads the record. So a head loaded with acquire and beyond the tail
 * means the header word at the tail is visible and not 0 (the health
 * check relies on it); the consumer may see a record before its head
 * (head lags the tail by at most one record and a wrap). The consumer is
 * done with a record before it stores tail with release; the producer
 * loads tail with acquire before writing over that space.
 *
 * HOSTILE PEER: each side keeps its own copies of the geometry and of its
 * own counter; the other side's counter and every record header are checked
 * against them before use (the producer: the consumer's tail against I1;
 * the consumer: each record within the ring, len <= max_packet, no WRAP at
 * offset 0; the producer's head against I1 and I3, lagging by at most
 * HEAD_LAG_MAX, at each health check): a bad value is -EPROTO, never an
 * access outside the segment. The packet's bytes may still change under
 * the parser (the peer can write them): the parser reads each field once.
 *
 * DEATH: the peer's pid (from the segment) is watched through a pidfd,
 * readable once the process has exited (zombie or reaped).
 * CLOSE: a peer that closes its session and lives on is gone as well (as a
 * TCP peer's close ends its connection): shm_close() sets closed[its side]
 * in the header with release, after every record it sent (program order);
 * shm_health() loads the peer's mark with acquire and then says
 * -ECONNRESET, and the session drains the ring before failing the gate
 * (session.c, canal__gate_check), so that nothing sent before the close is
 * lost (test_reveng2_shm_peer_close).
 */
#define _GNU_SOURCE
#include "driver.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define SHM_MAGIC 0x63616e616c73686dULL /* "canalshm" */
#define SHM_VERSION 3u /* 2: the reader polls record headers; 3: closed[] */
#define RING_BYTES ((uint64_t)1 << 20)
#define HEADER_BYTES 4096u
#define REC_PACKET 0x5041434bu
#define REC_WRAP 0x57524150u
#define REC_HDR 8u
#define CACHE_LINE 64u
/* 64 KiB of payload per packet plus room for piece headers. */
#define SHM_MAX_PACKET ((size_t)65536 + 256)
/* Eager up to 64 KiB (the largest packet's payload) when messages above
 * go through the ring: two copies through the ring, made by the two sides
 * at once, beat one process_vm_readv, whose fixed cost (pinning the peer's
 * pages) is about 2.5 us there. AMD EPYC host, 2026-11-26, 3 interleaved
 * runs against the previous 16 KiB: osu_latency 32 KiB 3.71-3.88 ->
 * 2.57-2.64 us, 64 KiB 5.76-6.08 -> 4.90-5.11 (Open MPI 4.19, 6.17);
 * osu_bw 32 KiB 7.4-10.4k -> 23.6-25.3k MB/s, 64 KiB 9.8-12.9k ->
 * 21.0-21.7k (Open MPI 9.1k, 11.7k). With the read (SHM_EAGER_READ),
 * eager up to 8 KiB: see canal__shm_rndv_mode(). */
#define SHM_EAGER_MAX ((size_t)65536)
#define SHM_EAGER_READ ((size_t)8192)
/* With the read, messages above 1 MiB still go through the ring: there
 * both sides copy at once, 64 KiB chunks in flight, and that beats one
 * copy by the receiver alone once the message outgrows the caches. Intel
 * Xeon host, 2026-11-28, 5 interleaved runs, osu_latency one-way us, read
 * / ring / Open MPI vader: 512 KiB 24.4 / 42.1 / 24.4, 1 MiB 66.0 / 92.4 /
 * 65.3, 2 MiB 197 / 180 / 193, 4 MiB 392 / 352 / 392; osu_bw (7 runs,
 * MB/s) 2 MiB 9.4k / 11.6k / 10.5k, 4 MiB 10.1k / 12.1k / 10.7k. */
#define SHM_READ_MAX ((size_t)1 << 20)
/* How far the published head may lag the consumer's tail (see the
 * ordering paragraph above): one largest record plus a wrap. */
#define HEAD_LAG_MAX (2 * (REC_HDR + SHM_MAX_PACKET + 8))

struct shm_ring_ctl {
	_Alignas(64) _Atomic uint64_t head;
	_Alignas(64) _Atomic uint64_t tail;
};

struct shm_header {
	uint64_t magic;
	uint32_t version;
	uint32_t ring_bytes;
	_Atomic int32_t pid[2];
	_Atomic uint32_t closed[2]; /* side's session closed (CLOSE above) */
	struct shm_ring_ctl ring[2];
};

struct shm_driver {
	struct canal__driver base;
	unsigned char *map;
	size_t map_len;
	struct shm_header *hdr;
	struct shm_ring_ctl *tx, *rx;
	unsigned char *tx_data, *rx_data;
	uint64_t tx_head;   /* our copy of the counter we own */
	uint64_t tx_tail_seen; /* the consumer's tail when last read */
	uint64_t rx_tail;
	uint64_t rx_pending; /* bytes of the record handed out by recv() */
	int pidfd;
	int side;            /* ours: 0 for the lower rank */
};

static inline uint64_t round8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

/* The header word of the record at byte pos (a multiple of 8) of a ring. */
static inline _Atomic uint64_t *rec_word(unsigned char *data, uint64_t pos)
{
	return (_Atomic uint64_t *)(void *)(data + pos);
}

static inline uint64_t rec_header(uint32_t len, uint32_t mark)
{
	return (uint64_t)mark << 32 | len;
}

static int shm_send(struct canal__driver *d_, const struct iovec *iov, int n,
		    size_t total)
{
	struct shm_driver *d = (struct shm_driver *)d_;
	if (total > d->base.caps.max_packet)
		return -EMSGSIZE;
	uint64_t head = d->tx_head;
	uint64_t rec = REC_HDR + round8(total);
	uint64_t pos = head & (RING_BYTES - 1);
	uint64_t to_end = RING_BYTES - pos;
	uint64_t skip = rec <= to_end ? 0 : to_end; /* a WRAP record first */
	/* The record, and the next header word it zeroes (I3). */
	uint64_t need = skip + rec + REC_HDR;
	/* Fast path: the tail seen last time leaves room (it only moves
	 * forward), so the consumer's cache line is not touched. */
	if (RING_BYTES - (head - d->tx_tail_seen) < need) {
		uint64_t tail = atomic_load_explicit(&d->tx->tail,
						     memory_order_acquire);
		if (tail > head || tail < d->tx_tail_seen ||
		    head - tail > RING_BYTES) {
			snprintf(d->base.why, sizeof d->base.why,
				 "shm ring: peer's tail %llu out of range",
				 (unsigned long long)tail);
			return -EPROTO;
		}
		d->tx_tail_seen = tail;
		if (RING_BYTES - (head - tail) < need)
			return -EAGAIN;
	}
	uint64_t at = skip ? 0 : pos;
	unsigned char *p = d->tx_data + at + REC_HDR;
	for (int i = 0; i < n; i++) {
		memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	/* I3 for the next record: free space (need covered it), and the
	 * consumer cannot reach it before the header stored below. */
	atomic_store_explicit(rec_word(d->tx_data, (at + rec) & (RING_BYTES - 1)),
			      0, memory_order_relaxed);
	/* Pairs with the consumer's acquire load of the word in shm_recv(). */
	atomic_store_explicit(rec_word(d->tx_data, at),
			      rec_header((uint32_t)total, REC_PACKET),
			      memory_order_release);
	if (skip) /* only now: the consumer goes to offset 0 through it */
		atomic_store_explicit(rec_word(d->tx_data, pos),
				      rec_header(0, REC_WRAP),
				      memory_order_release);
	head += skip + rec;
	d->tx_head = head;
	/* Pairs with the acquire load of head in shm_health(). */
	atomic_store_explicit(&d->tx->head, head, memory_order_release);
	return 0;
}

static int shm_flush(struct canal__driver *d)
{
	(void)d;
	return 0;
}

static int shm_recv(struct canal__driver *d_, const unsigned char **pkt,
		    size_t *len)
{
	struct shm_driver *d = (struct shm_driver *)d_;
	for (;;) {
		uint64_t tail = d->rx_tail;
		uint64_t pos = tail & (RING_BYTES - 1);
		/* Pairs with the producer's release store of the word in
		 * shm_send(). */
		uint64_t w = atomic_load_explicit(rec_word(d->rx_data, pos),
						  memory_order_acquire);
		if (w == 0)
			return 0;
		uint32_t rlen = (uint32_t)w, mark = (uint32_t)(w >> 32);
		/* A WRAP at offset 0 would send the reader round forever. */
		if (mark == REC_WRAP && pos != 0) {
			d->rx_tail = tail + (RING_BYTES - pos);
			atomic_store_explicit(&d->rx->tail, d->rx_tail,
					      memory_order_release);
			continue;
		}
		uint64_t rec = REC_HDR + round8(rlen);
		if (mark != REC_PACKET || rlen == 0 ||
		    rlen > d->base.caps.max_packet || pos + rec > RING_BYTES) {
			snprintf(d->base.why, sizeof d->base.why,
				 "shm ring: bad record (mark %#x, length %u)",
				 mark, rlen);
			return -EPROTO;
		}
		*pkt = d->rx_data + pos + REC_HDR;
		*len = rlen;
		d->rx_pending = rec;
		return 1;
	}
}

static void shm_release(struct canal__driver *d_)
{
	struct shm_driver *d = (struct shm_driver *)d_;
	d->rx_tail += d->rx_pending;
	d->rx_pending = 0;
	/* Pairs with the producer's acquire load of tail in shm_send(). */
	atomic_store_explicit(&d->rx->tail, d->rx_tail, memory_order_release);
}

/* Whether the next record is there, looked at only when its header word
 * shares a cache line with the record just released (a line already
 * here). A word at the start of a new line is left to the next poll:
 * loading it now would fetch the line from the producer's core (it zeroed
 * that word) on the path of the message just received, before the caller
 * even sees it. Measured (osu_latency, 8 B, shm, minima over 11 runs):
 * with the load here one-way latency stayed at 0.32 us while the raw ring
 * went from 0.25 to 0.15 us. */
static bool shm_buffered(struct canal__driver *d_)
{
	struct shm_driver *d = (struct shm_driver *)d_;
	uint64_t pos = d->rx_tail & (RING_BYTES - 1);
	if (pos % CACHE_LINE == 0)
		return false;
	return atomic_load_explicit(rec_word(d->rx_data, pos),
				    memory_order_relaxed) != 0;
}

/* A send here is a copy that is over when send() returns: the ring is
 * never "busy transmitting" as a NIC is. It is busy only when it could not
 * take a largest packet: then the strategy may as well aggregate. (Waiting
 * for the peer to *consume* would tie our sends to its scheduling: measured
 * 50 us per round of two packs under load, against 0.6 us.) */
static bool shm_idle(struct canal__driver *d_)
{
	struct shm_driver *d = (struct shm_driver *)d_;
	if (RING_BYTES - (d->tx_head - d->tx_tail_seen) >=
	    2 * (REC_HDR + SHM_MAX_PACKET))
		return true;
	uint64_t tail = atomic_load_explicit(&d->tx->tail, memory_order_acquire);
	if (tail > d->tx_head || tail < d->tx_tail_seen)
		return false; /* out of range: shm_send() reports it */
	d->tx_tail_seen = tail;
	return RING_BYTES - (d->tx_head - tail) >=
	       2 * (REC_HDR + SHM_MAX_PACKET);
}

/* The reader does not follow head (it polls record headers), so a peer
 * that moves head wrongly, or publishes head without the record, is found
 * here, at each health check: -EPROTO with the reason. */
static int ring_check(struct shm_driver *d)
{
	uint64_t tail = d->rx_tail;
	/* Pairs with the release store of head in shm_send(): a head beyond
	 * the tail makes the record at the tail visible. */
	uint64_t head = atomic_load_explicit(&d->rx->head, memory_order_acquire);
	if (head - tail > RING_BYTES && tail - head > HEAD_LAG_MAX) {
		snprintf(d->base.why, sizeof d->base.why,
			 "shm ring: peer's head %llu out of range",
			 (unsigned long long)head);
		return -EPROTO;
	}
	if (head != tail && head - tail <= RING_BYTES && d->rx_pending == 0 &&
	    atomic_load_explicit(rec_word(d->rx_data, tail & (RING_BYTES - 1)),
				 memory_order_relaxed) == 0) {
		snprintf(d->base.why, sizeof d->base.why,
			 "shm ring: peer's head %llu but no record at %llu",
			 (unsigned long long)head, (unsigned long long)tail);
		return -EPROTO;
	}
	return 0;
}

static int shm_health(struct canal__driver *d_)
{
	struct shm_driver *d = (struct shm_driver *)d_;
	int err = ring_check(d);
	if (err)
		return err;
	/* Pairs with the release store in shm_close(): every record the
	 * peer sent is visible now, for the drain that follows. */
	if (atomic_load_explicit(&d->hdr->closed[1 - d->side],
				 memory_order_acquire)) {
		d->base.peer_closed = true;
		return -ECONNRESET;
	}
	if (d->pidfd >= 0) {
		struct pollfd p = { .fd = d->pidfd, .events = POLLIN };
		if (poll(&p, 1, 0) > 0)
			return -ECONNRESET;
		return 0;
	}
	/* No pidfd: kill(pid, 0) alone took an exited peer not yet reaped
	 * for a living one (test_revapi_lazy_nopidfd). */
	return canal__pid_gone(d->base.peer_pid) ? -ECONNRESET : 0;
}

static int shm_read_peer(struct canal__driver *d, void *buf,
			 unsigned long addr, size_t len)
{
	size_t done = 0;
	while (done < len) {
		struct iovec l = { (char *)buf + done, len - done };
		struct iovec r = { (void *)(addr + done), len - done };
		ssize_t k = process_vm_readv(d->peer_pid, &l, 1, &r, 1, 0);
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EFAULT;
		done += (size_t)k;
	}
	return 0;
}

static void shm_close(struct canal__driver *d_)
{
	struct shm_driver *d = (struct shm_driver *)d_;
	if (d->pidfd >= 0)
		close(d->pidfd);
	/* Pairs with the acquire load in shm_health(): after our last
	 * record. */
	atomic_store_explicit(&d->hdr->closed[d->side], 1, memory_order_release);
	munmap(d->map, d->map_len);
	free(d);
}

static const struct canal__driver_ops shm_ops = {
	.name = "shm",
	.send = shm_send,
	.flush = shm_flush,
	.recv = shm_recv,
	.release = shm_release,
	.buffered = shm_buffered,
	.idle = shm_idle,
	.health = shm_health,
	.read_peer = shm_read_peer,
	.close = shm_close,
};

static void sleep_ms(int ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };
	nanosleep(&ts, NULL);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* How a message above the eager size moves (CANAL_ENGINE_SHM_RNDV):
 * "ring", the receiver answers the RTS with RTR and the sender streams
 * 64 KiB DATA packets through the ring into the receive buffer: two
 * copies, made by both sides at once; "read", the receiver copies straight
 * from the sender's buffer with process_vm_readv (one copy, by the
 * receiver alone, after pinning the sender's pages), messages above 8 KiB
 * up to SHM_READ_MAX (1 MiB; larger ones through the ring);
 * "auto" (the default): read on Intel processors, the ring on others.
 * Measured on this project's two hosts (2 vCPUs of a KVM VM each):
 * - AMD EPYC, 2026-11-26, osu_bw 128 KiB-4 MiB, 2 interleaved runs: ring
 *   23.4-25.1k MB/s, read 13.0-15.6k; a second set with Open MPI (which
 *   reads) in the same runs, the host in its faster state: ring 52-65k,
 *   read 11.5-15.6k, Open MPI 14.2-15.7k; osu_latency 1 MiB 44.5-45.1
 *   against 71.2-79.2 us; with a busy process beside: ring 11.6-15.2k,
 *   read 7.1-14.2k, Open MPI 7.0-11.0k.
 * - Intel Xeon, 2026-11-28, 5 interleaved runs, median one-way us, ring
 *   (eager to 64 KiB) / read (eager to 4 KiB) / Open MPI vader: 8 KiB
 *   1.96 / 1.44 / 1.82, 16 KiB 3.29 / 1.77 / 2.22, 64 KiB 9.38 / 4.25 /
 *   4.53, 256 KiB 23.5 / 12.8 / 13.2, 1 MiB 94.2 / 66.1 / 68.4; osu_bw (3
 *   runs, MB/s) 64 KiB 14.2k / 18.1k / 13.9k, 256 KiB 13.2k / 21.7k /
 *   21.3k, 4 MiB 12.4k / 10.6k / 11.0k, 8 KiB 12.6k / 8.2k / 4.3k. There
 *   the second copy, of lines the other core has just written, is the
 *   slow part. The read's eager size, 5 interleaved runs, 4 / 8 / 16 KiB:
 *   osu_bw 8 KiB 4.7k / 11.5k / 12.3k MB/s, 16 KiB 7.0k / 11.9k / 12.8k;
 *   osu_latency 8 KiB 1.92 / 1.90 / 1.88 us, 16 KiB 2.42 / 1.90 / 3.24:
 *   8 KiB.
 * "read" uses less CPU everywhere (one copy): a choice for a machine whose
 * cores have other work. Where the kernel refuses the read (ptrace rules:
 * Yama's ptrace_scope 1 between sibling processes; seccomp), the
 * receiver falls back to the ring at its first RTS and answers NOREAD;
 * the sender then uses the ring's 64 KiB eager size to that peer
 * (window.c). The mode is read once per session, at open. */
static int vendor_is_intel(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0, &a, &b, &c, &d))
		return 0;
	/* "GenuineIntel" in EBX, EDX, ECX. */
	return b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu;
#else
	return 0;
#endif
}

int canal__shm_rndv_mode(void)
{
	const char *v = getenv("CANAL_ENGINE_SHM_RNDV");
	if (!v || !*v || !strcmp(v, "auto"))
		return vendor_is_intel();
	if (!strcmp(v, "ring"))
		return 0;
	if (!strcmp(v, "read"))
		return 1;
	return -EINVAL;
}

/* The caps that follow from the mode. */
static void set_rndv_caps(struct canal__driver_caps *c, bool read)
{
	c->read_peer_memory = read;
	c->rts_address = read;
	c->read_max = SHM_READ_MAX;
	c->eager_max = read ? SHM_EAGER_READ : SHM_EAGER_MAX;
	c->eager_max_noread = SHM_EAGER_MAX;
	c->eager_accept_max = SHM_EAGER_MAX;
	c->rts_min = SHM_EAGER_READ;
}

/* A driver d on the mapped segment, header h, as ring side `side` of the
 * pair with peer_pid (both ways of connecting: shm_connect's rendezvous,
 * the lazy shm_attach_fd): its operations and caps, its rings (its own
 * ring is tx, the peer's rx) and the pidfd that watches the peer (-1 where
 * pidfd_open is refused: the peer's death is then seen only by its pid). */
static void wire_driver(struct shm_driver *d, struct shm_header *h, int side,
			pid_t peer_pid, bool read)
{
	d->base.ops = &shm_ops;
	d->base.peer_pid = peer_pid;
	d->base.caps.max_packet = SHM_MAX_PACKET;
	set_rndv_caps(&d->base.caps, read);
	d->base.caps.gather = false;
	d->base.caps.flush_noop = true;
	d->tx = &h->ring[side];
	d->rx = &h->ring[1 - side];
	d->tx_data = d->map + HEADER_BYTES + (uint64_t)side * RING_BYTES;
	d->rx_data = d->map + HEADER_BYTES + (uint64_t)(1 - side) * RING_BYTES;
	d->pidfd = (int)syscall(SYS_pidfd_open, peer_pid, 0);
}

/* Maps a segment with its pages present and writable in this process's
 * page tables: otherwise the first lap of each ring takes a page fault
 * every 4 KiB of traffic, on the message's path. MAP_POPULATE maps the
 * pages (the creator's call allocates them on tmpfs) but read-only where
 * the file system tracks dirty pages (a disk-backed directory): there
 * MADV_POPULATE_WRITE (Linux 5.14) takes the write faults now as well
 * (on older kernels the mapping is left as MAP_POPULATE made it). The
 * cost moves to the gate's connection (with lazy connection, the first
 * message to the peer): AMD EPYC host, open_time's first exchange
 * 0.85-1.0 ms before, 2.3-2.9 ms after (2 MiB per pair, resident from the
 * start). osu_latency's quick run (1 000 iterations, all inside the rings'
 * first lap), one-way us, 3 runs interleaved: 128 B 0.57-0.61 ->
 * 0.40-0.42, 256 B 0.71-0.74 -> 0.43-0.45, 512 B 0.71-0.73 -> 0.46-0.47
 * (Open MPI's 0.41-0.43, 0.42-0.44, 0.63-0.64 in the same runs). */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
static void *map_segment(int fd, size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, fd, 0);
	if (m != MAP_FAILED)
		(void)madvise(m, len, MADV_POPULATE_WRITE);
	return m;
}

int canal__shm_connect(const char *dir, int rank, int peer, int timeout_ms,
		       bool read, struct canal__driver **out)
{
	int lo = rank < peer ? rank : peer, hi = rank < peer ? peer : rank;
	int side = rank == lo ? 0 : 1;
	char path[600], tmp[620];
	snprintf(path, sizeof path, "%s/shm.%d.%d", dir, lo, hi);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	size_t map_len = HEADER_BYTES + 2 * RING_BYTES;
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	int fd, err;
	if (side == 0) {
		fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		if (ftruncate(fd, (off_t)map_len) < 0) {
			err = -errno;
			close(fd);
			unlink(tmp);
			return err;
		}
	} else {
		for (;;) {
			fd = open(path, O_RDWR | O_CLOEXEC);
			if (fd >= 0)
				break;
			if (errno != ENOENT)
				return -errno;
			if (now_ms() > deadline)
				return -ETIMEDOUT;
			sleep_ms(1);
		}
	}
	void *map = map_segment(fd, map_len);
	err = map == MAP_FAILED ? -errno : 0;
	close(fd);
	if (err) {
		if (side == 0)
			unlink(tmp);
		return err;
	}
	struct shm_driver *d = calloc(1, sizeof *d);
	if (!d) {
		munmap(map, map_len);
		return -ENOMEM;
	}
	d->map = map;
	d->map_len = map_len;
	d->hdr = map;
	d->side = side;
	d->pidfd = -1;
	struct shm_header *h = d->hdr;
	if (side == 0) {
		h->magic = SHM_MAGIC;
		h->version = SHM_VERSION;
		h->ring_bytes = (uint32_t)RING_BYTES;
		atomic_store_explicit(&h->pid[0], (int32_t)getpid(),
				      memory_order_release);
		if (rename(tmp, path) < 0) {
			err = -errno;
			unlink(tmp);
			goto fail;
		}
	} else {
		if (h->magic != SHM_MAGIC || h->version != SHM_VERSION ||
		    h->ring_bytes != RING_BYTES) {
			err = -EPROTO;
			goto fail;
		}
		atomic_store_explicit(&h->pid[1], (int32_t)getpid(),
				      memory_order_release);
		unlink(path);
	}
	int32_t ppid;
	while ((ppid = atomic_load_explicit(&h->pid[1 - side],
					    memory_order_acquire)) == 0) {
		if (now_ms() > deadline) {
			unlink(path);
			err = -ETIMEDOUT;
			goto fail;
		}
		sleep_ms(1);
	}
	/* The segment was zero-filled by ftruncate: both rings start empty. */
	d->tx_head = 0;
	d->rx_tail = 0;
	wire_driver(d, h, side, ppid, read);
	/* With "read", assumed until a read fails (EPERM under some
	 * sandboxes): then the schedule layer turns it off and uses the ring
	 * (RTR + DATA). */
	*out = &d->base;
	return 0;
fail:
	munmap(map, map_len);
	free(d);
	return err;
}

/*
 * The lazy connection (transfer/lazy.c): either side may come first and
 * nobody waits. The first builds the segment under a name of its own
 * (shm.<lo>.<hi>.<rank>.tmp), writes its pid, then link(2)s it to the
 * pair's name: link fails with EEXIST if the other side got there first
 * (rename would replace it), and then the loser drops its own and attaches
 * to the winner's. The one that attaches (finds the segment) stores its
 * pid and unlinks the name: the segment lives on in both mappings. The
 * peer's pid is given (read from its inbox), so the pidfd watch starts at
 * once, before the peer has attached; records sent before it attaches wait
 * in the ring. Sides stay by rank (the lower rank's ring is ring 0).
 */
static int shm_attach_fd(int fd, int side, bool creator, pid_t peer_pid,
			 bool read, struct canal__driver **out)
{
	size_t map_len = HEADER_BYTES + 2 * RING_BYTES;
	struct stat st;
	if (!creator && (fstat(fd, &st) < 0 || (size_t)st.st_size < map_len))
		return -EPROTO; /* not a segment of ours: never map past it */
	void *map = map_segment(fd, map_len);
	if (map == MAP_FAILED)
		return -errno;
	struct shm_driver *d = calloc(1, sizeof *d);
	if (!d) {
		munmap(map, map_len);
		return -ENOMEM;
	}
	d->map = map;
	d->map_len = map_len;
	d->hdr = map;
	d->side = side;
	struct shm_header *h = d->hdr;
	if (creator) {
		h->magic = SHM_MAGIC;
		h->version = SHM_VERSION;
		h->ring_bytes = (uint32_t)RING_BYTES;
	} else if (h->magic != SHM_MAGIC || h->version != SHM_VERSION ||
		   h->ring_bytes != RING_BYTES) {
		munmap(map, map_len);
		free(d);
		return -EPROTO;
	}
	atomic_store_explicit(&h->pid[side], (int32_t)getpid(),
			      memory_order_release);
	wire_driver(d, h, side, peer_pid, read);
	*out = &d->base;
	return 0;
}

int canal__shm_attach(const char *dir, int rank, int peer, pid_t peer_pid,
		      bool read, struct canal__driver **out)
{
	int lo = rank < peer ? rank : peer, hi = rank < peer ? peer : rank;
	int side = rank == lo ? 0 : 1;
	char path[600], tmp[640];
	snprintf(path, sizeof path, "%s/shm.%d.%d", dir, lo, hi);
	snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, rank);
	for (int attempt = 0; attempt < 2; attempt++) {
		int fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd >= 0) {
			int err = shm_attach_fd(fd, side, false, peer_pid, read, out);
			close(fd);
			if (!err)
				unlink(path); /* both sides have it now */
			return err;
		}
		if (errno != ENOENT)
			return -errno;
		if (attempt > 0)
			break;
		fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		int err = 0;
		if (ftruncate(fd, (off_t)(HEADER_BYTES + 2 * RING_BYTES)) < 0)
			err = -errno;
		if (!err)
			err = shm_attach_fd(fd, side, true, peer_pid, read, out);
		close(fd);
		if (!err && link(tmp, path) == 0) {
			unlink(tmp);
			return 0;
		}
		int lerr = err ? err : -errno;
		unlink(tmp);
		if (!err)
			shm_close(*out);
		*out = NULL;
		if (lerr != -EEXIST)
			return lerr;
		/* The peer linked its segment first: take that one. */
	}
	return -ENOENT; /* linked, then gone: not a peer following this code */
}

int canal__shm_inject(struct canal__driver *d_, const void *bytes, size_t n,
		      uint64_t advance)
{
	struct shm_driver *d = (struct shm_driver *)d_;
	uint64_t pos = d->tx_head & (RING_BYTES - 1);
	if (n > RING_BYTES - pos)
		n = RING_BYTES - pos;
	memcpy(d->tx_data + pos, bytes, n);
	d->tx_head += advance;
	atomic_store_explicit(&d->tx->head, d->tx_head, memory_order_release);
	return 0;
}
