/*
 * The benchmark suite's capture generator: FRAMES Ethernet frames into a
 * microsecond pcap (no FCS), frame i stamped GAP_US microseconds after frame
 * i - 1 (default 1: a 1 Mframes/s schedule).
 *   SIZE   every frame SIZE bytes (60..9000)
 *   mixed  sizes drawn from 64, 64, 128, 256, 512, 1024, 1500
 * Frames: every third 802.1Q-tagged (where it fits); every fourth IPv6/UDP, the others
 * IPv4 (valid header checksum) alternately TCP and UDP; addresses and ports
 * from a fixed-seed generator, so RSS spreads them and every run writes the
 * same bytes. usage: make_capture OUT FRAMES SIZE|mixed [GAP_US]
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* Writes frame i of `len` bytes into f (zeroed by the caller); returns len. */
static uint32_t make_frame(uint8_t *f, uint64_t i, uint32_t len)
{
	static const uint8_t dst[6] = {0x02, 0x52, 0x44, 0x4d, 0x00, 0x00};
	const uint64_t r1 = rng(), r2 = rng();
	uint32_t at = 12;
	memcpy(f, dst, 6);
	f[6] = 0x02;
	put32(f + 8, (uint32_t)(r1 >> 32));
	const int v6 = i % 4 == 3, tcp = !v6 && i % 2 == 1;
	if (i % 3 == 0 && !(v6 && len < 66)) { /* a tagged IPv6/UDP frame needs 66 bytes */
		put16(f + at, 0x8100);
		put16(f + at + 2, (uint16_t)(1 + r1 % 4094));
		at += 4;
	}
	put16(f + at, v6 ? 0x86dd : 0x0800);
	at += 2;
	uint8_t *ip = f + at;
	const uint32_t ip_len = len - at;
	uint8_t *l4;
	if (v6) {
		put32(ip, 0x60000000u);
		put16(ip + 4, (uint16_t)(ip_len - 40));
		ip[6] = 17;
		ip[7] = 64;
		put32(ip + 8, 0xfd000000u);
		put32(ip + 20, (uint32_t)r2);
		put32(ip + 24, 0xfd000000u);
		put32(ip + 36, (uint32_t)(r2 >> 32));
		l4 = ip + 40;
	} else {
		ip[0] = 0x45;
		put16(ip + 2, (uint16_t)ip_len);
		put16(ip + 4, (uint16_t)i);
		put16(ip + 6, 0x4000);
		ip[8] = 64;
		ip[9] = tcp ? 6 : 17;
		put32(ip + 12, 0x0a000000u | (uint32_t)(r2 & 0xffffff));
		put32(ip + 16, 0xc0a80000u | (uint32_t)(r2 >> 24 & 0xffff));
		uint32_t sum = 0;
		for (int k = 0; k < 20; k += 2)
			sum += (uint32_t)(ip[k] << 8 | ip[k + 1]);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		put16(ip + 10, (uint16_t)~sum);
		l4 = ip + 20;
	}
	put16(l4, (uint16_t)(1024 + (r2 >> 40) % 64000));
	put16(l4 + 2, (uint16_t)((r1 >> 8) % 3 == 0 ? 4791 : (r1 >> 8) % 3 == 1 ? 80 : 443));
	if (tcp) {
		put32(l4 + 4, (uint32_t)i);
		l4[12] = 0x50;
		l4[13] = 0x10;
		put16(l4 + 14, 8192);
	} else {
		put16(l4 + 4, (uint16_t)(len - (uint32_t)(l4 - f)));
	}
	return len;
}

int main(int argc, char **argv)
{
	static const uint32_t mix[] = {64, 64, 128, 256, 512, 1024, 1500};
	static uint8_t frame[9000];
	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: %s OUT FRAMES SIZE|mixed [GAP_US]\n", argv[0]);
		return 2;
	}
	const unsigned long long frames = strtoull(argv[2], NULL, 10);
	const int mixed = strcmp(argv[3], "mixed") == 0;
	const unsigned long size = mixed ? 0 : strtoul(argv[3], NULL, 10);
	const unsigned long long gap = argc == 5 ? strtoull(argv[4], NULL, 10) : 1;
	if (!mixed && (size < 60 || size > sizeof frame)) {
		fprintf(stderr, "make_capture: SIZE must be 60..%zu or 'mixed', not '%s'\n",
			sizeof frame, argv[3]);
		return 2;
	}
	FILE *out = fopen(argv[1], "wb");
	if (!out) {
		fprintf(stderr, "make_capture: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	static char buf[1 << 20];
	setvbuf(out, buf, _IOFBF, sizeof buf);
	const uint32_t file_header[6] = {0xa1b2c3d4u, 2u | 4u << 16, 0, 0, 65535, 1};
	fwrite(file_header, sizeof file_header, 1, out);
	for (unsigned long long i = 0; i < frames; ++i) {
		const uint32_t len = mixed ? mix[rng() % 7] : (uint32_t)size;
		memset(frame, 0, len);
		make_frame(frame, i, len);
		const unsigned long long us = i * gap;
		const uint32_t rec[4] = {(uint32_t)(1700000000ull + us / 1000000), (uint32_t)(us % 1000000),
					 len, len};
		fwrite(rec, sizeof rec, 1, out);
		fwrite(frame, len, 1, out);
	}
	const int failed = ferror(out);
	if (fclose(out) != 0 || failed) {
		fprintf(stderr, "make_capture: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	return 0;
}
