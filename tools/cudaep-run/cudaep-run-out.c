/*
 * cudaep-run-out.c — what cudaep-run prints: the model's inputs and
 * outputs before the runs, then the first run's latency, statistics over
 * the timed runs (nearest-rank percentiles of CLOCK_MONOTONIC intervals
 * around cep_run()) and a checksum per output, as text for a person or as
 * one JSON object for a script. The run itself is in cudaep-run.c.
 */
#include "tools/cudaep-run/cudaep-run.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

const char *const run_precision_names[4] = {"fp32", "tf32", "fp16", "bf16"};

/* ---------------------------------------------------------------- shapes */

/* "[batch, 16]": a model shape, "?" for an unnamed dynamic dimension. */
const char *run_info_shape_fmt(char *buf, size_t len,
			       const cep_tensor_info *t)
{
	size_t pos = (size_t)snprintf(buf, len, "[");

	for (int i = 0; i < t->rank && pos < len; i++) {
		if (t->dims[i] >= 0)
			pos += (size_t)snprintf(buf + pos, len - pos,
						"%s%" PRId64, i ? ", " : "",
						t->dims[i]);
		else
			pos += (size_t)snprintf(buf + pos, len - pos, "%s%s",
						i ? ", " : "",
						t->dim_params[i][0] != '\0'
							? t->dim_params[i]
							: "?");
	}
	if (pos < len)
		snprintf(buf + pos, len - pos, "]");
	return buf;
}

/* "[2, 16]": a concrete shape. */
const char *run_shape_fmt(char *buf, size_t len, const int64_t *shape,
			  int rank)
{
	size_t pos = (size_t)snprintf(buf, len, "[");

	for (int i = 0; i < rank && pos < len; i++)
		pos += (size_t)snprintf(buf + pos, len - pos, "%s%" PRId64,
					i ? ", " : "", shape[i]);
	if (pos < len)
		snprintf(buf + pos, len - pos, "]");
	return buf;
}

/* ------------------------------------------------------------ latency */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The timed runs' statistics. */
struct run_stats {
	double min, p50, p99, mean, max; /* microseconds */
};

/* Nearest-rank percentiles, so every figure is a latency that was seen;
 * sorts lat_us. */
static void stats_compute(struct run *r, struct run_stats *st)
{
	unsigned long n = r->opt.iters;
	double sum = 0;

	for (unsigned long i = 0; i < n; i++)
		sum += r->lat_us[i];
	qsort(r->lat_us, n, sizeof(r->lat_us[0]), cmp_double);
	st->min = r->lat_us[0];
	st->max = r->lat_us[n - 1];
	st->p50 = r->lat_us[(size_t)ceil(0.50 * (double)n) - 1];
	st->p99 = r->lat_us[(size_t)ceil(0.99 * (double)n) - 1];
	st->mean = sum / (double)n;
}

/* "12.3 us", "4.567 ms", "1.234 s". */
static const char *time_fmt(char *buf, size_t len, double us)
{
	if (us < 1e3)
		snprintf(buf, len, "%.1f us", us);
	else if (us < 1e6)
		snprintf(buf, len, "%.3f ms", us / 1e3);
	else
		snprintf(buf, len, "%.3f s", us / 1e6);
	return buf;
}

/* --------------------------------------------------------------- text */

void run_print_model(const struct run *r)
{
	char a[256], b[256], t[32];

	printf("cudaep-run %s: %s on cudaepd at %s (backend %s, device %s)\n",
	       CEP_VERSION, r->opt.model, r->sock, cep_client_backend(r->c),
	       cep_client_device(r->c));
	printf("session %" PRIu64 " (precision %s) loaded in %s\n",
	       cep_session_id(r->s), run_precision_names[r->opt.precision],
	       time_fmt(t, sizeof(t), r->load_us));
	printf("inputs:\n");
	for (int i = 0; i < r->n_in; i++) {
		const struct run_in *in = &r->in[i];

		printf("  %s: %s %s <- %s %s", in->info->name,
		       cep_dtype_name(in->info->dtype),
		       run_info_shape_fmt(a, sizeof(a), in->info),
		       in->path != NULL ? in->path : "random",
		       run_shape_fmt(b, sizeof(b), in->arr.shape, in->arr.rank));
		if (in->path == NULL)
			printf(" (seed %" PRIu64 ")", r->opt.seed);
		printf("\n");
	}
	printf("outputs:\n");
	for (int i = 0; i < r->n_out; i++)
		printf("  %s: %s %s\n", r->out[i].info->name,
		       cep_dtype_name(r->out[i].info->dtype),
		       run_info_shape_fmt(a, sizeof(a), r->out[i].info));
	fflush(stdout);
}

/* What the load and first run cost in kernels, on a backend that has
 * device kernels: a first run that waited for NVRTC says so and for how
 * long. */
static void print_kernels(const struct run *r)
{
	const cep_kernel_stats *b = &r->k_before, *k = &r->k_after;
	char a[32];

	if (k->arch == 0)
		return;
	if (k->compiled > b->compiled)
		printf("kernels: the daemon compiled %" PRIu64 " kernel source%s for sm_%u in %s "
		       "(not in its prebuilt set; `cudaepctl kernels` lists them), %" PRIu64
		       " from the prebuilt set, %" PRIu64 " from the disk cache\n",
		       k->compiled - b->compiled, k->compiled - b->compiled == 1 ? "" : "s",
		       k->arch, time_fmt(a, sizeof(a), (double)(k->compile_us - b->compile_us)),
		       k->prebuilt - b->prebuilt, k->from_disk - b->from_disk);
	else
		printf("kernels: none compiled; %" PRIu64 " loaded from the prebuilt set, %" PRIu64
		       " from the disk cache, the rest already loaded\n",
		       k->prebuilt - b->prebuilt, k->from_disk - b->from_disk);
}

static void print_text(const struct run *r, const struct run_stats *st)
{
	char a[32], b[32], c[32], d[32], shape[256];

	printf("first run: %s (includes planning; %lu warm-up run%s in all)\n",
	       time_fmt(a, sizeof(a), r->first_us), r->opt.warmup,
	       r->opt.warmup == 1 ? "" : "s");
	print_kernels(r);
	printf("latency: min %s, p50 %s, p99 %s, mean %s (%lu runs)\n",
	       time_fmt(a, sizeof(a), st->min), time_fmt(b, sizeof(b), st->p50),
	       time_fmt(c, sizeof(c), st->p99), time_fmt(d, sizeof(d), st->mean),
	       r->opt.iters);
	printf("results:\n");
	for (int i = 0; i < r->n_out; i++) {
		const cep_tensor *t = &r->tout[i];

		printf("  %s: %s %s sum=%.10g abs_sum=%.10g", t->name,
		       cep_dtype_name(t->dtype),
		       run_shape_fmt(shape, sizeof(shape), t->shape, t->rank),
		       r->out[i].sum, r->out[i].abs_sum);
		if (r->out[i].path != NULL)
			printf(" -> %s", r->out[i].path);
		printf("\n");
	}
}

/* --------------------------------------------------------------- JSON */

void run_json_str(const char *s)
{
	putchar('"');
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

/* JSON has no NaN or infinity: those become null. */
static void json_num(const char *key, double v, const char *sep)
{
	printf("\"%s\": ", key);
	if (isfinite(v))
		printf("%.17g%s", v, sep);
	else
		printf("null%s", sep);
}

static void json_shape(const int64_t *shape, int rank)
{
	putchar('[');
	for (int i = 0; i < rank; i++)
		printf("%s%" PRId64, i ? ", " : "", shape[i]);
	putchar(']');
}

static void json_info_shape(const cep_tensor_info *t)
{
	putchar('[');
	for (int i = 0; i < t->rank; i++) {
		fputs(i ? ", " : "", stdout);
		if (t->dims[i] >= 0)
			printf("%" PRId64, t->dims[i]);
		else if (t->dim_params[i][0] != '\0')
			run_json_str(t->dim_params[i]);
		else
			fputs("null", stdout);
	}
	putchar(']');
}

static void print_json(const struct run *r, const struct run_stats *st)
{
	printf("{\"version\": \"%s\", \"model\": ", CEP_VERSION);
	run_json_str(r->opt.model);
	printf(", \"socket\": ");
	run_json_str(r->sock);
	printf(", \"backend\": ");
	run_json_str(cep_client_backend(r->c));
	printf(", \"device\": ");
	run_json_str(cep_client_device(r->c));
	printf(", \"session_id\": %" PRIu64 ", \"precision\": \"%s\", ",
	       cep_session_id(r->s), run_precision_names[r->opt.precision]);
	json_num("load_us", r->load_us, ",\n");
	printf(" \"inputs\": [");
	for (int i = 0; i < r->n_in; i++) {
		const struct run_in *in = &r->in[i];

		printf("%s\n  {\"name\": ", i ? "," : "");
		run_json_str(in->info->name);
		printf(", \"dtype\": \"%s\", \"model_shape\": ",
		       cep_dtype_name(in->info->dtype));
		json_info_shape(in->info);
		printf(", \"shape\": ");
		json_shape(in->arr.shape, in->arr.rank);
		printf(", \"file\": ");
		if (in->path != NULL)
			run_json_str(in->path);
		else
			fputs("null", stdout);
		putchar('}');
	}
	printf("],\n \"outputs\": [");
	for (int i = 0; i < r->n_out; i++) {
		const cep_tensor *t = &r->tout[i];

		printf("%s\n  {\"name\": ", i ? "," : "");
		run_json_str(t->name);
		printf(", \"dtype\": \"%s\", \"model_shape\": ",
		       cep_dtype_name(t->dtype));
		json_info_shape(r->out[i].info);
		printf(", \"shape\": ");
		json_shape(t->shape, t->rank);
		printf(", ");
		json_num("sum", r->out[i].sum, ", ");
		json_num("abs_sum", r->out[i].abs_sum, ", ");
		printf("\"file\": ");
		if (r->out[i].path != NULL)
			run_json_str(r->out[i].path);
		else
			fputs("null", stdout);
		putchar('}');
	}
	printf("],\n \"seed\": %" PRIu64 ", \"warmup\": %lu, \"iters\": %lu, ",
	       r->opt.seed, r->opt.warmup, r->opt.iters);
	json_num("first_run_us", r->first_us, ",\n");
	if (r->k_after.arch != 0)
		printf(" \"kernels\": {\"compiled\": %" PRIu64 ", \"compile_us\": %" PRIu64
		       ", \"prebuilt\": %" PRIu64 ", \"from_disk\": %" PRIu64 "},\n",
		       r->k_after.compiled - r->k_before.compiled,
		       r->k_after.compile_us - r->k_before.compile_us,
		       r->k_after.prebuilt - r->k_before.prebuilt,
		       r->k_after.from_disk - r->k_before.from_disk);
	printf(" \"latency_us\": {");
	json_num("min", st->min, ", ");
	json_num("p50", st->p50, ", ");
	json_num("p99", st->p99, ", ");
	json_num("mean", st->mean, ", ");
	json_num("max", st->max, "}}\n");
}

void run_print_results(struct run *r)
{
	struct run_stats st;

	stats_compute(r, &st);
	if (r->opt.json)
		print_json(r, &st);
	else
		print_text(r, &st);
}
