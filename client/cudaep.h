/*
 * cudaep.h — the client library of cudaep, a GPU inference daemon.
 *
 * A process links libcudaep-client, connects to cudaepd over its Unix
 * socket, creates shared-memory regions for its tensors, loads ONNX models
 * into sessions and runs them. The daemon owns the GPU; this library only
 * speaks the protocol (proto/cudaep.proto) and manages the shared memory.
 *
 * Errors: every function that can fail returns int, 0 on success or a
 * negative CEP_E* code. cep_strerror() turns a code into a sentence and
 * cep_last_error() gives the daemon's detailed message (which tensor, which
 * limit, ...) of the calling thread's most recent failure.
 *
 * Threads: a cep_client and everything created through it may be used from
 * several threads at once; calls on one client are serialized inside the
 * library, except waiting for fences, which happens outside. Freeing an object while another thread still uses it is the
 * caller's bug, as with free().
 *
 * Ownership: objects returned through an `out` pointer belong to the caller
 * and are released with the matching _free/_close, each of which accepts
 * NULL. Regions and sessions must be freed before their client is closed;
 * cep_close() releases any that are left.
 */
#ifndef CUDAEP_H
#define CUDAEP_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CEP_VERSION "0.1.0"

/* ------------------------------------------------------------------ errors */

/*
 * The one error space of cudaep: XX(name, value, message). System errors
 * keep their errno value, negated; cudaep's own start at -4000.
 */
#define CEP_ERRNO_MAP(XX)                                                      \
  XX(EPERM, -EPERM, "operation not permitted")                                 \
  XX(ENOENT, -ENOENT, "no such file, session or region")                       \
  XX(EINTR, -EINTR, "interrupted system call")                                 \
  XX(EIO, -EIO, "i/o error")                                                   \
  XX(EBADF, -EBADF, "bad file descriptor")                                     \
  XX(EAGAIN, -EAGAIN, "resource temporarily unavailable")                      \
  XX(ENOMEM, -ENOMEM, "out of host memory")                                    \
  XX(EACCES, -EACCES, "permission denied")                                     \
  XX(EBUSY, -EBUSY, "resource busy")                                           \
  XX(EEXIST, -EEXIST, "already exists")                                        \
  XX(EINVAL, -EINVAL, "invalid argument")                                      \
  XX(EMFILE, -EMFILE, "too many open files")                                   \
  XX(ENOSPC, -ENOSPC, "no space left")                                         \
  XX(EPIPE, -EPIPE, "broken pipe")                                             \
  XX(ERANGE, -ERANGE, "value out of range")                                    \
  XX(ENAMETOOLONG, -ENAMETOOLONG, "name too long")                             \
  XX(ENOTSUP, -ENOTSUP, "operation not supported")                             \
  XX(EPROTO, -EPROTO, "protocol error")                                        \
  XX(EBADMSG, -EBADMSG, "malformed message")                                   \
  XX(EMSGSIZE, -EMSGSIZE, "message too long")                                  \
  XX(ECONNREFUSED, -ECONNREFUSED, "connection refused (is cudaepd running?)")  \
  XX(ECONNRESET, -ECONNRESET, "connection reset by the daemon")                \
  XX(ENOTCONN, -ENOTCONN, "not connected")                                     \
  XX(ETIMEDOUT, -ETIMEDOUT, "timed out")                                       \
  XX(ECANCELED, -ECANCELED, "operation canceled")                              \
  XX(EVERSION, -4001, "protocol version mismatch")                             \
  XX(EMODEL, -4002, "invalid model")                                           \
  XX(EUNSUPPORTED, -4003, "unsupported operator")                              \
  XX(ESHAPE, -4004, "tensor shape mismatch")                                   \
  XX(EDTYPE, -4005, "tensor type mismatch")                                    \
  XX(EBOUNDS, -4006, "slice outside its region")                               \
  XX(EUNSEALED, -4007, "region is not sealed against shrinking and growing")   \
  XX(ELIMIT, -4008, "limit exceeded")                                          \
  XX(EDEVMEM, -4009, "out of device memory")                                   \
  XX(EDEVICE, -4010, "device error")                                           \
  XX(ECONTEXT, -4011, "device context lost; the daemon is recovering")         \
  XX(EINTERNAL, -4012, "internal error in the daemon")

typedef enum cep_errno {
#define CEP__ERR_ENUM(name, val, msg) CEP_##name = (val),
  CEP_ERRNO_MAP(CEP__ERR_ENUM)
#undef CEP__ERR_ENUM
} cep_errno;

/* A static sentence for err ("unknown error -N" text for codes outside the
 * map, in a thread-local buffer). Never NULL. */
const char *cep_strerror(int err);

/* The code's name without the CEP_ prefix ("EINVAL"), or "UNKNOWN". */
const char *cep_err_name(int err);

/* The daemon's (or the library's) detailed message for the calling thread's
 * most recent failed call, e.g. "input 'x': dimension 1 is 3, the model
 * wants 4". An empty string when there is none. Valid until the thread's
 * next call into the library. */
const char *cep_last_error(void);

/* --------------------------------------------------------------- constants */

/*
 * Element types; the values are ONNX's TensorProto.DataType.
 *
 * The 4-bit types (uint4, int4, float4e2m1) are held one element per
 * byte, in client regions as inside cudaep (as numpy's ml_dtypes.uint4,
 * int4 and float4_e2m1fn arrays hold them: itemsize 1), so that
 * cep_dtype_size() is 1 and a tensor's bytes are its element count. Only
 * in model files are they packed two to a byte (the loader unpacks them).
 * The element is in the byte's low nibble: an int4 in two's complement
 * (-2 is 0x0e), a float4e2m1 as sign, 2 exponent and 1 mantissa bits.
 * cudaep reads only the low nibble; it writes an int4 sign-extended into
 * the whole byte (-2 as 0xfe, which ml_dtypes reads as -2 too), a uint4
 * or float4e2m1 with the high nibble 0.
 */
typedef enum cep_dtype {
  CEP_DTYPE_UNDEFINED = 0,
  CEP_DTYPE_FLOAT32 = 1,
  CEP_DTYPE_UINT8 = 2,
  CEP_DTYPE_INT8 = 3,
  CEP_DTYPE_UINT16 = 4,
  CEP_DTYPE_INT16 = 5,
  CEP_DTYPE_INT32 = 6,
  CEP_DTYPE_INT64 = 7,
  CEP_DTYPE_BOOL = 9,
  CEP_DTYPE_FLOAT16 = 10,
  CEP_DTYPE_FLOAT64 = 11,
  CEP_DTYPE_UINT32 = 12,
  CEP_DTYPE_UINT64 = 13,
  CEP_DTYPE_BFLOAT16 = 16,
  CEP_DTYPE_FLOAT8E4M3FN = 17,   /* float8: a byte each */
  CEP_DTYPE_FLOAT8E4M3FNUZ = 18,
  CEP_DTYPE_FLOAT8E5M2 = 19,
  CEP_DTYPE_FLOAT8E5M2FNUZ = 20,
  CEP_DTYPE_UINT4 = 21,          /* 4-bit types: a byte each, see above */
  CEP_DTYPE_INT4 = 22,
  CEP_DTYPE_FLOAT4E2M1 = 23,
} cep_dtype;

/* Bytes per element of dtype, 0 for CEP_DTYPE_UNDEFINED or unknown values. */
size_t cep_dtype_size(cep_dtype dtype);

/* "float32", "int64", ...; "undefined" for unknown values. */
const char *cep_dtype_name(cep_dtype dtype);

#define CEP_MAX_RANK 8 /* dimensions of a tensor */

/* How a session computes (README.md, "Precision"). Inputs and outputs
 * keep the model's types in every precision. */
typedef enum cep_precision {
  CEP_PRECISION_FP32 = 0, /* the default; TF32 off */
  CEP_PRECISION_TF32 = 1, /* float32 GEMMs and convolutions on TF32 tensor
                           * cores (the GPU); about 1e-3 relative */
  CEP_PRECISION_FP16 = 2, /* the model converted to float16 */
  CEP_PRECISION_BF16 = 3, /* the model converted to bfloat16 */
} cep_precision;

typedef enum cep_priority {
  CEP_PRIORITY_NORMAL = 0,
  CEP_PRIORITY_HIGH = 1,
  CEP_PRIORITY_LOW = 2,
} cep_priority;

/* -------------------------------------------------------------- connection */

typedef struct cep_client cep_client;
typedef struct cep_region cep_region;
typedef struct cep_session cep_session;

/*
 * Writes the socket path a client uses when none is given into buf (of len
 * bytes): $CUDAEP_SOCKET if set, else /run/cudaep/cudaep.sock if it exists,
 * else $XDG_RUNTIME_DIR/cudaep.sock, else /tmp/cudaep-<uid>/cudaep.sock.
 * Returns 0, or CEP_ENAMETOOLONG if the path does not fit.
 */
int cep_default_socket_path(char *buf, size_t len);

/*
 * Connects to cudaepd at socket_path (NULL: cep_default_socket_path()) and
 * says hello as client_name (NULL: the program's name). On success *out is a
 * new client owned by the caller, released with cep_close(). Fails with
 * CEP_ENOENT or CEP_ECONNREFUSED when no daemon listens there (the message of
 * cep_last_error() names the path), CEP_EVERSION when the daemon speaks
 * another protocol version.
 */
int cep_connect(const char *socket_path, const char *client_name,
                cep_client **out);

/* Releases everything the client still holds (sessions, regions) and closes
 * the connection; the daemon frees their device resources. Accepts NULL. */
void cep_close(cep_client *c);

/* The daemon's id for this connection, its backend ("host" or "cuda") and
 * device name. The strings live as long as the client. */
uint64_t cep_client_id(const cep_client *c);
const char *cep_client_backend(const cep_client *c);
const char *cep_client_device(const cep_client *c);

/* One no-op round trip to the daemon. Returns 0 or an error. */
int cep_ping(cep_client *c);

/* Where the daemon's device kernels have come from since it started:
 * `cudaepctl kernels` lists them one by one. A backend without device
 * kernels (the host backend) has all of these 0. */
typedef struct cep_kernel_stats {
  uint32_t arch;         /* the device's sm_<arch> (90 on an H200); 0: none */
  uint64_t modules;      /* kernel modules loaded now */
  uint64_t compiled;     /* kernel sources NVRTC compiled in the daemon */
  uint64_t compile_us;   /* microseconds those compiles took */
  uint64_t prebuilt;     /* modules taken from the prebuilt set */
  uint64_t from_disk;    /* modules read from the kernel cache directory */
} cep_kernel_stats;

/* Fills *out with the daemon's kernel counters (one round trip). A
 * program can compare them before and after a load and a first run to
 * tell its user that compiling took the time (cudaep-run does). Returns 0
 * or an error (CEP_EINVAL for NULL arguments). */
int cep_kernel_stats_get(cep_client *c, cep_kernel_stats *out);

/* ----------------------------------------------------------------- regions */

/*
 * Creates a shared-memory region of bytes bytes (a memfd sealed against
 * shrinking and growing, mapped here) and registers it with the daemon,
 * which maps it too (and pins it for DMA on a GPU). Tensors passed to
 * cep_run() live in regions. On success *out is owned by the caller and
 * released with cep_region_free(). Fails with CEP_EINVAL for 0 bytes,
 * CEP_ELIMIT when the daemon's region limits would be exceeded.
 */
int cep_region_new(cep_client *c, size_t bytes, cep_region **out);

/* The region's memory in this process (bytes long, zero-filled at
 * creation) and its size. The pointer stays valid until cep_region_free(). */
void *cep_region_data(const cep_region *r);
size_t cep_region_size(const cep_region *r);

/* Releases the region in the daemon and unmaps it here. Accepts NULL
 * (returns 0). The region is gone here even when the daemon could not be
 * told (the error is returned); the daemon drops it with the connection. */
int cep_region_free(cep_region *r);

/* ---------------------------------------------------------------- sessions */

typedef struct cep_session_options {
  const char *name;        /* shown by cudaepctl; NULL: the model's file name */
  cep_precision precision; /* CEP_PRECISION_FP32 by default */
  cep_priority priority;   /* CEP_PRIORITY_NORMAL by default */
  uint64_t memory_limit;   /* bytes of device memory; 0: no session limit */
  int batching;            /* nonzero: the daemon may merge this session's
                            * runs with those of other batching sessions of
                            * the same model file, precision and priority
                            * (of any client) into one run along dimension
                            * 0, within its batch_window_us; each run keeps
                            * its own fence, reply and error. For models
                            * whose inputs and outputs all have one
                            * symbolic dimension 0 and whose rows are
                            * computed independently; other runs go alone */
} cep_session_options;

/*
 * Loads the ONNX model at path into a new session. The file is opened here
 * and passed to the daemon as an fd, with its directory for external data.
 * opts may be NULL (defaults). On success *out is owned by the caller and
 * released with cep_session_free(). Fails with CEP_EMODEL for an invalid
 * model, CEP_EUNSUPPORTED for an operator the daemon cannot run (the message
 * names node, op and opset), CEP_EDEVMEM or CEP_ELIMIT when memory runs out.
 */
int cep_session_load(cep_client *c, const char *path,
                     const cep_session_options *opts, cep_session **out);

/* As cep_session_load() with an open model fd and, for external data, an
 * open directory fd (-1: none). The fds stay the caller's. */
int cep_session_load_fd(cep_client *c, int model_fd, int dir_fd,
                        const cep_session_options *opts, cep_session **out);

/* Unloads the session in the daemon and frees it here. Accepts NULL
 * (returns 0). */
int cep_session_free(cep_session *s);

/* The daemon's id of the session. */
uint64_t cep_session_id(const cep_session *s);

/* A model input or output: its name, element type and shape; a dimension
 * is dims[i] >= 0 when fixed, -1 when symbolic (named by dim_params[i]). */
typedef struct cep_tensor_info {
  char name[128];
  cep_dtype dtype;
  int rank;
  int64_t dims[CEP_MAX_RANK];
  char dim_params[CEP_MAX_RANK][64];
} cep_tensor_info;

/* Counts of the session's model inputs and outputs, and the i-th of each
 * (NULL when i is out of range). The infos live as long as the session. */
int cep_session_input_count(const cep_session *s);
int cep_session_output_count(const cep_session *s);
const cep_tensor_info *cep_session_input(const cep_session *s, int i);
const cep_tensor_info *cep_session_output(const cep_session *s, int i);

/* --------------------------------------------------------------------- run */

/* A tensor in a region: name matches a model input or output; bytes must be
 * the product of shape times the element size. */
typedef struct cep_tensor {
  const char *name;
  cep_region *region; /* of the same client as the session */
  size_t offset;      /* bytes into the region */
  size_t bytes;       /* for an output: room available */
  cep_dtype dtype;
  int rank;
  int64_t shape[CEP_MAX_RANK];
} cep_tensor;

/*
 * Runs the session on inputs and waits for completion: cep_run_submit()
 * then cep_fence_wait() without a time limit. Output slices are written in
 * place; on success each outputs[i] gets its actual dtype, rank and shape,
 * and its bytes are those written. Fails with CEP_ESHAPE / CEP_EDTYPE /
 * CEP_EBOUNDS naming the tensor at fault, or with the error of the run.
 * When an output's slice is too small the run fails, before computing
 * anything, with CEP_ENOSPC, and every outputs[i] gets the dtype, shape and
 * bytes it needs: make room and run again. Fails with CEP_ECONTEXT when
 * the device context was lost (a sticky device error, of any client's
 * kernel) before the run completed, and with CEP_EAGAIN while the daemon
 * restores its sessions on a new context afterwards: in both cases the
 * session and its regions stay valid, so run again. Does not allocate.
 */
int cep_run(cep_session *s, const cep_tensor *inputs, size_t n_inputs,
            cep_tensor *outputs, size_t n_outputs);

/* ------------------------------------------------------------------ fences */

/*
 * A run in flight, as cep_run_submit() fills it in: caller memory, whose
 * fields are the library's to read and write. A fence is consumed exactly
 * once, by the cep_fence_wait() or cep_fence_poll() that returns its
 * result (0 or the run's error); CEP_ETIMEDOUT and CEP_EAGAIN leave it in
 * flight. One thread at a time may wait on a given fence; different
 * fences may be waited on from different threads at once.
 */
typedef struct cep_fence {
  cep_client *client; /* NULL when consumed (or never submitted) */
  uint64_t seq;       /* the run's fence sequence number; 0: done at submit */
} cep_fence;

/* cep_fence_wait()'s timeout for waiting as long as it takes. */
#define CEP_WAIT_FOREVER ((int64_t)-1)

/* Fences of one client that may be in flight (submitted, not consumed). */
#define CEP_FENCES_MAX 64

/*
 * Submits a run and returns as soon as the daemon has checked and queued
 * it, without waiting for it to compute: the tensors are checked as by
 * cep_run() (with the same errors, CEP_ENOSPC included, and nothing is
 * queued then), each outputs[i] gets the dtype, rank, shape and bytes the
 * run will write, and *fence is filled in. The device reads the inputs
 * straight from their regions and writes the outputs straight into
 * theirs while the run is in flight: leave the input slices unchanged and
 * do not read the outputs until the fence has completed. Runs of one
 * session complete in the order they were submitted. Fails with CEP_EAGAIN
 * when CEP_FENCES_MAX fences of the client are in flight (consume one,
 * then submit again), and with CEP_EAGAIN or CEP_ECONTEXT while the
 * daemon replaces a lost device context (see cep_run()). Against a daemon without fence pages the run
 * completes before this returns. Does not allocate.
 */
int cep_run_submit(cep_session *s, const cep_tensor *inputs, size_t n_inputs,
                   cep_tensor *outputs, size_t n_outputs, cep_fence *fence);

/*
 * Waits until the run of fence has completed, at most timeout_ns
 * nanoseconds (CEP_WAIT_FOREVER: no limit; 0: do not wait): spins briefly
 * on the fence word the device writes, then sleeps on it (a futex shared
 * with the daemon). Returns 0 once the outputs are in their regions, or
 * the run's error with the daemon's message (cep_last_error()), e.g.
 * CEP_EINVAL naming the node and the bad index a kernel met, or
 * CEP_ECONTEXT for a run the loss of the device context kept from
 * completing (run it again); either consumes the fence. Returns CEP_ETIMEDOUT when the time is up (the fence
 * stays in flight: wait again), CEP_EINVAL for a fence already consumed.
 * Does not allocate.
 */
int cep_fence_wait(cep_fence *fence, int64_t timeout_ns);

/* cep_fence_wait() without waiting: 0 or the run's error (consuming the
 * fence) when it has completed, CEP_EAGAIN while it has not. */
int cep_fence_poll(cep_fence *fence);

/* -------------------------------------------------------------- generation */

/*
 * Generation: the daemon runs a decoder model's steps itself, a prefill of
 * the prompt then one decode step per token, with the model's key/value
 * cache kept in device memory from step to step, and writes each token
 * into a ring in shared memory that the client reads. The session must be
 * of a decoder as Hugging Face exporters write them: inputs input_ids
 * [batch, sequence] (int64 or int32), attention_mask [batch, total] and
 * position_ids [batch, sequence] (both optional; without them every step
 * needs a plan of its own), past key/value inputs (past_key_values.N.key
 * and .value, or past.N.*) with their present.N.* outputs, and logits
 * [batch, sequence, vocab]. One generation is one sequence (batch 1).
 */
typedef struct cep_generation cep_generation;

/* Stop tokens one generation may have. */
#define CEP_GEN_STOP_MAX 16

typedef struct cep_generate_options {
  uint32_t max_new_tokens;    /* tokens to generate at most; >= 1 */
  uint32_t capacity;          /* key/value slots of the sequence, prompt
                               * included; 0: prompt + max_new_tokens. A
                               * generation that fills them ends (CEP_GEN_LENGTH) */
  float temperature;          /* 0: greedy, the most likely token; else > 0 */
  uint32_t top_k;             /* sample among the k most likely; 0: all */
  float top_p;                /* among the fewest whose probability reaches
                               * top_p, in (0, 1]; 0: 1 */
  float repetition_penalty;   /* > 0; a token of the prompt or generated so
                               * far has its logit divided by it (multiplied
                               * when negative); 0: 1 (none) */
  uint64_t seed;              /* of the sampler: the same seed, model and
                               * options give the same tokens */
  const int64_t *stop_tokens; /* end-of-sequence and other stop tokens; the
                               * one met is the last token written */
  uint32_t n_stop_tokens;     /* <= CEP_GEN_STOP_MAX */
  uint32_t signal_every;      /* wake the reader every k tokens (and at the
                               * end); 0: 1 */
} cep_generate_options;

/* Why a generation ended (cep_generate_stats.reason). */
typedef enum cep_gen_reason {
  CEP_GEN_RUNNING = 0,   /* it has not */
  CEP_GEN_STOP = 1,      /* it wrote a stop token */
  CEP_GEN_LENGTH = 2,    /* max_new_tokens, or the capacity, reached */
  CEP_GEN_CANCELLED = 3, /* cep_generate_cancel(), or the session unloaded */
  CEP_GEN_ERROR = 4      /* a step failed: cep_generate_read() returns why */
} cep_gen_reason;

typedef struct cep_generate_stats {
  uint64_t prompt_tokens;
  uint64_t tokens;         /* generated (written to the ring) */
  uint64_t first_token_ns; /* from the daemon taking the request to the
                            * first token written (the prefill) */
  uint64_t total_ns;       /* from taking it to the end */
  cep_gen_reason reason;
} cep_generate_stats;

/* cep_generate_read()'s return once every token has been read. */
#define CEP_GEN_END 1

/*
 * Starts generating n_prompt >= 1 tokens on from prompt with session s,
 * whose client's region it makes for the ring (the prompt is copied
 * there; the caller's array may go at once). Returns once the daemon has
 * checked the request and taken it: the tokens then come while the caller
 * does other things. On success *out is the caller's, released with
 * cep_generate_free(). Fails with CEP_EINVAL for options out of range
 * (the message names the option) or a model that is not a decoder (the
 * message says what is missing); CEP_ENOSPC for a capacity smaller than
 * the prompt; CEP_EBUSY when the daemon runs its most generations at once
 * (16); CEP_ELIMIT or CEP_EDEVMEM when the key/value cache does not fit
 * the limits (it is charged to the session as kv_cache). A prompt token
 * outside the vocabulary fails the generation's first step: the first
 * cep_generate_read() returns CEP_EINVAL naming it. While the generation
 * runs, the daemon serves this client's other requests only after it ends
 * (it serves a client's requests in order): calls on the client that wait
 * for the daemon (runs, loads) wait for the generation, so use another
 * connection for other work meanwhile. Not thread-safe with other calls
 * on s.
 */
int cep_generate_start(cep_session *s, const int64_t *prompt, size_t n_prompt,
                       const cep_generate_options *o, cep_generation **out);

/*
 * Reads tokens written and not read yet, in order: up to max of them into
 * out, their count into *n. Waits up to timeout_ns (CEP_WAIT_FOREVER: no
 * limit; 0: not at all) for at least one. Returns 0 with *n >= 1;
 * CEP_GEN_END with *n == 0 once the generation has ended and every token
 * has been read; CEP_ETIMEDOUT with *n == 0 when the time is up; or, after
 * every token has been read, the error that ended a failed generation
 * (its message in cep_last_error(); CEP_ECANCELED when the daemon stopped
 * meanwhile). The ring is bounded: a daemon that finds it full waits for
 * the reader, for at most 60 s, and then ends the generation with
 * CEP_ETIMEDOUT. One thread at a time per generation.
 */
int cep_generate_read(cep_generation *g, int64_t *out, size_t max, size_t *n,
                      int64_t timeout_ns);

/* Asks the daemon to stop after the step it is on; tokens already written
 * stay readable and the generation then ends with CEP_GEN_CANCELLED.
 * Safe from any thread while g lives; cannot fail (returns 0). */
int cep_generate_cancel(cep_generation *g);

/* Whether g has ended, and what it did so far, into *st (may be NULL).
 * Returns 1 once ended, 0 while running. Does not wait. */
int cep_generate_stats_get(const cep_generation *g, cep_generate_stats *st);

/* Cancels g if it still runs, waits for the daemon to let go of it, fills
 * *st (may be NULL) and frees g and its ring. Accepts NULL. Returns 0, or
 * the error that ended a failed generation. */
int cep_generate_free(cep_generation *g, cep_generate_stats *st);

#ifdef __cplusplus
}
#endif
#endif /* CUDAEP_H */
