/*
 * cudaep-run.h — what the files of cudaep-run share: arrays in this
 * process's memory, .npy files read and written, and element values such
 * as random inputs and checksums (cudaep-run-npy.c); the state of one
 * invocation (cudaep-run.c) and its printing as text or JSON
 * (cudaep-run-out.c); generating tokens with a decoder model, --generate
 * (cudaep-run-gen.c). Not installed; the tool's own header, next to the
 * public client/cudaep.h it builds on.
 *
 * Errors follow the library's one error space: functions return 0 or a
 * negative CEP_E* code, and cep_last_error() says what went wrong.
 */
#ifndef CEP_RUN_H
#define CEP_RUN_H

#include "client/cudaep.h"
#include "proto/cep_limits.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/un.h>

/* A dense C-order array owned by whoever holds the struct. */
struct run_array {
	cep_dtype dtype;
	int rank;
	int64_t shape[CEP_MAX_RANK]; /* (rank) elements per dimension */
	void *data;                  /* (bytes), heap; NULL when bytes is 0 */
	size_t bytes;                /* product of shape times element size */
};

/*
 * Makes a into a zero-filled array of dtype and shape (rank dims). Returns 0,
 * CEP_EDTYPE for a dtype without a size, CEP_ESHAPE when the size overflows,
 * CEP_ENOMEM. On failure a is left empty; on success its data is the
 * caller's, released with run_array_close().
 */
int run_array_init(struct run_array *a, cep_dtype dtype, int rank,
		   const int64_t *shape);

/* Frees a's data and empties it. Accepts NULL and an empty array. */
void run_array_close(struct run_array *a);

/* The number of elements of shape (rank dims); 1 for rank 0. The caller
 * has checked that it fits (run_array_init() or cep_run() did). */
size_t run_shape_numel(const int64_t *shape, int rank);

/* ---------------------------------------------------------------- .npy */

/*
 * Reads the .npy file at path (format versions 1, 2 and 3) into a, which
 * owns the data afterwards (run_array_close()). Accepts little-endian,
 * C-order arrays of bool, int8/16/32/64, uint8/16/32/64, float16, float32
 * and float64. Fails with the errno of open or read, CEP_EBADMSG for a file
 * that is not a well-formed .npy, CEP_ENOTSUP for a Fortran-order,
 * big-endian or structured array or a dtype cudaep has no name for,
 * CEP_ESHAPE for a rank over CEP_MAX_RANK, CEP_ENOMEM. On failure a is
 * empty and cep_last_error() names the file and the fault.
 */
int run_npy_read(struct run_array *a, const char *path);

/*
 * Writes the array of dtype and shape (rank dims) whose bytes lie at data
 * (not taken over) to path as a version 1.0 .npy file, replacing any file
 * there. Fails with CEP_ENOTSUP for bfloat16 (numpy has no such dtype) and
 * other dtypes without a numpy name, or with the errno of open or write.
 */
int run_npy_write(const char *path, cep_dtype dtype, int rank,
		  const int64_t *shape, const void *data, size_t bytes);

/* ------------------------------------------------------------ elements */

/*
 * Fills n elements of dtype at data with random values drawn from *rng (a
 * generator state, any value to start): floats uniform in [-1, 1),
 * integers uniform in [0, 10), bools true or false with even odds. Returns
 * 0, or CEP_EDTYPE for a dtype it cannot make.
 */
int run_elem_fill(void *data, cep_dtype dtype, size_t n, uint64_t *rng);

/*
 * Sums the n elements of dtype at data as doubles into *sum, and their
 * absolute values into *abs_sum, so that a user can compare with
 * numpy's a.astype(float).sum() at a glance. Returns 0, or CEP_EDTYPE for
 * a dtype it cannot read.
 */
int run_elem_checksum(const void *data, cep_dtype dtype, size_t n,
		      double *sum, double *abs_sum);

/* ----------------------------------------------------------- the run */

#define RUN_MAX_SYMS   64      /* symbolic dimensions bound in one run */

/* NAME=FILE of --input and --output. */
struct run_file_arg {
	char name[CEP_MAX_TENSOR_NAME];
	const char *path;       /* into argv */
	bool used;              /* matched a tensor of the model */
};

/* A symbolic dimension's value and where it came from. */
struct run_sym {
	char name[CEP_MAX_DIM_PARAM];
	int64_t value;
	const char *from;       /* "--dim", a .npy path, or "the default" */
};

#define RUN_MAX_PROMPT 65536  /* tokens of --prompt or --prompt-len */

/* The command line's --generate options; gen_tokens 0: no generation. */
struct run_gen_opts {
	unsigned long gen_tokens;  /* --generate N */
	int64_t *prompt;           /* (n_prompt) --prompt 1,2,3, heap; NULL:
	                            * tokens 1..prompt_len */
	size_t n_prompt;
	unsigned long prompt_len;  /* --prompt-len L (default 16) */
	float temperature;         /* 0: greedy */
	unsigned long top_k;       /* 0: all */
	float top_p;               /* (0, 1]; 1: all */
	int64_t eos[CEP_GEN_STOP_MAX];
	unsigned n_eos;
};

/* The command line. */
struct run_opts {
	const char *model;
	const char *socket;     /* NULL: the library's default */
	struct run_file_arg inputs[CEP_MAX_IO];
	int n_inputs;
	struct run_file_arg outputs[CEP_MAX_IO];
	int n_outputs;
	struct run_sym dims[RUN_MAX_SYMS];
	int n_dims;
	unsigned long iters;
	unsigned long warmup;   /* at least 1: the first run plans */
	uint64_t seed;
	cep_precision precision;
	bool quiet;
	bool json;
	struct run_gen_opts gen;
};

/* A model input and its values. */
struct run_in {
	const cep_tensor_info *info;
	const char *path;       /* the .npy file, NULL for random values */
	struct run_array arr;   /* the values, in the model's dtype */
	size_t offset;          /* bytes into the region */
};

/* A model output and what became of it. */
struct run_out {
	const cep_tensor_info *info;
	const char *path;       /* --output file, or NULL */
	size_t room;            /* bytes reserved in the region */
	size_t offset;          /* bytes into the region */
	double sum;             /* of the last run's elements */
	double abs_sum;
};

/* Everything of one invocation; cudaep-run.c fills it and releases what
 * it owns (client, session, region, arrays, lat_us), cudaep-run-out.c
 * prints it. */
struct run {
	struct run_opts opt;
	char sock[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* messages */
	cep_client *c;
	cep_session *s;
	cep_region *r;          /* NULL until the first layout */
	struct run_in in[CEP_MAX_IO];
	int n_in;
	struct run_out out[CEP_MAX_IO];
	int n_out;
	struct run_sym syms[RUN_MAX_SYMS]; /* every symbol bound so far */
	int n_syms;
	cep_tensor tin[CEP_MAX_IO];
	cep_tensor tout[CEP_MAX_IO];
	double load_us;
	double first_us;
	cep_kernel_stats k_before; /* the daemon's kernels before the load */
	cep_kernel_stats k_after;  /* and after the first run */
	double *lat_us;         /* (opt.iters) each timed run, then sorted */
};

/* Names of cep_precision values, indexed by them. */
extern const char *const run_precision_names[4];

/* "[batch, 16]" into buf (len bytes): t's shape, symbols by name and "?"
 * for an unnamed dynamic dimension. Returns buf. */
const char *run_info_shape_fmt(char *buf, size_t len,
			       const cep_tensor_info *t);

/* "[2, 16]" into buf (len bytes). Returns buf. */
const char *run_shape_fmt(char *buf, size_t len, const int64_t *shape,
			  int rank);

/* Prints s to stdout as a JSON string, quoted and escaped. */
void run_json_str(const char *s);

/* Prints the connection, session, and the model's inputs (with where their
 * values come from) and outputs to stdout, before the runs. */
void run_print_model(const struct run *r);

/* Prints the latencies and the outputs after the runs, as text or, with
 * --json, as one JSON object. Sorts r->lat_us. */
void run_print_results(struct run *r);

/* -------------------------------------------------------- command line */

/* getopt_long()'s values of the long options without a short one. */
enum run_longopt {
	RUN_LONGOPT_SEED = 256,
	RUN_LONGOPT_PROMPT,
	RUN_LONGOPT_PROMPT_LEN,
	RUN_LONGOPT_TEMPERATURE,
	RUN_LONGOPT_TOP_K,
	RUN_LONGOPT_TOP_P,
	RUN_LONGOPT_EOS,
};

/* cudaep-run's exit statuses. */
enum {
	RUN_EXIT_OK = 0,
	RUN_EXIT_FAIL = 1,
	RUN_EXIT_USAGE = 2,
};

/* Prints "cudaep-run: <message>" and the --help hint to stderr; returns
 * the exit status of a usage error (2). (cudaep-run-args.c) */
int run_usage_fail(const char *fmt, ...);

/* An unsigned decimal from lo to hi into *out; false for anything else.
 * (cudaep-run-args.c) */
bool run_parse_ulong(const char *s, unsigned long long lo,
		     unsigned long long hi, unsigned long long *out);

/* ----------------------------------------------------------- generation */

/*
 * Takes one of the command line's generation options (opt: 'g' or a
 * RUN_LONGOPT_* of them) with its argument into o->gen. Returns 0, or the
 * usage error's exit status after saying what is wrong.
 */
int run_gen_opt(struct run_opts *o, int opt, const char *arg);

/*
 * Checks the generation options against each other and the rest once the
 * command line has been read (gen_seen: one of them besides --generate was
 * given). Returns 0 or the usage error's exit status.
 */
int run_gen_opts_check(const struct run_opts *o, bool gen_seen);

/*
 * Parses --prompt's "1,2,3" into tokens (heap, the caller's, freed with
 * free()) and their count *n. Returns 0, CEP_EINVAL for a malformed list
 * or a token outside int64 (cep_last_error() is not set: the caller
 * reports a usage error), CEP_ENOMEM.
 */
int run_gen_parse_tokens(const char *list, int64_t **tokens, size_t *n);

/*
 * With r's client and session made (r->c, r->s), generates
 * r->opt.gen.gen_tokens tokens from the prompt and prints them, the time to
 * the first token, decode tokens/s and the inter-token latency p50/p99 as
 * the client saw them arrive from cep_generate_read(), as text or JSON.
 * Returns 0, or the error after printing the daemon's message.
 */
int run_generate(struct run *r);

#endif
