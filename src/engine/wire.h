/* SPDX-License-Identifier: MIT */
/*
 * engine/wire.h - the wire format of the engine's pieces (shared by the
 * collect and schedule layers; the drivers only see packets).
 *
 * A packet is a sequence of pieces, back to back, nothing between them.
 * Every piece starts with a 12-byte header, little-endian:
 *
 *   0  u8  kind     EAGER, RTS, RTR, DATA, FIN, CREDIT
 *   1  u8  flags    EXPRESS (informative), BULK (RTS: data by the
 *                   driver's bulk transfer), NOREAD (RTR), MORE
 *                   (EAGER, RTS: a piece of a pack that is not its
 *                   last: the next message of the flow belongs to the
 *                   same pack)
 *   2  u16 tag      the flow (EAGER, RTS)
 *   4  u32 seq      number of the message in its (gate, tag) flow
 *   8  u32 len      EAGER, DATA: bytes of payload after the header;
 *                   RTS: length of the message; CREDIT: bytes returned
 *
 * then, by kind, 0 to 16 bytes of cookies (request ids of the sender "s" or
 * the receiver "r"; never pointers):
 *   RTS  u64 cookie_s, u64 addr (sender's buffer, for process_vm_readv; 0
 *        when the receiver cannot read it)
 *   RTR  u64 cookie_s, u64 cookie_r
 *   DATA u64 cookie_r, u64 offset, then len bytes
 *   FIN  u64 cookie_s
 * A piece whose header or payload goes past the end of its packet, or of
 * an unknown kind, is a protocol error (the gate is closed with -EPROTO).
 */
#ifndef CANAL_ENGINE_WIRE_H
#define CANAL_ENGINE_WIRE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

enum canal__piece_kind {
	PIECE_EAGER = 1,
	PIECE_RTS,
	PIECE_RTR,
	PIECE_DATA,
	PIECE_FIN,
	PIECE_CREDIT,
	PIECE_KIND_END,
};

#define PIECE_HDR 12u
#define PIECE_FLAG_EXPRESS 1u
/* RTS: the data follows by the driver's bulk transfer under cookie_s (no
 * RTR, DATA or FIN); only on a driver with caps.bulk. */
#define PIECE_FLAG_BULK 2u
/* RTR: the receiver will not read the sender's memory (its read was
 * refused, or it moves large messages through the ring): the sender stops
 * putting its address in RTS and uses caps.eager_max_noread (shm). */
#define PIECE_FLAG_NOREAD 4u
/* EAGER, RTS: the message is a piece of a pack, and not its last (pack.c:
 * unpack_end drops the pieces the receiver did not unpack). */
#define PIECE_FLAG_MORE 8u

struct canal__piece_hdr {
	uint8_t kind, flags;
	uint16_t tag;
	uint32_t seq, len;
	uint64_t a, b; /* the kind's cookies/offset/address */
};

/* Bytes after the 12-byte header before the payload, by kind; -1 for an
 * unknown kind. */
static inline int canal__piece_extra(unsigned kind)
{
	switch (kind) {
	case PIECE_EAGER: return 0;
	case PIECE_RTS: return 16;
	case PIECE_RTR: return 16;
	case PIECE_DATA: return 16;
	case PIECE_FIN: return 8;
	case PIECE_CREDIT: return 0;
	default: return -1;
	}
}

static inline int canal__piece_has_payload(unsigned kind)
{
	return kind == PIECE_EAGER || kind == PIECE_DATA;
}

/* Encode h into out (room for 28 bytes); returns the header's length. */
static inline unsigned canal__piece_encode(const struct canal__piece_hdr *h,
					   unsigned char *out)
{
	uint16_t tag = htole16(h->tag);
	uint32_t seq = htole32(h->seq), len = htole32(h->len);
	uint64_t a = htole64(h->a), b = htole64(h->b);
	int extra = canal__piece_extra(h->kind);
	out[0] = h->kind;
	out[1] = h->flags;
	memcpy(out + 2, &tag, 2);
	memcpy(out + 4, &seq, 4);
	memcpy(out + 8, &len, 4);
	if (extra >= 8)
		memcpy(out + 12, &a, 8);
	if (extra >= 16)
		memcpy(out + 20, &b, 8);
	return PIECE_HDR + (unsigned)(extra > 0 ? extra : 0);
}

/* Decode the header at p (avail bytes): its total header length, or 0 if
 * it is truncated or of an unknown kind. Each byte is read once. */
static inline unsigned canal__piece_decode(const unsigned char *p,
					   size_t avail,
					   struct canal__piece_hdr *h)
{
	if (avail < PIECE_HDR)
		return 0;
	h->kind = p[0];
	h->flags = p[1];
	int extra = canal__piece_extra(h->kind);
	if (extra < 0 || avail < PIECE_HDR + (unsigned)extra)
		return 0;
	uint16_t tag;
	uint32_t seq, len;
	uint64_t a = 0, b = 0;
	memcpy(&tag, p + 2, 2);
	memcpy(&seq, p + 4, 4);
	memcpy(&len, p + 8, 4);
	if (extra >= 8)
		memcpy(&a, p + 12, 8);
	if (extra >= 16)
		memcpy(&b, p + 20, 8);
	h->tag = le16toh(tag);
	h->seq = le32toh(seq);
	h->len = le32toh(len);
	h->a = le64toh(a);
	h->b = le64toh(b);
	return PIECE_HDR + (unsigned)extra;
}

#endif /* CANAL_ENGINE_WIRE_H */
