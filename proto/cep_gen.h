/*
 * cep_gen.h — the token ring of a generation, shared by cudaepd and
 * libcudaep-client: how the daemon hands a client the tokens it generates
 * without a socket round trip per token.
 *
 * The client makes a region for it and lays out, from the slice's start
 * (8-byte aligned): a struct cep_gen_ring (CEP_GEN_HEADER bytes), the
 * prompt's n_prompt int64 tokens, then slots int64 token slots. Token i
 * (from 0) goes into slot i % slots. The client zeroes the header and
 * writes the prompt before its Generate request.
 *
 *  - The daemon writes token i, then stores written = i + 1 (release).
 *    Every signal_every tokens, and at the end, it bumps events and wakes
 *    its waiters (FUTEX_WAKE on a shared futex).
 *  - At the end it writes reason's details (error, message, the times)
 *    and then state (release): nonzero means ended, and is the
 *    cep_gen_reason. written is final by then.
 *  - The client stores read (release) as it consumes tokens. The daemon
 *    writes token i only while i - read < slots, and waits for the client
 *    otherwise, for at most CEP_GEN_STALL_S seconds, after which the
 *    generation ends with CEP_ETIMEDOUT.
 *  - The client stores cancel = 1 to stop it: the daemon stops after the
 *    step it is on, and the end's reason is CEP_GEN_CANCELLED.
 *
 * A waiter loads events, re-checks written and state, and FUTEX_WAITs on
 * the events value it loaded, so a wake cannot be missed. The daemon reads
 * only cancel and read back, and trusts neither beyond that: a scribbling
 * client stalls or garbles its own generation and no one else's.
 */
#ifndef CEP_PROTO_GEN_H
#define CEP_PROTO_GEN_H

#include <stdatomic.h>
#include <stdint.h>

#define CEP_GEN_HEADER 512    /* bytes of the header, before the prompt */
#define CEP_GEN_STALL_S 60    /* seconds the daemon waits on a full ring */
#define CEP_GEN_MSG 320       /* bytes of the end's message */

struct cep_gen_ring {
	_Atomic uint32_t events;   /* the futex word: bumped at each signal */
	_Atomic uint32_t state;    /* 0 while running; then a cep_gen_reason */
	_Atomic uint64_t written;  /* tokens written (daemon) */
	_Atomic uint64_t read;     /* tokens consumed (client) */
	_Atomic uint32_t cancel;   /* set by the client */
	int32_t error;             /* at the end: 0 or a CEP_E* code */
	uint64_t prompt_tokens;    /* as the daemon took them */
	uint64_t first_token_ns;   /* from taking the request to token 0 */
	uint64_t total_ns;         /* from taking it to the end */
	char message[CEP_GEN_MSG]; /* error's message, NUL-terminated */
};

_Static_assert(sizeof(struct cep_gen_ring) <= CEP_GEN_HEADER, "the ring's header");

#endif
