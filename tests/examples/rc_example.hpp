// What the two RC examples (rc_transfer.cpp, rc_peer_gone.cpp) share: opening
// a device, the RESET -> INIT -> RTR -> RTS walk of an RC QP addressed by GID
// (RoCE v2), and a CQ-ex whose completions carry the device's completion
// timestamp (nanoseconds on rdmasim, whose hca_core_clock is 1 GHz).
// Written against <infiniband/verbs.h> alone: nothing here is emulator-only.
// Every failure throws VerbsError with the verb and the reason.
#pragma once

#include <infiniband/verbs.h>

#include <CLI/CLI.hpp>

#include <arpa/inet.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace rc_example {

struct VerbsError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// "what: strerror(err)".
[[noreturn]] inline void fail(const std::string& what, int err) {
    throw VerbsError(what + ": " + std::strerror(err));
}

// The device called `name`, or the first one when `name` is empty.
inline ibv_context* open_device(const std::string& name) {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr) fail("ibv_get_device_list", errno);
    ibv_device* dev = nullptr;
    for (int i = 0; i < n && dev == nullptr; ++i)
        if (name.empty() || name == ibv_get_device_name(list[i])) dev = list[i];
    if (dev == nullptr) {
        ibv_free_device_list(list);
        throw VerbsError(name.empty() ? std::string("no RDMA device found")
                                      : "no RDMA device named '" + name + "'");
    }
    ibv_context* ctx = ibv_open_device(dev);
    const int err = errno;
    ibv_free_device_list(list);
    if (ctx == nullptr) fail("ibv_open_device", err);
    return ctx;
}

// One end of an RC connection, as the peers exchange it.
struct Endpoint {
    std::uint32_t qpn = 0;
    std::uint32_t psn = 0; // 24 bits
    ibv_gid gid{};
};

// "QPN PSN GID" in hex, one line (GID: 32 hex digits, network order).
inline std::string endpoint_text(const Endpoint& e) {
    char buf[96];
    int at = std::snprintf(buf, sizeof buf, "%06x %06x ", e.qpn, e.psn);
    for (std::uint8_t b : e.gid.raw) at += std::snprintf(buf + at, sizeof buf - at, "%02x", b);
    return std::string(buf) + "\n";
}

inline Endpoint parse_endpoint(const std::string& line) {
    Endpoint e;
    char gid[33] = {};
    if (std::sscanf(line.c_str(), "%x %x %32s", &e.qpn, &e.psn, gid) != 3 || std::strlen(gid) != 32)
        throw VerbsError("malformed endpoint from the peer: '" + line + "'");
    for (int i = 0; i < 16; ++i) {
        unsigned v = 0;
        if (std::sscanf(gid + 2 * i, "%2x", &v) != 1)
            throw VerbsError("malformed GID from the peer: '" + std::string(gid) + "'");
        e.gid.raw[i] = static_cast<std::uint8_t>(v);
    }
    return e;
}

// The link-layer attributes an RC connection takes from its port.
struct PortInfo {
    ibv_mtu active_mtu = IBV_MTU_1024;
    ibv_gid gid{};
};

inline PortInfo query_port(ibv_context* ctx, std::uint8_t port, int gid_index) {
    ibv_port_attr pa{};
    if (int err = ibv_query_port(ctx, port, &pa)) fail("ibv_query_port", err);
    PortInfo p;
    p.active_mtu = pa.active_mtu;
    if (ibv_query_gid(ctx, port, gid_index, &p.gid) != 0)
        fail("ibv_query_gid(index " + std::to_string(gid_index) + ")", errno);
    return p;
}

inline std::uint32_t mtu_bytes(ibv_mtu mtu) { return 128u << mtu; }

// What the RTR and RTS transitions take besides the remote end.
struct RcPath {
    std::uint8_t port = 1;
    std::uint8_t sgid_index = 0;
    ibv_mtu mtu = IBV_MTU_1024;
    std::uint8_t min_rnr_timer = 12; // the RNR NAK timer code this QP asks its peer to wait
    std::uint8_t timeout = 14;       // local ACK timeout: 4.096 us * 2^timeout
    std::uint8_t retry_cnt = 7;
    std::uint8_t rnr_retry = 7;      // 7: retry for ever
};

inline void modify(ibv_qp* qp, ibv_qp_attr& a, int mask, const char* what) {
    if (int err = ibv_modify_qp(qp, &a, mask)) fail(std::string("ibv_modify_qp to ") + what, err);
}

// RESET -> INIT -> RTR -> RTS, connected to `remote`; the QP sends from `sq_psn`.
inline void connect_rc(ibv_qp* qp, const RcPath& p, const Endpoint& remote, std::uint32_t sq_psn,
                       int access = IBV_ACCESS_LOCAL_WRITE) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = p.port;
    a.qp_access_flags = access;
    modify(qp, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "INIT");

    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = p.mtu;
    a.dest_qp_num = remote.qpn;
    a.rq_psn = remote.psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = p.min_rnr_timer;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = remote.gid;
    a.ah_attr.grh.sgid_index = p.sgid_index;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = p.port;
    modify(qp, a,
           IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
           "RTR");

    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = p.timeout;
    a.retry_cnt = p.retry_cnt;
    a.rnr_retry = p.rnr_retry;
    a.sq_psn = sq_psn;
    a.max_rd_atomic = 1;
    modify(qp, a,
           IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
               IBV_QP_MAX_QP_RD_ATOMIC,
           "RTS");
}

inline ibv_qp* create_rc_qp(ibv_pd* pd, ibv_cq* cq, std::uint32_t send_wr, std::uint32_t recv_wr) {
    ibv_qp_init_attr ia{};
    ia.send_cq = cq;
    ia.recv_cq = cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = send_wr;
    ia.cap.max_recv_wr = recv_wr;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    ibv_qp* qp = ibv_create_qp(pd, &ia);
    if (qp == nullptr) fail("ibv_create_qp (RC)", errno);
    return qp;
}

// A CQ whose completions carry their byte count, immediate and the
// device's completion timestamp (ns: hca_core_clock is in kHz, 1,000,000).
inline ibv_cq_ex* create_timestamped_cq(ibv_context* ctx, int depth) {
    ibv_cq_init_attr_ex a{};
    a.cqe = static_cast<std::uint32_t>(depth);
    a.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    ibv_cq_ex* cq = ibv_create_cq_ex(ctx, &a);
    if (cq == nullptr) fail("ibv_create_cq_ex (completion timestamps)", errno);
    return cq;
}

struct Completion {
    std::uint64_t wr_id = 0;
    ibv_wc_status status = IBV_WC_SUCCESS;
    ibv_wc_opcode opcode = IBV_WC_SEND;
    std::uint32_t byte_len = 0;
    bool with_imm = false;
    std::uint32_t imm = 0;   // host order
    std::uint64_t ts_ns = 0; // the completion timestamp
};

// Up to `max` completions into `out`; returns how many (0: none now).
inline int poll(ibv_cq_ex* cq, Completion* out, int max) {
    ibv_poll_cq_attr attr{};
    int err = ibv_start_poll(cq, &attr);
    if (err == ENOENT) return 0;
    if (err != 0) fail("ibv_start_poll", err);
    int n = 0;
    for (;;) {
        Completion& c = out[n++];
        c.wr_id = cq->wr_id;
        c.status = cq->status;
        c.ts_ns = ibv_wc_read_completion_ts(cq);
        if (c.status == IBV_WC_SUCCESS) {
            c.opcode = ibv_wc_read_opcode(cq);
            c.byte_len = ibv_wc_read_byte_len(cq);
            c.with_imm = (ibv_wc_read_wc_flags(cq) & IBV_WC_WITH_IMM) != 0;
            c.imm = c.with_imm ? ntohl(ibv_wc_read_imm_data(cq)) : 0;
        }
        if (n == max) break;
        err = ibv_next_poll(cq);
        if (err == ENOENT) break;
        if (err != 0) {
            ibv_end_poll(cq);
            fail("ibv_next_poll", err);
        }
    }
    ibv_end_poll(cq);
    return n;
}

// The status's enumerator name (the completion statuses these examples expect),
// else libibverbs' description.
inline std::string status_name(ibv_wc_status s) {
    switch (s) {
    case IBV_WC_SUCCESS: return "IBV_WC_SUCCESS";
    case IBV_WC_RETRY_EXC_ERR: return "IBV_WC_RETRY_EXC_ERR";
    case IBV_WC_RNR_RETRY_EXC_ERR: return "IBV_WC_RNR_RETRY_EXC_ERR";
    case IBV_WC_WR_FLUSH_ERR: return "IBV_WC_WR_FLUSH_ERR";
    default: return std::string(ibv_wc_status_str(s)) + " (" + std::to_string(int(s)) + ")";
    }
}

// A program's main: parses the command line into what `app` binds, then
// runs `run`. Exit status 2 on a bad command line, 1 (the error printed as
// "NAME: what") when `run` throws, else what `run` returns.
template <class Run> int parse_and_run(CLI::App& app, int argc, char** argv, const char* name, Run run) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    try {
        return run();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", name, e.what());
        return 1;
    }
}

} // namespace rc_example
