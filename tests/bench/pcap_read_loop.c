/*
 * The baseline for replay benchmarks: a plain libpcap read loop that copies
 * every frame once into a 2 KiB buffer, as the least any receiver must do.
 * usage: pcap_read_loop FILE   (prints frames and bytes)
 */
#include <pcap/pcap.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	char err[PCAP_ERRBUF_SIZE];
	static unsigned char buf[2048];
	if (argc != 2) {
		fprintf(stderr, "usage: %s FILE\n", argv[0]);
		return 2;
	}
	pcap_t *p = pcap_open_offline(argv[1], err);
	if (!p) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	struct pcap_pkthdr *h;
	const unsigned char *d;
	unsigned long long frames = 0, bytes = 0, sum = 0;
	while (pcap_next_ex(p, &h, &d) == 1) {
		unsigned n = h->caplen < sizeof(buf) ? h->caplen : sizeof(buf);
		memcpy(buf, d, n);
		sum += buf[n / 2];
		frames++;
		bytes += h->caplen;
	}
	pcap_close(p);
	printf("%llu frames %llu bytes (%llu)\n", frames, bytes, sum);
	return 0;
}
