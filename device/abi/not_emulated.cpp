// Verbs the emulator does not model (dma-buf MRs, ECE): each answers EOPNOTSUPP the way its
// verb reports errors (device/README.md, "The library seen by a program").
#include "device/abi/declarations.hpp"
#include "device/abi_guard.hpp"

using namespace rdmasim::device;

extern "C" {

// ---------------------------------------------------------------------------
// QP extras.

// 0: no in-order data placement is promised.
int ibv_query_qp_data_in_order(struct ibv_qp*, enum ibv_wr_opcode, uint32_t) {
    return 0;
}
int ibv_query_ece(struct ibv_qp*, struct ibv_ece*) {
    return not_emulated;
}
int ibv_set_ece(struct ibv_qp*, struct ibv_ece*) {
    return not_emulated;
}

int ibv_resolve_eth_l2_from_gid(struct ibv_context*, struct ibv_ah_attr*, uint8_t[ETHERNET_LL_SIZE],
                                uint16_t*) {
    return not_emulated;
}

// ---------------------------------------------------------------------------
// Not emulated: dma-buf MRs (shared contexts and imported PDs,
// MRs and DMs are device/import.hpp's).

struct ibv_mr* ibv_reg_dmabuf_mr(struct ibv_pd*, uint64_t, size_t, uint64_t, int, int) {
    return fail<ibv_mr>(not_emulated);
}

} // extern "C"
