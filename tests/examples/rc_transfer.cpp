// rc_transfer: N messages over one RC QP, every one checked on arrival. The
// client sends, the server receives; they meet over TCP as ibv_rc_pingpong's
// two halves do (the server listens, the client connects; each sends its
// QPN, PSN and GID, GID index 0 by default: RoCE v2's IPv4-mapped GID).
//
// Message i is a SEND with immediate i, `size(i)` bytes long (every size
// from 1 to --size, 3 * MTU by default, once in each --size messages) of a
// pattern derived from i. --depth sends are in flight. The server checks that each message is the next one (its
// immediate), of its length and pattern: every message delivered exactly
// once and in order. After the last one it waits for the client's "done"
// (so that it is still there to acknowledge a retransmission) and then
// checks that nothing more arrived.
//
// Run it on two emulated hosts joined by a virtual wire, with faults:
//   rdmasim run --wire ptp://$DIR/sock --faults 'seed=1; drop:p=0.02' -- rc_transfer
//   rdmasim run --wire ptp://$DIR/sock --faults 'seed=2; drop:p=0.02' -- rc_transfer 127.0.0.1
// Prints "ready: ..." once listening (server) and once connected, then
//        (server) "received N messages, B bytes, in order, each once, verified ..."
//        (client) "sent N messages, B bytes, all acknowledged ..."
// Exit status: 0 when every message went and arrived as above; 1 on an
// error (a verb, the side channel, a failed completion, a wrong message);
// 2 for a bad command line.
#include <CLI/CLI.hpp>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "rc_example.hpp"

using namespace rc_example;

namespace {

struct Options {
    std::string host; // empty: the server
    std::uint16_t port = 18515;
    std::string ib_dev;
    int gid_index = 0;
    std::uint32_t count = 10000;
    std::uint32_t size = 0; // largest message; 0: three times the path MTU
    std::uint32_t depth = 16; // sends in flight; the server posts 4 * depth receives
    int timeout = 14;
    int retry_cnt = 7;
    int rnr_retry = 7;
    int min_rnr_timer = 12;
    std::int64_t psn = -1; // the first PSN this end sends with; -1: random
    int idle_ms = 30000;   // give up after this long without a completion
};

// ---- the messages --------------------------------------------------------

// Sizes cycle over 1..max: 7919 is prime, so i * 7919 % max visits every
// residue once per `max` messages (1, the MTU, its multiples, and the rest).
std::uint32_t message_size(std::uint32_t seq, std::uint32_t max) {
    return 1 + static_cast<std::uint32_t>((std::uint64_t{seq} * 7919) % max);
}

std::uint8_t pattern_byte(std::uint32_t seq, std::uint32_t k) {
    std::uint64_t x = (std::uint64_t{seq} << 32 | k) * 0x9E3779B97F4A7C15ull;
    return static_cast<std::uint8_t>(x >> 56);
}

void fill(std::uint8_t* p, std::uint32_t seq, std::uint32_t len) {
    for (std::uint32_t k = 0; k < len; ++k) p[k] = pattern_byte(seq, k);
}

// The first byte that is not message seq's, or len when all are.
std::uint32_t first_mismatch(const std::uint8_t* p, std::uint32_t seq, std::uint32_t len) {
    for (std::uint32_t k = 0; k < len; ++k)
        if (p[k] != pattern_byte(seq, k)) return k;
    return len;
}

// ---- the TCP side channel ------------------------------------------------

struct Channel {
    int fd = -1;
    std::string pending;
    ~Channel() {
        if (fd >= 0) ::close(fd);
    }

    void send_line(const std::string& s) {
        std::size_t at = 0;
        while (at < s.size()) {
            ssize_t n = ::send(fd, s.data() + at, s.size() - at, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) fail("side channel: send", errno);
            at += static_cast<std::size_t>(n);
        }
    }

    // One line without its newline; throws at EOF or after `timeout_ms`.
    std::string read_line(int timeout_ms) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        for (;;) {
            if (auto nl = pending.find('\n'); nl != std::string::npos) {
                std::string line = pending.substr(0, nl);
                pending.erase(0, nl + 1);
                return line;
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                end - std::chrono::steady_clock::now());
            if (left.count() <= 0) throw VerbsError("side channel: no line from the peer in time");
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR)
                fail("side channel: poll", errno);
            char buf[256];
            ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n == 0) throw VerbsError("side channel: the peer closed the connection");
            if (n < 0 && errno != EAGAIN && errno != EINTR) fail("side channel: recv", errno);
            if (n > 0) pending.append(buf, static_cast<std::size_t>(n));
        }
    }
};

addrinfo* resolve(const char* host, std::uint16_t port, bool passive) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    addrinfo* res = nullptr;
    const std::string service = std::to_string(port);
    if (int err = ::getaddrinfo(host, service.c_str(), &hints, &res))
        throw VerbsError(std::string("side channel: ") + (host ? host : "*") + ":" + service + ": " +
                         ::gai_strerror(err));
    return res;
}

// The server: listens on `port`, takes one connection.
void accept_peer(Channel& ch, std::uint16_t port) {
    addrinfo* ai = resolve(nullptr, port, true);
    int ls = ::socket(ai->ai_family, ai->ai_socktype, 0);
    if (ls < 0) fail("side channel: socket", errno);
    int one = 1;
    ::setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(ls, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(ls, 1) != 0) {
        const int err = errno;
        ::freeaddrinfo(ai);
        ::close(ls);
        fail("side channel: listen on port " + std::to_string(port), err);
    }
    ::freeaddrinfo(ai);
    std::printf("ready: server listening on TCP port %u\n", port);
    std::fflush(stdout);
    ch.fd = ::accept(ls, nullptr, nullptr);
    const int err = errno;
    ::close(ls);
    if (ch.fd < 0) fail("side channel: accept", err);
}

// The client: connects to host:port, retrying for 10 s while nobody listens.
void connect_peer(Channel& ch, const std::string& host, std::uint16_t port) {
    addrinfo* ai = resolve(host.c_str(), port, false);
    int err = 0;
    for (int attempt = 0; attempt < 100; ++attempt) {
        ch.fd = ::socket(ai->ai_family, ai->ai_socktype, 0);
        if (ch.fd < 0) break;
        if (::connect(ch.fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
        err = errno;
        ::close(ch.fd);
        ch.fd = -1;
        if (err != ECONNREFUSED) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::freeaddrinfo(ai);
    if (ch.fd < 0) fail("side channel: connect to " + host + ":" + std::to_string(port), err);
}

// ---- the transfer ---------------------------------------------------------

struct Resources {
    ibv_context* ctx = nullptr;
    ibv_pd* pd = nullptr;
    ibv_cq_ex* cq = nullptr;
    ibv_qp* qp = nullptr;
    ibv_mr* mr = nullptr;
    std::vector<std::uint8_t> buf;

    ~Resources() { // reverse order of set-up
        if (qp) ibv_destroy_qp(qp);
        if (mr) ibv_dereg_mr(mr);
        if (cq) ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
        if (pd) ibv_dealloc_pd(pd);
        if (ctx) ibv_close_device(ctx);
    }
};

// Polls until at least one completion came; throws after idle_ms without one.
int wait_completions(const Options& o, ibv_cq_ex* cq, Completion* out, int max,
                     std::chrono::steady_clock::time_point& last) {
    for (;;) {
        if (int n = poll(cq, out, max)) {
            last = std::chrono::steady_clock::now();
            return n;
        }
        if (std::chrono::steady_clock::now() - last > std::chrono::milliseconds(o.idle_ms))
            throw VerbsError("no completion for " + std::to_string(o.idle_ms) + " ms");
    }
}

void post_recv(Resources& r, std::uint32_t slot, std::uint32_t slot_bytes) {
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(r.buf.data() + std::size_t{slot} * slot_bytes),
                slot_bytes, r.mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (int err = ibv_post_recv(r.qp, &wr, &bad)) fail("ibv_post_recv", err);
}

void post_send(Resources& r, std::uint32_t seq, std::uint32_t slot, std::uint32_t slot_bytes,
               std::uint32_t max) {
    std::uint8_t* p = r.buf.data() + std::size_t{slot} * slot_bytes;
    const std::uint32_t len = message_size(seq, max);
    fill(p, seq, len);
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(p), len, r.mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = seq;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(seq);
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    if (int err = ibv_post_send(r.qp, &wr, &bad))
        fail("ibv_post_send (message " + std::to_string(seq) + ")", err);
}

// The client: keeps `depth` sends in flight; every one must succeed, in order.
int run_sender(const Options& o, Resources& r, std::uint32_t max, Channel& ch) {
    std::vector<Completion> wc(o.depth);
    std::uint32_t posted = 0, done = 0;
    std::uint64_t bytes = 0, first_ts = 0, last_ts = 0;
    auto last = std::chrono::steady_clock::now();
    const auto start = last;
    while (done < o.count) {
        while (posted < o.count && posted - done < o.depth) {
            post_send(r, posted, posted % o.depth, max, max);
            ++posted;
        }
        const int n = wait_completions(o, r.cq, wc.data(), static_cast<int>(wc.size()), last);
        for (int i = 0; i < n; ++i) {
            const Completion& c = wc[i];
            if (c.status != IBV_WC_SUCCESS) {
                std::fprintf(stderr, "rc_transfer: message %llu completed with %s\n",
                             static_cast<unsigned long long>(c.wr_id), status_name(c.status).c_str());
                return 1;
            }
            if (c.wr_id != done || c.opcode != IBV_WC_SEND) {
                std::fprintf(stderr,
                             "rc_transfer: send completion for message %llu (opcode %d), expected %u\n",
                             static_cast<unsigned long long>(c.wr_id), c.opcode, done);
                return 1;
            }
            if (done == 0) first_ts = c.ts_ns;
            last_ts = c.ts_ns;
            bytes += message_size(done, max);
            ++done;
        }
    }
    ch.send_line("done\n");
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("sent %u messages, %llu bytes, all acknowledged, in %.0f ms "
                "(completion timestamps: %.3f ms from the first to the last)\n",
                done, static_cast<unsigned long long>(bytes), ms, (last_ts - first_ts) / 1e6);
    return 0;
}

// The server: every message must be the next one, whole and right.
int run_receiver(const Options& o, Resources& r, std::uint32_t max, std::uint32_t slots,
                 Channel& ch) {
    std::vector<Completion> wc(slots);
    std::uint32_t next = 0;
    std::uint64_t bytes = 0, first_ts = 0, last_ts = 0;
    auto last = std::chrono::steady_clock::now();
    const auto start = last;
    auto check = [&](const Completion& c) -> bool {
        if (c.status != IBV_WC_SUCCESS) {
            std::fprintf(stderr, "rc_transfer: receive completed with %s (expecting message %u)\n",
                         status_name(c.status).c_str(), next);
            return false;
        }
        if (next >= o.count) {
            std::fprintf(stderr, "rc_transfer: message %u arrived after all %u (a duplicate)\n",
                         c.imm, o.count);
            return false;
        }
        const std::uint32_t len = message_size(next, max);
        const std::uint8_t* p = r.buf.data() + c.wr_id * max;
        if (c.opcode != IBV_WC_RECV || !c.with_imm || c.imm != next) {
            std::fprintf(stderr,
                         "rc_transfer: expected message %u, got opcode %d with%s immediate %u "
                         "(out of order, lost or duplicated)\n",
                         next, c.opcode, c.with_imm ? "" : "out", c.imm);
            return false;
        }
        if (c.byte_len != len) {
            std::fprintf(stderr, "rc_transfer: message %u is %u bytes, expected %u\n", next,
                         c.byte_len, len);
            return false;
        }
        if (std::uint32_t k = first_mismatch(p, next, len); k != len) {
            std::fprintf(stderr, "rc_transfer: message %u differs at byte %u of %u\n", next, k, len);
            return false;
        }
        return true;
    };
    while (next < o.count) {
        const int n = wait_completions(o, r.cq, wc.data(), static_cast<int>(wc.size()), last);
        for (int i = 0; i < n; ++i) {
            if (!check(wc[i])) return 1;
            if (next == 0) first_ts = wc[i].ts_ns;
            last_ts = wc[i].ts_ns;
            bytes += wc[i].byte_len;
            ++next;
            post_recv(r, static_cast<std::uint32_t>(wc[i].wr_id), max);
        }
    }
    // The sender may still resend the tail (an ACK lost): stay until it is done.
    const std::string line = ch.read_line(o.idle_ms);
    if (line != "done") throw VerbsError("side channel: expected 'done', got '" + line + "'");
    if (int n = poll(r.cq, wc.data(), static_cast<int>(wc.size())); n > 0) {
        if (!check(wc[0])) return 1;
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("received %u messages, %llu bytes, in order, each once, verified, in %.0f ms "
                "(completion timestamps: %.3f ms from the first to the last)\n",
                next, static_cast<unsigned long long>(bytes), ms, (last_ts - first_ts) / 1e6);
    return 0;
}

int run(const Options& o) {
    Resources r;
    r.ctx = open_device(o.ib_dev);
    const PortInfo port = query_port(r.ctx, 1, o.gid_index);
    const std::uint32_t max = o.size ? o.size : 3 * mtu_bytes(port.active_mtu);
    const bool server = o.host.empty();
    // The server keeps 4 * depth receives posted; the client has depth sends in flight.
    const std::uint32_t slots = server ? 4 * o.depth : o.depth;

    r.pd = ibv_alloc_pd(r.ctx);
    if (r.pd == nullptr) fail("ibv_alloc_pd", errno);
    r.cq = create_timestamped_cq(r.ctx, static_cast<int>(slots));
    r.qp = create_rc_qp(r.pd, ibv_cq_ex_to_cq(r.cq), o.depth, server ? slots : 1);
    r.buf.assign(std::size_t{slots} * max, 0);
    r.mr = ibv_reg_mr(r.pd, r.buf.data(), r.buf.size(), IBV_ACCESS_LOCAL_WRITE);
    if (r.mr == nullptr) fail("ibv_reg_mr", errno);

    RcPath path;
    path.sgid_index = static_cast<std::uint8_t>(o.gid_index);
    path.mtu = port.active_mtu;
    path.timeout = static_cast<std::uint8_t>(o.timeout);
    path.retry_cnt = static_cast<std::uint8_t>(o.retry_cnt);
    path.rnr_retry = static_cast<std::uint8_t>(o.rnr_retry);
    path.min_rnr_timer = static_cast<std::uint8_t>(o.min_rnr_timer);

    Endpoint self;
    self.qpn = r.qp->qp_num;
    self.psn = o.psn >= 0 ? static_cast<std::uint32_t>(o.psn)
                          : std::random_device{}() & 0xffffff;
    self.gid = port.gid;

    Channel ch;
    Endpoint remote;
    if (server) {
        accept_peer(ch, o.port);
        remote = parse_endpoint(ch.read_line(o.idle_ms));
        connect_rc(r.qp, path, remote, self.psn);
        // Receives go in once the RQ is open (INIT, as on mlx5), before the
        // client hears from us.
        for (std::uint32_t s = 0; s < slots; ++s) post_recv(r, s, max);
        ch.send_line(endpoint_text(self));
    } else {
        connect_peer(ch, o.host, o.port);
        ch.send_line(endpoint_text(self));
        remote = parse_endpoint(ch.read_line(o.idle_ms));
        connect_rc(r.qp, path, remote, self.psn);
    }
    std::printf("ready: %s QPN 0x%06x PSN 0x%06x, peer QPN 0x%06x PSN 0x%06x; %u messages of 1..%u "
                "bytes (MTU %u)\n",
                server ? "server" : "client", self.qpn, self.psn, remote.qpn, remote.psn, o.count,
                max, mtu_bytes(port.active_mtu));
    std::fflush(stdout);
    return server ? run_receiver(o, r, max, slots, ch) : run_sender(o, r, max, ch);
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"rc_transfer: N verified messages over one RC QP (server: no HOST; client: HOST)"};
    Options o;
    app.add_option("host", o.host, "the server to connect to (the client sends)");
    app.add_option("-p,--port", o.port, "TCP port of the side channel")->check(CLI::Range(1, 65535));
    app.add_option("-d,--ib-dev", o.ib_dev, "RDMA device (default: the first)");
    app.add_option("-g,--gid-idx", o.gid_index, "GID index")->check(CLI::Range(0, 255));
    app.add_option("-n,--count", o.count, "messages")->check(CLI::Range(1u, 1u << 30));
    app.add_option("-s,--size", o.size, "largest message; sizes cycle over 1..SIZE (0: 3 * MTU)")
        ->check(CLI::Range(0u, 1u << 24));
    app.add_option("--depth", o.depth, "sends in flight (the server posts 4 * DEPTH receives)")
        ->check(CLI::Range(1, 4096));
    app.add_option("--timeout", o.timeout, "local ACK timeout: 4.096 us * 2^TIMEOUT (0: none)")
        ->check(CLI::Range(0, 31));
    app.add_option("--retry-cnt", o.retry_cnt, "retries after a timeout")->check(CLI::Range(0, 7));
    app.add_option("--rnr-retry", o.rnr_retry, "retries after an RNR NAK (7: for ever)")
        ->check(CLI::Range(0, 7));
    app.add_option("--min-rnr-timer", o.min_rnr_timer, "RNR NAK timer code this end asks for")
        ->check(CLI::Range(0, 31));
    app.add_option("--psn", o.psn, "first PSN this end sends (default: random)")
        ->check(CLI::Range(0, 0xffffff));
    app.add_option("--idle-ms", o.idle_ms, "give up after this long without progress")
        ->check(CLI::PositiveNumber);
    return parse_and_run(app, argc, argv, "rc_transfer", [&] { return run(o); });
}
