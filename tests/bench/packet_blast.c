/*
 * The sender of the live-interface benchmark: N Ethernet frames of SIZE bytes
 * (IPv4/UDP, the source port counting up) out of INTERFACE as fast as
 * sendmmsg(2) on an AF_PACKET socket takes them, PACKET_QDISC_BYPASS where
 * allowed. A frame the kernel refuses (ENOBUFS) is retried.
 * usage: packet_blast INTERFACE FRAMES SIZE
 * prints: sent FRAMES in SECONDS s
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define BATCH 64

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s INTERFACE FRAMES SIZE\n", argv[0]);
		return 2;
	}
	const unsigned ifindex = if_nametoindex(argv[1]);
	const unsigned long long total = strtoull(argv[2], NULL, 10);
	const unsigned size = (unsigned)atoi(argv[3]);
	if (ifindex == 0 || size < 60 || size > 1514) {
		fprintf(stderr, "packet_blast: bad interface %s or size %u (60..1514)\n", argv[1], size);
		return 2;
	}
	int fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0) {
		perror("packet_blast: socket");
		return 1;
	}
	int one = 1;
	(void)setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one);
	struct sockaddr_ll addr = {.sll_family = AF_PACKET, .sll_ifindex = (int)ifindex};
	if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
		perror("packet_blast: bind");
		return 1;
	}
	static unsigned char frames[BATCH][1514];
	struct iovec iov[BATCH];
	struct mmsghdr msgs[BATCH];
	static const unsigned char head[] = {
		0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00,
		0x45, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00,
		10, 0, 0, 1, 10, 0, 0, 2};
	for (int i = 0; i < BATCH; ++i) {
		memcpy(frames[i], head, sizeof head);
		frames[i][16] = (unsigned char)((size - 14) >> 8);
		frames[i][17] = (unsigned char)(size - 14);
		frames[i][36] = 0x12; /* dport 4791 after the varying sport at 34..35 */
		frames[i][37] = 0xb7;
		iov[i].iov_base = frames[i];
		iov[i].iov_len = size;
		memset(&msgs[i], 0, sizeof msgs[i]);
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	unsigned long long sent = 0;
	const double t0 = now();
	while (sent < total) {
		unsigned n = total - sent < BATCH ? (unsigned)(total - sent) : BATCH;
		for (unsigned i = 0; i < n; ++i) {
			frames[i][34] = (unsigned char)((sent + i) >> 8);
			frames[i][35] = (unsigned char)(sent + i);
		}
		int r = sendmmsg(fd, msgs, n, 0);
		if (r < 0) {
			if (errno == ENOBUFS || errno == EAGAIN) {
				sched_yield();
				continue;
			}
			perror("packet_blast: sendmmsg");
			return 1;
		}
		sent += (unsigned)r;
	}
	printf("sent %llu in %.6f s\n", sent, now() - t0);
	return 0;
}
