/* The DPDK surface Zebra uses: the headers bindgen reads, and C functions that make
 * DPDK's static inline functions and per-lcore variables callable from Rust. */
#ifndef ZEBRA_DPDK_ZD_H
#define ZEBRA_DPDK_ZD_H

#include <stdint.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

/* rte_errno of the calling thread. */
int zd_errno(void);

/* The next available port at or after `port`, RTE_MAX_ETHPORTS when there is none
 * (RTE_ETH_FOREACH_DEV's step). */
uint16_t zd_eth_next_port(uint16_t port);

uint16_t zd_eth_rx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n);
uint16_t zd_eth_tx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n);

/* NULL when the pool is empty. */
struct rte_mbuf *zd_pktmbuf_alloc(struct rte_mempool *pool);
/* Frees every segment of the chain. */
void zd_pktmbuf_free(struct rte_mbuf *m);

/* The first segment's data (rte_pktmbuf_mtod) and its length. */
uint8_t *zd_pktmbuf_data(struct rte_mbuf *m);
uint16_t zd_pktmbuf_data_len(const struct rte_mbuf *m);
/* The whole packet's length over all segments. */
uint32_t zd_pktmbuf_pkt_len(const struct rte_mbuf *m);
uint16_t zd_pktmbuf_nb_segs(const struct rte_mbuf *m);
/* Appends `len` bytes to the last segment; NULL when the tailroom is too small. */
uint8_t *zd_pktmbuf_append(struct rte_mbuf *m, uint16_t len);
/* Copies `len` bytes at `off` of a possibly segmented packet into `buf`, or returns a
 * pointer into the first segment when they are contiguous there; NULL when out of range. */
const uint8_t *zd_pktmbuf_read(const struct rte_mbuf *m, uint32_t off, uint32_t len, uint8_t *buf);

/* RTE_MAX_ETHPORTS of this build. */
uint16_t zd_max_ethports(void);
/* RTE_MBUF_DEFAULT_BUF_SIZE and RTE_PKTMBUF_HEADROOM of this build. */
uint16_t zd_mbuf_default_buf_size(void);
uint16_t zd_pktmbuf_headroom(void);

#endif
