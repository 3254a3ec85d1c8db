/*
 * cep_fence.h — the fence page shared by cudaepd and libcudaep-client: how
 * a client learns, without a socket round trip, that a run submitted with
 * a fence sequence number has finished.
 *
 * The daemon creates one page per connection (a sealed memfd of
 * CEP_FENCE_SLOTS slots), registers it with its backend (pinned and mapped
 * for the GPU) and passes its fd with the HelloReply (fence_slots says how
 * many slots). The client maps it read-write. A Run carrying fence_seq S
 * (S > 0, larger than any earlier one of the connection) uses slot
 * S % CEP_FENCE_SLOTS:
 *
 *  1. Before queuing anything the daemon stores status = 0 and
 *     request_id; the RunReply follows on the socket.
 *  2. When the run's outputs are in their regions, seq becomes S: written
 *     by the GPU itself from the run's stream (cuStreamWriteValue64) for a
 *     run that cannot fail any more; written by the daemon from the
 *     stream's host function, after status, for a run that may have failed
 *     on the device (a bad index) or while being queued. So once seq >= S,
 *     status is the run's result: 0, or a negative CEP_E* code whose
 *     message follows on the socket as a Response with the Run's request
 *     id (body run_done).
 *  3. Every signal then bumps futex and wakes its waiters (FUTEX_WAKE on a
 *     shared futex: the word lives in memory shared between processes).
 *
 * A waiter spins on seq, then loads futex, re-checks seq and FUTEX_WAITs
 * on the futex value it loaded: any signal after that load changes the
 * word, so a wake cannot be missed. A slot is reused by the run S +
 * CEP_FENCE_SLOTS, which the client may submit only once it has seen S
 * complete; the daemon accepts at most 2 * CEP_FENCE_SLOTS runs of a
 * connection in flight.
 *
 * The daemon only writes the page; it never trusts what it could read
 * back, so a client scribbling on it confuses no one but itself.
 */
#ifndef CEP_PROTO_FENCE_H
#define CEP_PROTO_FENCE_H

#include <stdatomic.h>
#include <stdint.h>

#define CEP_FENCE_SLOTS 64        /* slots of a fence page */
#define CEP_FENCE_SLOT_BYTES 64   /* one cache line each */

struct cep_fence_slot {
	_Atomic uint64_t seq;         /* the last fence sequence number
	                               * signalled through this slot */
	_Atomic int32_t status;       /* that run's result: 0 or a CEP_E* code */
	_Atomic uint32_t futex;       /* bumped by every signal; FUTEX_WAIT here */
	_Atomic uint64_t request_id;  /* the Run request's id of the run
	                               * submitted last through this slot */
	uint8_t reserved[40];         /* zero */
};

_Static_assert(sizeof(struct cep_fence_slot) == CEP_FENCE_SLOT_BYTES,
	       "a fence slot is one cache line");

/* The slot of fence sequence number seq. */
static inline unsigned cep_fence_slot_of(uint64_t seq)
{
	return (unsigned)(seq % CEP_FENCE_SLOTS);
}

#endif
