/* rdma_cm's events in order, one line each, for tests/clients/rdmacm_test.py.
 *
 *   cm_events server PORT accept|reject   listen on PORT; accept (with an RC
 *                                         QP) or reject with private data "no"
 *   cm_events client IP PORT [TIMEOUT_MS [connect|disconnect MS]]
 *                                         connect with an RC QP, then
 *                                         disconnect once established;
 *                                         with `connect MS` it waits MS
 *                                         before connecting, with
 *                                         `disconnect MS` before disconnecting
 *                                         (a test stops the peer meanwhile)
 *
 * Each event prints as "EVENT_NAME status=N" (REJECTED adds the first bytes
 * of its private data as text). The server ends after its connection's
 * TIMEWAIT_EXIT, or after a reject; the client after TIMEWAIT_EXIT or any
 * error event. Exit 0 when the program ran its course (the test judges the
 * events), 1 when a call failed.
 */
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *stall_at = ""; /* "connect" or "disconnect" */
static int stall_ms;

static void stall(const char *before)
{
	if (strcmp(stall_at, before) == 0)
		usleep(stall_ms * 1000);
}

static int make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr;

	memset(&attr, 0, sizeof attr);
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.qp_type = IBV_QPT_RC;
	if (rdma_create_qp(id, NULL, &attr)) {
		perror("rdma_create_qp");
		return -1;
	}
	return 0;
}

static void print_event(const struct rdma_cm_event *e)
{
	printf("%s status=%d", rdma_event_str(e->event), e->status);
	if (e->event == RDMA_CM_EVENT_REJECTED && e->param.conn.private_data_len >= 2)
		printf(" data=%.2s", (const char *)e->param.conn.private_data);
	printf("\n");
	fflush(stdout);
}

/* Handles one event of the server; 1 when it is done. */
static int server_event(struct rdma_cm_event *e, int reject)
{
	struct rdma_cm_id *id = e->id;
	struct rdma_conn_param param;

	switch (e->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (reject) {
			rdma_reject(id, "no", 2);
			return 1;
		}
		memset(&param, 0, sizeof param);
		param.responder_resources = param.initiator_depth = 1;
		if (make_qp(id) || rdma_accept(id, &param)) {
			perror("rdma_accept");
			exit(1);
		}
		return 0;
	case RDMA_CM_EVENT_DISCONNECTED:
		rdma_disconnect(id);
		return 0;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return 1;
	default:
		return e->event != RDMA_CM_EVENT_ESTABLISHED;
	}
}

/* Handles one event of the client; 1 when it is done. */
static int client_event(struct rdma_cm_event *e)
{
	struct rdma_cm_id *id = e->id;
	struct rdma_conn_param param;

	switch (e->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		return rdma_resolve_route(id, 2000) ? (perror("rdma_resolve_route"), exit(1), 1) : 0;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		memset(&param, 0, sizeof param);
		param.responder_resources = param.initiator_depth = 1;
		param.retry_count = param.rnr_retry_count = 7;
		stall("connect");
		if (make_qp(id) || rdma_connect(id, &param)) {
			perror("rdma_connect");
			exit(1);
		}
		return 0;
	case RDMA_CM_EVENT_ESTABLISHED:
		stall("disconnect");
		return rdma_disconnect(id) ? (perror("rdma_disconnect"), exit(1), 1) : 0;
	case RDMA_CM_EVENT_DISCONNECTED:
		return 0;
	default: /* TIMEWAIT_EXIT, or an error */
		return 1;
	}
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct sockaddr_in sin;
	int server, reject = 0, done = 0;

	if (argc < 4 || !ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		fprintf(stderr, "usage: cm_events server PORT accept|reject | client IP PORT [MS]\n");
		return 1;
	}
	server = strcmp(argv[1], "server") == 0;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	if (server) {
		sin.sin_port = htons(atoi(argv[2]));
		reject = strcmp(argv[3], "reject") == 0;
		if (rdma_bind_addr(id, (struct sockaddr *)&sin) || rdma_listen(id, 4)) {
			perror("listen");
			return 1;
		}
	} else {
		if (argc > 6) {
			stall_at = argv[5];
			stall_ms = atoi(argv[6]);
		}
		sin.sin_port = htons(atoi(argv[3]));
		inet_pton(AF_INET, argv[2], &sin.sin_addr);
		if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin,
				      argc > 4 ? atoi(argv[4]) : 2000)) {
			perror("rdma_resolve_addr");
			return 1;
		}
	}
	while (!done) {
		struct rdma_cm_event *e;

		if (rdma_get_cm_event(ch, &e)) {
			perror("rdma_get_cm_event");
			return 1;
		}
		print_event(e);
		done = server ? server_event(e, reject) : client_event(e);
		rdma_ack_cm_event(e);
	}
	return 0;
}
