#include "zd.h"

int zd_errno(void) { return rte_errno; }

uint16_t zd_eth_next_port(uint16_t port) {
  uint64_t next = rte_eth_find_next_owned_by(port, RTE_ETH_DEV_NO_OWNER);
  return next >= RTE_MAX_ETHPORTS ? RTE_MAX_ETHPORTS : (uint16_t)next;
}

uint16_t zd_eth_rx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n) {
  return rte_eth_rx_burst(port, queue, pkts, n);
}

uint16_t zd_eth_tx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n) {
  return rte_eth_tx_burst(port, queue, pkts, n);
}

struct rte_mbuf *zd_pktmbuf_alloc(struct rte_mempool *pool) { return rte_pktmbuf_alloc(pool); }

void zd_pktmbuf_free(struct rte_mbuf *m) { rte_pktmbuf_free(m); }

uint8_t *zd_pktmbuf_data(struct rte_mbuf *m) { return rte_pktmbuf_mtod(m, uint8_t *); }

uint16_t zd_pktmbuf_data_len(const struct rte_mbuf *m) { return rte_pktmbuf_data_len(m); }

uint32_t zd_pktmbuf_pkt_len(const struct rte_mbuf *m) { return rte_pktmbuf_pkt_len(m); }

uint16_t zd_pktmbuf_nb_segs(const struct rte_mbuf *m) { return m->nb_segs; }

uint8_t *zd_pktmbuf_append(struct rte_mbuf *m, uint16_t len) {
  return (uint8_t *)rte_pktmbuf_append(m, len);
}

const uint8_t *zd_pktmbuf_read(const struct rte_mbuf *m, uint32_t off, uint32_t len, uint8_t *buf) {
  return (const uint8_t *)rte_pktmbuf_read(m, off, len, buf);
}

uint16_t zd_max_ethports(void) { return RTE_MAX_ETHPORTS; }

uint16_t zd_mbuf_default_buf_size(void) { return RTE_MBUF_DEFAULT_BUF_SIZE; }

uint16_t zd_pktmbuf_headroom(void) { return RTE_PKTMBUF_HEADROOM; }
