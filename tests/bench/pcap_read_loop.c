/*
 * The baseline of the replay benchmarks (issue 11): the simplest libpcap
 * reader, built with -O2 whatever the build type.
 *   default  pcap_next_ex, touching one byte per frame
 *   --copy   also copies every frame into a ring of 2 KiB buffers and writes
 *            a 64-byte completion record, as the least a receiver must do
 * usage: pcap_read_loop [--copy] FILE   (prints frames and bytes)
 */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct record {
	uint64_t id;
	uint32_t len;
	uint32_t slot;
	uint64_t ts;
	uint8_t pad[40];
};

int main(int argc, char **argv)
{
	enum { SLOTS = 1024, SLOT = 2048 };
	static unsigned char ring[SLOTS][SLOT];
	static struct record cq[SLOTS];
	char err[PCAP_ERRBUF_SIZE];
	const int copy = argc == 3 && strcmp(argv[1], "--copy") == 0;
	if (argc != 2 + copy) {
		fprintf(stderr, "usage: %s [--copy] FILE\n", argv[0]);
		return 2;
	}
	pcap_t *p = pcap_open_offline(argv[argc - 1], err);
	if (!p) {
		fprintf(stderr, "pcap_read_loop: %s\n", err);
		return 1;
	}
	struct pcap_pkthdr *h;
	const unsigned char *d;
	unsigned long long frames = 0, bytes = 0, sum = 0;
	while (pcap_next_ex(p, &h, &d) == 1) {
		if (copy) {
			const unsigned n = h->caplen < SLOT ? h->caplen : SLOT;
			unsigned char *slot = ring[frames % SLOTS];
			memcpy(slot, d, n);
			sum += slot[n / 2];
			struct record *c = &cq[frames % SLOTS];
			c->id = frames;
			c->len = n;
			c->slot = (uint32_t)(frames % SLOTS);
			c->ts = (uint64_t)h->ts.tv_sec * 1000000u + (uint64_t)h->ts.tv_usec;
		} else {
			sum += d[0];
		}
		frames++;
		bytes += h->caplen;
	}
	pcap_close(p);
	if (copy && frames)
		sum += cq[(frames - 1) % SLOTS].len;
	printf("%llu frames %llu bytes (%llu)\n", frames, bytes, sum);
	return 0;
}
