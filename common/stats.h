/*
 * stats.h — cudaepd's counters and gauges, defined once here as X-macro
 * lists and read everywhere else through the generated enums: the Stats
 * reply, cudaepctl's sections and its Prometheus text all walk the same
 * tables. A counter only grows; a gauge has a current value, the highest
 * value it ever had, and the total of everything ever added to it (so
 * "regions" gauge total = regions ever registered).
 *
 * One struct stats lives in each struct server; nothing here is global.
 * Bump STATS_VERSION whenever an entry is renamed, removed or changes
 * meaning (appending one does not need it: readers look names up).
 */
#ifndef CEPD_STATS_H
#define CEPD_STATS_H

#include <stdint.h>

#define STATS_VERSION 1

/* X(ENUM_SUFFIX, "name", "what it counts") */
#define STATS_COUNTERS(X)                                                      \
	X(CONNECTIONS_ACCEPTED, "connections_accepted",                        \
	  "connections accepted, refused ones included")                       \
	X(CONNECTIONS_CLOSED, "connections_closed",                            \
	  "connections torn down, by either side")                             \
	X(CONNECTIONS_REFUSED, "connections_refused",                          \
	  "connections turned away at max_connections")                        \
	X(REQUESTS, "requests", "packets received from clients")               \
	X(REQUEST_ERRORS, "request_errors",                                    \
	  "responses whose status was an error")                               \
	X(BAD_PACKETS, "bad_packets",                                          \
	  "packets that did not decode as a Request or carried no body")       \
	X(OVERSIZED_PACKETS, "oversized_packets",                              \
	  "packets larger than the protocol's packet limit")                   \
	X(FDS_RECEIVED, "fds_received", "file descriptors received")           \
	X(FDS_CLOSED, "fds_closed", "received file descriptors closed again")  \
	X(REGIONS_REGISTERED, "regions_registered",                            \
	  "shared-memory regions registered")                                  \
	X(REGIONS_RELEASED, "regions_released",                                \
	  "regions released, by request or with their connection")             \
	X(REGION_LIMIT_HITS, "region_limit_hits",                              \
	  "registrations refused by a region limit")                           \
	X(HELLO_REFUSED, "hello_refused",                                      \
	  "Hello requests refused for their protocol version")                 \
	X(SESSIONS_LOADED, "sessions_loaded", "sessions created")              \
	X(SESSIONS_UNLOADED, "sessions_unloaded",                              \
	  "sessions unloaded, by request or with their connection")            \
	X(RESPONSES_QUEUED, "responses_queued",                                \
	  "responses that waited for the socket to drain")                     \
	X(BYTES_RECEIVED, "bytes_received", "request bytes received")          \
	X(BYTES_SENT, "bytes_sent", "response bytes sent")                     \
	X(MODEL_LOAD_ERRORS, "model_load_errors",                              \
	  "LoadModel requests that failed")                                    \
	X(RUNS, "runs", "Run requests completed")                              \
	X(RUN_ERRORS, "run_errors", "Run requests that failed")                \
	X(RUN_NS, "run_ns", "nanoseconds from a Run's arrival to its reply")  \
	X(UID_CONNECTIONS_REFUSED, "uid_connections_refused",                  \
	  "connections turned away at uid_max_connections")                    \
	X(UID_SESSIONS_REFUSED, "uid_sessions_refused",                        \
	  "LoadModel requests refused at uid_max_sessions")                    \
	X(UID_REGIONS_REFUSED, "uid_regions_refused",                          \
	  "registrations refused at uid_max_regions")                          \
	X(UID_BYTES_REFUSED, "uid_bytes_refused",                              \
	  "memory charges refused at uid_max_bytes")                           \
	X(SESSIONS_KILLED, "sessions_killed",                                  \
	  "sessions unloaded by an administrator's KillSession")              \
	X(RUNS_FENCED, "runs_fenced",                                          \
	  "Run requests with a fence, answered before they completed")         \
	X(COPY_BYTES_PINNED, "copy_bytes_pinned",                              \
	  "bytes copied between the device and registered (pinned) host "      \
	  "memory: straight from and into regions")                           \
	X(COPY_BYTES_PAGEABLE, "copy_bytes_pageable",                          \
	  "bytes copied between the device and other host memory")             \
	X(RECOVERIES, "recoveries",                                            \
	  "device contexts lost (a sticky error) and replaced by a new one "    \
	  "with every session restored")                                       \
	X(HANDOVERS, "handovers",                                              \
	  "times cudaepd re-executed itself and took over its clients, "        \
	  "sessions and regions from its previous image (each recovery does)") \
	X(RECOVERY_RUNS_FAILED, "recovery_runs_failed",                        \
	  "runs in flight that a lost context kept from completing")          \
	X(RECOVERY_NS, "recovery_ns",                                          \
	  "nanoseconds from noticing a lost context to serving again in a "     \
	  "new image")                                                         \
	X(BATCHES, "batches",                                                  \
	  "batches of runs of batching sessions merged into one engine run")   \
	X(BATCH_RUNS, "batch_runs", "runs merged into those batches")          \
	X(BATCH_ALONE, "batch_alone",                                          \
	  "runs of batching sessions that ran alone: one in its window, or "   \
	  "in a batch the engine refused")                                     \
	X(BATCH_REFUSED, "batch_refused",                                      \
	  "batches the engine refused to merge (their runs ran alone)")        \
	X(BATCH_DROPPED, "batch_dropped",                                      \
	  "runs dropped from a batch window because their client went away")   \
	X(BATCH_SIZE_2, "batch_size_2", "batches of 2 runs")                   \
	X(BATCH_SIZE_3_4, "batch_size_3_4", "batches of 3 to 4 runs")          \
	X(BATCH_SIZE_5_8, "batch_size_5_8", "batches of 5 to 8 runs")          \
	X(BATCH_SIZE_9_16, "batch_size_9_16", "batches of 9 to 16 runs")       \
	X(BATCH_SIZE_17_32, "batch_size_17_32", "batches of 17 to 32 runs")    \
	X(BATCH_SIZE_33_UP, "batch_size_33_up", "batches of more than 32 runs") \
	X(RUNS_QUEUED, "runs_queued",                                          \
	  "Run requests with a fence that waited in the daemon for their "     \
	  "turn: their client had max_runs_in_flight runs on the device")

#define STATS_GAUGES(X)                                                        \
	X(CONNECTIONS, "connections", "open connections")                      \
	X(REGIONS, "regions", "registered regions")                            \
	X(REGION_BYTES, "region_bytes", "bytes of registered regions")         \
	X(SESSIONS, "sessions", "loaded sessions")                             \
	X(SEND_QUEUE, "send_queue", "responses waiting to be sent")            \
	X(JOBS, "jobs", "loads and runs being worked on off the event loop")   \
	X(RUNS_IN_FLIGHT, "runs_in_flight",                                    \
	  "runs with a fence queued and not yet completed (those waiting "     \
	  "for their turn included)")                                         \
	X(RUNS_WAITING, "runs_waiting",                                        \
	  "runs with a fence accepted and waiting in the daemon for their "    \
	  "client's turn (max_runs_in_flight)")                                \
	X(LAST_RECOVERY, "last_recovery_time",                                 \
	  "Unix time in seconds of the last recovery from a lost context; 0: " \
	  "none")                                                              \
	X(BATCH_WAITING, "batch_waiting",                                      \
	  "runs waiting in a batch window")                                    \
	X(BATCH_GROUPS, "batch_groups",                                        \
	  "groups of batching sessions (one per model, precision and "         \
	  "priority), each with an engine session of its own")

enum stats_counter {
#define STATS__ENUM(id, name, help) STATS_COUNTER_##id,
	STATS_COUNTERS(STATS__ENUM)
#undef STATS__ENUM
	STATS_COUNTER_COUNT
};

enum stats_gauge {
#define STATS__ENUM(id, name, help) STATS_GAUGE_##id,
	STATS_GAUGES(STATS__ENUM)
#undef STATS__ENUM
	STATS_GAUGE_COUNT
};

struct stats_gauge_value {
	int64_t current; /* value now */
	int64_t peak;    /* highest current ever */
	uint64_t total;  /* sum of every increase */
};

struct stats {
	uint64_t counters[STATS_COUNTER_COUNT];
	struct stats_gauge_value gauges[STATS_GAUGE_COUNT];
};

/* Zeroes every counter and gauge. */
void stats_init(struct stats *st);

/* Adds n to counter c. */
static inline void stats_count(struct stats *st, enum stats_counter c,
			       uint64_t n)
{
	st->counters[c] += n;
}

/* Moves gauge g by delta (negative to decrease), keeping peak and total. */
void stats_gauge_add(struct stats *st, enum stats_gauge g, int64_t delta);

/* The name ("requests") and the one-line description of a counter or a
 * gauge; static strings, NULL for an out-of-range index. */
const char *stats_counter_name(enum stats_counter c);
const char *stats_counter_help(enum stats_counter c);
const char *stats_gauge_name(enum stats_gauge g);
const char *stats_gauge_help(enum stats_gauge g);

#endif
