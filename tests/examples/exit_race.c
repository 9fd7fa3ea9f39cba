/*
 * Two threads that call exit() at the same moment, after the program opened
 * a device: glibc then runs exit's handlers in both threads at once, and the
 * drop-in library must still write --stats and --report once, whole, and not
 * crash (sim/dropin.cpp). Test: tests/tools/exit_race_test.py.
 */
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_barrier_t start;

static void *exit_too(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	exit(0);
}

int main(void)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list || n < 1) {
		perror("ibv_get_device_list");
		return 2;
	}
	struct ibv_context *ctx = ibv_open_device(list[0]);
	if (!ctx) {
		perror("ibv_open_device");
		return 2;
	}
	pthread_t t;
	pthread_barrier_init(&start, NULL, 2);
	if (pthread_create(&t, NULL, exit_too, NULL) != 0) {
		perror("pthread_create");
		return 2;
	}
	pthread_barrier_wait(&start);
	exit(0);
}
