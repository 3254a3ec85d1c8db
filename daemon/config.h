/*
 * config.h — cudaepd's configuration: built-in defaults, overridden by the
 * [daemon] section of an INI file (--config FILE), overridden by
 * command-line flags (--key value or --key=value; the flag of a key is the
 * key with dashes for underscores). One table in config.c lists every key
 * with its default and meaning; --help and systemd/cudaepd.conf.example
 * show the same.
 *
 * Nothing here touches sockets; group names are resolved to gids while
 * parsing so that a bad group is a configuration error, not a late failure.
 */
#ifndef CEPD_CONFIG_H
#define CEPD_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CONFIG_PATH_MAX  108 /* a sockaddr_un path with its NUL */
#define CONFIG_GROUP_MAX 64
#define CONFIG_FILE_MAX  4096
#define CONFIG_DIR_MAX   896 /* the kernel cache's directory, with its NUL */
#define CONFIG_BATCH_WINDOW_MAX_US 1000000 /* batch_window_us: at most 1 s */
#define CONFIG_BATCH_MAX 1024              /* batch_max: at most this */

/* The most max_runs_in_flight may be: the runs a connection may have in
 * flight at all (FENCE_RUNS, daemon/fence.h). */
#define CONFIG_RUNS_IN_FLIGHT_MAX 128

/* config_load()'s answer when the daemon should go on and run. */
#define CONFIG_RUN (-1)

/* The exit status for a configuration error. */
#define CONFIG_EXIT_USAGE 2

/* Where sessions run (the backend key). */
enum config_backend {
	CONFIG_BACKEND_AUTO = 0, /* CUDA when a GPU can be used, else the host */
	CONFIG_BACKEND_CUDA,     /* CUDA or nothing: the daemon does not start */
	CONFIG_BACKEND_HOST,     /* the CPU, even with a GPU present */
	CONFIG_BACKEND_HOST_ASYNC, /* the CPU, its streams queued as a GPU's
	                            * (BACKEND_HOST_ASYNC) */
};

struct config {
	char socket[CONFIG_PATH_MAX];        /* "" = the default path rule */
	int log_level;                       /* syslog priority, 3..7 */
	uint32_t max_connections;            /* connections served at once */
	uint32_t max_regions_per_client;     /* regions per connection */
	uint64_t region_bytes_per_client;    /* bytes per connection */
	uint64_t region_bytes_total;         /* bytes, all connections */
	uint64_t memory_limit;               /* bytes of device memory; 0 = the
	                                      * device's (none on the host) */
	uint64_t client_memory_limit;        /* bytes per connection; 0 = none */
	uint32_t uid_max_connections;        /* per uid, at once; 0 = none */
	uint32_t uid_max_sessions;           /* per uid, all its connections;
	                                      * 0 = none */
	uint32_t uid_max_regions;            /* likewise; 0 = none */
	uint64_t uid_max_bytes;              /* device and pinned bytes per uid;
	                                      * 0 = none */
	uint32_t max_runs_in_flight;         /* runs of one connection submitted
	                                      * to the backend at once, the rest
	                                      * wait (daemon/fairq.h); 0 = up to
	                                      * CONFIG_RUNS_IN_FLIGHT_MAX */
	uint64_t pool_bytes;                 /* the arena's handle pool, bytes */
	uint32_t trim_idle_ms;               /* ms before an idle granule is
	                                      * unmapped; 0 = only on trim */
	uint32_t socket_mode;                /* of the socket file */
	char socket_group[CONFIG_GROUP_MAX]; /* as given; "" = none */
	int64_t socket_gid;                  /* resolved; -1 = none */
	char admin_group[CONFIG_GROUP_MAX];  /* as given; "" = none */
	int64_t admin_gid;                   /* resolved; -1 = none */
	int backend;                         /* enum config_backend */
	int device;                          /* CUDA device ordinal, >= 0 */
	char cache_dir[CONFIG_DIR_MAX];      /* kernel cache; "" = the default */
	char kernel_pack[CONFIG_DIR_MAX];    /* prebuilt kernels; "" = the
	                                      * default, "none" = none */
	uint32_t batch_window_us;            /* how long a run of a batching
	                                      * session waits for others, us;
	                                      * 0: only those already there */
	uint32_t batch_max;                  /* runs, and rows, of one batch */
	char file[CONFIG_FILE_MAX];          /* INI file read; "" = none */
};

/* Fills cfg with the built-in defaults. Cannot fail. */
void config_init(struct config *cfg);

/*
 * Sets key (an INI key such as "region_bytes_total") to value as written in
 * a file or on the command line. Returns 0, or CEP_EINVAL for an unknown
 * key or a bad value, with a message such as "'lots' is not a size" (or
 * "unknown key 'x'") in err (errlen bytes); cfg is unchanged on failure.
 */
int config_set(struct config *cfg, const char *key, const char *value,
	       char *err, size_t errlen);

/*
 * Applies the [daemon] section of the INI file at path over cfg. Returns 0,
 * or CEP_EINVAL for an unreadable file, a syntax error, a key outside
 * [daemon], an unknown key or a bad value, with err saying
 * "PATH:LINE: key: 'value' is not a size" or similar. Keys before the first
 * error are applied; on failure the caller should not use cfg.
 */
int config_load_file(struct config *cfg, const char *path, char *err,
		     size_t errlen);

/*
 * config_load_file() without the file: applies the [daemon] section read
 * from f (left open, positioned wherever inih stopped) over cfg, naming it
 * name in messages ("NAME:LINE: ..."). Returns 0 or CEP_EINVAL as
 * config_load_file() does; cfg->file is not set. For the fuzzer
 * (tests/fuzz/fuzz_config.c), which reads from memory with fmemopen(3).
 */
int config_load_stream(struct config *cfg, FILE *f, const char *name,
		       char *err, size_t errlen);

/*
 * The whole command line: config_init(), then the file of --config if one
 * is given, then every other flag in order. Returns CONFIG_RUN when the
 * daemon should run with *cfg; otherwise the status main() should exit
 * with: 0 after --help (printed to out) or --version, CONFIG_EXIT_USAGE
 * after an error, which is printed to errf as "cudaepd: <what>".
 */
int config_load(struct config *cfg, int argc, char **argv, FILE *out,
		FILE *errf);

/* Prints the usage with every flag, its meaning and its default to f. */
void config_print_help(FILE *f);

/* Parses a size in bytes with an optional K, M, G or T suffix (powers of
 * 1024) into *out. Returns 0, or CEP_EINVAL (not a size) or CEP_ERANGE (does
 * not fit 64 bits). */
int config_parse_size(const char *s, uint64_t *out);

#endif
