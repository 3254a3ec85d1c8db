/*
 * Protocol limits shared by cudaepd and libcudaep-client.
 *
 * The client decodes with nanopb into fixed-size structs, so every string
 * and repeated field of cudaep.proto has a bound; proto/cudaep.options gives
 * nanopb the same numbers (sizes there count the terminating NUL, so a
 * string field of max_size N holds N - 1 bytes). The daemon never sends
 * more than these bounds: lists are cut at CEP_MAX_LIST with a total, and
 * strings are truncated.
 */
#ifndef CEP_PROTO_LIMITS_H
#define CEP_PROTO_LIMITS_H

#define CEP_PROTOCOL_VERSION 1

#define CEP_MAX_PACKET      65536 /* bytes in one SOCK_SEQPACKET packet */
#define CEP_MAX_FDS         2     /* fds attached to one request */
#define CEP_MAX_STATUS_MSG  512   /* Status.message, NUL included */
#define CEP_MAX_CLIENT_NAME 64    /* Hello.client_name, NUL included */
#define CEP_MAX_OBJ_NAME    64    /* region, session, counter names */
#define CEP_MAX_TENSOR_NAME 128   /* tensor names, NUL included */
#define CEP_MAX_DIM_PARAM   64    /* symbolic dimension names */
#define CEP_MAX_DEVICE_NAME 128
#define CEP_MAX_RANK        8     /* dimensions of a tensor */
#define CEP_MAX_IO          64    /* inputs or outputs of a session or run */
#define CEP_MAX_LIST        128   /* entries of a clients/sessions/memory list */
#define CEP_MAX_COUNTERS    128   /* counters in a StatsReply */
#define CEP_MAX_GAUGES      64    /* gauges in a StatsReply */
#define CEP_MAX_GRAPHS      64    /* entries of a GraphsReply (each up to
                                   * about 550 bytes: 64 fit a packet) */
#define CEP_MAX_SIGNATURE   256   /* GraphEntry.signature, NUL included */
#define CEP_MAX_CAPTURE_ERROR 160 /* capture_error of a session or graph */
#define CEP_MAX_KERNEL_NAME 48    /* KernelEntry.name, NUL included */
#define CEP_MAX_CACHE_DIR   256   /* KernelsReply.cache_dir, NUL included */

#endif
