/*
 * profile.c — where a model's time goes: loads an ONNX model straight into
 * the engine (no daemon), runs it on random inputs, then profiles one run
 * launch by launch with device timers (engine_session_profile()) and prints
 * the time per operator, the slowest launches, and the sum next to a
 * whole-run time (a captured graph's replay, as the daemon runs it).
 *
 *   build/bench/profile MODEL.onnx [--backend cuda|host] [--precision P]
 *                       [--dim NAME=VALUE]... [--iters N] [--top N]
 *
 * Random inputs: floats uniform in [-1, 1), integers in [0, 10) (so token
 * ids and masks are valid). Per-launch times are from one launch to the
 * next on the device, so their sum exceeds a replay by the gaps between
 * launches that a graph removes.
 */
#include "gpu/backend.h"
#include "engine/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_DIMS 16

struct opt {
	const char *model, *backend;
	cep_precision precision;
	const char *dim_name[MAX_DIMS];
	int64_t dim_val[MAX_DIMS];
	int n_dims, iters, top;
};

struct agg {
	const char *op;
	double ms;
	int n;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int by_ms_desc(const void *a, const void *b)
{
	double x = ((const struct agg *)a)->ms, y = ((const struct agg *)b)->ms;

	return x < y ? 1 : x > y ? -1 : 0;
}

static int step_desc(const void *a, const void *b)
{
	double x = ((const struct engine_step_time *)a)->ms;
	double y = ((const struct engine_step_time *)b)->ms;

	return x < y ? 1 : x > y ? -1 : 0;
}

static void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

static int64_t dim_of(const struct opt *o, const char *name)
{
	for (int i = 0; i < o->n_dims; i++)
		if (!strcmp(o->dim_name[i], name))
			return o->dim_val[i];
	return 1;
}

/* Random data of info's type and shape (symbols bound from --dim). */
static void input_make(const struct opt *o, const struct engine_tensor_info *info,
		       struct engine_input *in, int64_t *dims)
{
	size_t n = 1, esize = cep_dtype_size(info->dtype);
	unsigned char *p;

	for (int d = 0; d < info->rank; d++) {
		dims[d] = info->dims[d] >= 0 ? info->dims[d] : dim_of(o, info->dim_params[d]);
		n *= (size_t)dims[d];
	}
	p = calloc(n ? n : 1, esize);
	for (size_t i = 0; i < n; i++) {
		double u = (double)rand() / RAND_MAX;

		switch (info->dtype) {
		case CEP_DTYPE_FLOAT32:
			((float *)p)[i] = (float)(2 * u - 1);
			break;
		case CEP_DTYPE_INT64:
			((int64_t *)p)[i] = (int64_t)(u * 9.999);
			break;
		case CEP_DTYPE_INT32:
			((int32_t *)p)[i] = (int32_t)(u * 9.999);
			break;
		case CEP_DTYPE_BOOL:
			p[i] = u < 0.5;
			break;
		default:
			p[i * esize] = (unsigned char)(u * 255);
		}
	}
	*in = (struct engine_input){ info->name, info->dtype, info->rank, dims, p, n * esize };
}

static int usage(void)
{
	fprintf(stderr, "usage: profile MODEL.onnx [--backend cuda|host] [--precision "
		"fp32|tf32|fp16|bf16] [--dim NAME=VALUE]... [--iters N] [--top N]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const char *const precs[] = { "fp32", "tf32", "fp16", "bf16" };
	struct opt o = { .backend = "cuda", .iters = 20, .top = 15 };
	struct engine_model_options mo = { 0 };
	struct engine_session_options so = { 0 };
	struct engine_input *in;
	struct engine_output *out;
	struct engine_step_time *t = NULL;
	struct agg *agg;
	struct backend *be = NULL;
	engine_model *m = NULL;
	engine_session *s = NULL;
	int64_t (*dims)[CEP_MAX_RANK];
	int n_in, n_out, n_t = 0, n_agg = 0, ret;
	double sum = 0, t0, whole;
	size_t len = 0;
	void *bytes;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (a[0] != '-') {
			o.model = a;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "--backend")) {
			o.backend = v;
		} else if (!strcmp(a, "--precision")) {
			int k;

			for (k = 0; k < 4 && strcmp(v, precs[k]); k++)
				;
			if (k == 4)
				return usage();
			o.precision = (cep_precision)k;
		} else if (!strcmp(a, "--dim") && o.n_dims < MAX_DIMS && strchr(v, '=')) {
			o.dim_name[o.n_dims] = strndup(v, (size_t)(strchr(v, '=') - v));
			o.dim_val[o.n_dims++] = atoll(strchr(v, '=') + 1);
		} else if (!strcmp(a, "--iters")) {
			o.iters = atoi(v);
		} else if (!strcmp(a, "--top")) {
			o.top = atoi(v);
		} else {
			return usage();
		}
	}
	if (!o.model || o.iters < 1)
		return usage();
	bytes = read_file(o.model, &len);
	if (!bytes) {
		perror(o.model);
		return 1;
	}
	ret = !strcmp(o.backend, "host") ? backend_host_new(BACKEND_HOST_UPLOAD_WEIGHTS, &be)
					 : backend_cuda_new(0, &be);
	if (ret < 0)
		goto fail;
	mo.precision = o.precision;
	mo.backend = be->kind;
	so.precision = o.precision;
	ret = engine_model_load_as(bytes, len, -1, &mo, &m);
	if (ret == 0)
		ret = engine_session_new(m, be, &so, &s);
	if (ret < 0)
		goto fail;
	n_in = engine_model_input_count(m);
	n_out = engine_model_output_count(m);
	in = calloc((size_t)n_in + 1, sizeof(*in));
	out = calloc((size_t)n_out + 1, sizeof(*out));
	dims = calloc((size_t)n_in + 1, sizeof(*dims));
	srand(1);
	for (int i = 0; i < n_in; i++)
		input_make(&o, engine_model_input(m, i), &in[i], dims[i]);
	for (int i = 0; i < n_out; i++) {
		out[i].name = engine_model_output(m, i)->name;
		out[i].capacity = (size_t)1 << 30;
		out[i].data = malloc(out[i].capacity);
	}
	/* The made-up inputs are checked against the model once (the runs
	 * below trust them). Warm: plan, capture, replay; then the whole-run
	 * time. */
	if ((ret = engine_run_check(s, in, (size_t)n_in, out, (size_t)n_out)) < 0)
		goto fail;
	for (int i = 0; i < 3; i++)
		if ((ret = engine_run(s, in, (size_t)n_in, out, (size_t)n_out)) < 0)
			goto fail;
	t0 = now_ms();
	for (int i = 0; i < o.iters; i++)
		if ((ret = engine_run(s, in, (size_t)n_in, out, (size_t)n_out)) < 0)
			goto fail;
	whole = (now_ms() - t0) / o.iters;
	ret = engine_session_profile(s, in, (size_t)n_in, out, (size_t)n_out, &t, &n_t);
	if (ret < 0)
		goto fail;
	agg = calloc((size_t)n_t + 1, sizeof(*agg));
	for (int i = 0; i < n_t; i++) {
		int k;

		sum += t[i].ms;
		for (k = 0; k < n_agg && strcmp(agg[k].op, t[i].op_type); k++)
			;
		if (k == n_agg)
			agg[n_agg++].op = t[i].op_type;
		agg[k].ms += t[i].ms;
		agg[k].n++;
	}
	qsort(agg, (size_t)n_agg, sizeof(*agg), by_ms_desc);
	printf("%s on %s (%s), %s: %d launches, sum %.3f ms; a whole run (host clock, "
	       "copies in and out included, %d runs) %.3f ms\n", o.model, be->iface.device,
	       o.backend, precs[o.precision], n_t, sum, o.iters, whole);
	printf("\n%-22s %8s %6s %7s\n", "operator", "ms", "count", "share");
	for (int k = 0; k < n_agg; k++)
		printf("%-22s %8.3f %6d %6.1f%%\n", agg[k].op, agg[k].ms, agg[k].n,
		       100 * agg[k].ms / (sum > 0 ? sum : 1));
	qsort(t, (size_t)n_t, sizeof(*t), step_desc);
	printf("\n%-40s %-18s %8s\n", "slowest launches: node", "operator", "ms");
	for (int i = 0; i < n_t && i < o.top; i++)
		printf("%-40.40s %-18s %8.3f\n", t[i].node, t[i].op_type, t[i].ms);
	free(t);
	free(agg);
	engine_session_free(s);
	engine_model_unref(m);
	backend_free(be);
	return 0;
fail:
	fprintf(stderr, "profile: %s (%s)\n", cep_last_error(), cep_strerror(ret));
	return 1;
}
