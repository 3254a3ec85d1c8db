/*
 * engine_conf.c — runs ONNX node conformance cases straight through the
 * engine on the host backend, without the daemon: the developer's quick
 * loop while writing kernels (the CI runner goes through the daemon).
 *
 *   engine_conf CASES_DIR [--filter SUBSTR] [--verbose] [--expected FILE]
 *
 * CASES_DIR holds the cases written by tests/conformance/gen_cases.py:
 * <case>/model.onnx, <case>/test_data_set_N/{input,output}_K.pb and
 * <case>/tolerance.txt. For each case it prints PASS, FAIL (with the first
 * mismatch or the engine's error) or SKIP (with the reason), then the line
 * `engine_conf: N passed, M failed, K skipped`. Without --expected any FAIL
 * makes the exit status 1; with it (a list of case names, as
 * run_conformance.py keeps), only a listed case that does not pass does.
 */
#include "engine/engine.h"
#include "gpu/backend.h"
#include "kernels/cpu/qtypes.h"
#include "onnx.pb-c.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IO 64

struct tensor {
	char name[256];
	cep_dtype dtype;
	int rank;
	int64_t dims[CEP_MAX_RANK];
	void *data;
	size_t bytes;
};

static void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	void *buf = NULL;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

/* Copies the elements of a TensorProto, from raw_data or its typed field. */
static int tensor_load(const char *path, struct tensor *t, char *why, size_t wl)
{
	size_t len = 0, esz, n = 1;
	void *buf = read_file(path, &len);
	Onnx__TensorProto *tp;
	int ret = -1;

	if (buf == NULL) {
		snprintf(why, wl, "cannot read %s", path);
		return -1;
	}
	tp = onnx__tensor_proto__unpack(NULL, len, buf);
	free(buf);
	if (tp == NULL) {
		snprintf(why, wl, "%s does not parse", path);
		return -1;
	}
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", tp->name ? tp->name : "");
	t->dtype = (cep_dtype)tp->data_type;
	esz = cep_dtype_size(t->dtype);
	if (esz == 0) {
		snprintf(why, wl, "element type %d", tp->data_type);
		goto out;
	}
	if (tp->n_dims > CEP_MAX_RANK) {
		snprintf(why, wl, "rank %zu", tp->n_dims);
		goto out;
	}
	t->rank = (int)tp->n_dims;
	for (size_t i = 0; i < tp->n_dims; i++) {
		t->dims[i] = tp->dims[i];
		n *= (size_t)tp->dims[i];
	}
	t->bytes = n * esz;
	t->data = calloc(1, t->bytes ? t->bytes : 1);
	if (t->dtype == CEP_DTYPE_INT4 || t->dtype == CEP_DTYPE_UINT4 ||
	    t->dtype == CEP_DTYPE_FLOAT4E2M1) {
		/* Two to a byte (raw_data, or int32_data two to a value), low
		 * nibble first; a byte each in memory, the nibble as it is
		 * (load_d() reads only it). */
		size_t packed = (n + 1) / 2;

		if (tp->has_raw_data ? tp->raw_data.len != packed : tp->n_int32_data != packed) {
			snprintf(why, wl, "4-bit data of %zu bytes for %zu elements",
				 tp->has_raw_data ? tp->raw_data.len : tp->n_int32_data, n);
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			unsigned b = tp->has_raw_data ? tp->raw_data.data[i / 2]
						      : (unsigned)tp->int32_data[i / 2];

			((uint8_t *)t->data)[i] = (uint8_t)((b >> (i % 2 ? 4 : 0)) & 0xfu);
		}
	} else if (tp->has_raw_data) {
		if (tp->raw_data.len != t->bytes) {
			snprintf(why, wl, "raw_data of %zu bytes for %zu", tp->raw_data.len,
				 t->bytes);
			goto out;
		}
		if (t->bytes)
			memcpy(t->data, tp->raw_data.data, t->bytes);
	} else if (n == 0) {
		/* nothing to copy */
	} else if (tp->n_float_data == n && t->dtype == CEP_DTYPE_FLOAT32) {
		memcpy(t->data, tp->float_data, t->bytes);
	} else if (tp->n_int64_data == n && t->dtype == CEP_DTYPE_INT64) {
		memcpy(t->data, tp->int64_data, t->bytes);
	} else if (tp->n_double_data == n && t->dtype == CEP_DTYPE_FLOAT64) {
		memcpy(t->data, tp->double_data, t->bytes);
	} else if (tp->n_int32_data == n) {
		/* int32, int16, int8, uint8, bool, float16 and bfloat16 bits */
		for (size_t i = 0; i < n; i++)
			memcpy((char *)t->data + i * esz, &tp->int32_data[i], esz);
	} else {
		snprintf(why, wl, "no data for %zu elements", n);
		goto out;
	}
	ret = 0;
out:
	onnx__tensor_proto__free_unpacked(tp, NULL);
	return ret;
}

static double load_d(const void *p, cep_dtype t, size_t i)
{
	switch (t) {
	case CEP_DTYPE_FLOAT32: return ((const float *)p)[i];
	case CEP_DTYPE_FLOAT64: return ((const double *)p)[i];
	case CEP_DTYPE_FLOAT16: {
		uint16_t h = ((const uint16_t *)p)[i];
		int e = (h >> 10) & 0x1f, m = h & 0x3ff;
		double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY)
							   : ldexp(m + 1024, e - 25);
		return (h & 0x8000) ? -v : v;
	}
	case CEP_DTYPE_BFLOAT16: {
		uint32_t b = (uint32_t)((const uint16_t *)p)[i] << 16;
		float f;

		memcpy(&f, &b, sizeof(f));
		return f;
	}
	case CEP_DTYPE_INT64: return (double)((const int64_t *)p)[i];
	case CEP_DTYPE_INT32: return ((const int32_t *)p)[i];
	case CEP_DTYPE_INT16: return ((const int16_t *)p)[i];
	case CEP_DTYPE_INT8: return ((const int8_t *)p)[i];
	case CEP_DTYPE_UINT8: return ((const uint8_t *)p)[i];
	case CEP_DTYPE_UINT16: return ((const uint16_t *)p)[i];
	case CEP_DTYPE_UINT32: return ((const uint32_t *)p)[i];
	case CEP_DTYPE_UINT64: return (double)((const uint64_t *)p)[i];
	case CEP_DTYPE_BOOL: return ((const uint8_t *)p)[i] != 0;
	case CEP_DTYPE_FLOAT8E4M3FN:
	case CEP_DTYPE_FLOAT8E4M3FNUZ:
	case CEP_DTYPE_FLOAT8E5M2:
	case CEP_DTYPE_FLOAT8E5M2FNUZ:
		return qtype_f8_decode(qtype_f8_of(t), ((const uint8_t *)p)[i]);
	case CEP_DTYPE_INT4: return (double)qtype_int4_load(((const uint8_t *)p)[i], true);
	case CEP_DTYPE_UINT4: return (double)qtype_int4_load(((const uint8_t *)p)[i], false);
	case CEP_DTYPE_FLOAT4E2M1: return qtype_f4_decode(((const uint8_t *)p)[i]);
	default: return NAN;
	}
}

/* 0 when got matches want within rtol/atol; else a description in why. */
static int compare(const struct tensor *want, const struct engine_output *got,
		   double rtol, double atol, char *why, size_t wl)
{
	size_t n;
	bool exact;

	if (got->dtype != want->dtype) {
		snprintf(why, wl, "output '%s' is %s, expected %s", want->name,
			 cep_dtype_name(got->dtype), cep_dtype_name(want->dtype));
		return -1;
	}
	if (got->rank != want->rank ||
	    memcmp(got->dims, want->dims, sizeof(int64_t) * (size_t)want->rank)) {
		snprintf(why, wl, "output '%s' has rank %d shape [%lld,%lld,...], expected rank %d [%lld,%lld,...]",
			 want->name, got->rank,
			 got->rank > 0 ? (long long)got->dims[0] : -1LL,
			 got->rank > 1 ? (long long)got->dims[1] : -1LL, want->rank,
			 want->rank > 0 ? (long long)want->dims[0] : -1LL,
			 want->rank > 1 ? (long long)want->dims[1] : -1LL);
		return -1;
	}
	exact = !(want->dtype == CEP_DTYPE_FLOAT32 || want->dtype == CEP_DTYPE_FLOAT16 ||
		  want->dtype == CEP_DTYPE_BFLOAT16 || want->dtype == CEP_DTYPE_FLOAT64 ||
		  want->dtype == CEP_DTYPE_FLOAT8E4M3FN || want->dtype == CEP_DTYPE_FLOAT8E4M3FNUZ ||
		  want->dtype == CEP_DTYPE_FLOAT8E5M2 || want->dtype == CEP_DTYPE_FLOAT8E5M2FNUZ ||
		  want->dtype == CEP_DTYPE_FLOAT4E2M1);
	n = want->bytes / cep_dtype_size(want->dtype);
	for (size_t i = 0; i < n; i++) {
		double a = load_d(got->data, got->dtype, i);
		double b = load_d(want->data, want->dtype, i);
		bool ok;

		if (exact)
			ok = a == b;
		else if (isnan(b))
			ok = isnan(a);
		else if (isinf(b))
			ok = a == b;
		else
			ok = fabs(a - b) <= atol + rtol * fabs(b);
		if (!ok) {
			snprintf(why, wl, "output '%s' element %zu is %.9g, expected %.9g",
				 want->name, i, a, b);
			return -1;
		}
	}
	return 0;
}

enum result { R_PASS, R_FAIL, R_SKIP };

static void tensors_free(struct tensor *t, int n)
{
	for (int i = 0; i < n; i++)
		free(t[i].data);
}

static enum result run_case(struct backend *be, const char *dir, char *why,
			    size_t wl)
{
	char path[1024];
	size_t len = 0;
	void *bytes;
	engine_model *m = NULL;
	engine_session *s = NULL;
	double rtol = 1e-3, atol = 1e-5;
	enum result res = R_FAIL;
	int rc;
	FILE *f;

	snprintf(path, sizeof(path), "%s/SKIP", dir);
	if ((f = fopen(path, "r")) != NULL) {
		if (fgets(why, (int)wl, f) == NULL)
			snprintf(why, wl, "marked SKIP");
		why[strcspn(why, "\n")] = '\0';
		fclose(f);
		return R_SKIP;
	}
	snprintf(path, sizeof(path), "%s/tolerance.txt", dir);
	if ((f = fopen(path, "r")) != NULL) {
		if (fscanf(f, "%lf %lf", &rtol, &atol) != 2) {
			rtol = 1e-3;
			atol = 1e-5;
		}
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/model.onnx", dir);
	bytes = read_file(path, &len);
	if (bytes == NULL) {
		snprintf(why, wl, "no model.onnx");
		return R_FAIL;
	}
	rc = engine_model_load(bytes, len, -1, &m);
	free(bytes);
	if (rc == CEP_EUNSUPPORTED) {
		snprintf(why, wl, "%s", cep_last_error());
		return R_SKIP;
	}
	if (rc != 0) {
		snprintf(why, wl, "load: %s: %s", cep_err_name(rc), cep_last_error());
		return R_FAIL;
	}
	rc = engine_session_new(m, be, NULL, &s);
	if (rc != 0) {
		snprintf(why, wl, "session: %s: %s", cep_err_name(rc), cep_last_error());
		res = rc == CEP_EUNSUPPORTED ? R_SKIP : R_FAIL;
		goto out;
	}
	res = R_PASS;
	for (int set = 0; res == R_PASS; set++) {
		struct tensor in[MAX_IO], want[MAX_IO];
		struct engine_input ein[MAX_IO];
		struct engine_output eout[MAX_IO];
		int nin = 0, nout = 0;

		snprintf(path, sizeof(path), "%s/test_data_set_%d", dir, set);
		if ((f = fopen(path, "r")) == NULL)
			break;
		fclose(f);
		for (; nin < MAX_IO; nin++) {
			snprintf(path, sizeof(path), "%s/test_data_set_%d/input_%d.pb",
				 dir, set, nin);
			if ((f = fopen(path, "r")) == NULL)
				break;
			fclose(f);
			if (tensor_load(path, &in[nin], why, wl) != 0) {
				res = R_SKIP;
				break;
			}
			/* The graph input names, in order (the .pb names may be empty). */
			const struct engine_tensor_info *info = engine_model_input(m, nin);
			ein[nin] = (struct engine_input){
				info ? info->name : in[nin].name, in[nin].dtype, in[nin].rank,
				in[nin].dims, in[nin].data, in[nin].bytes};
		}
		for (; res == R_PASS && nout < MAX_IO; nout++) {
			snprintf(path, sizeof(path), "%s/test_data_set_%d/output_%d.pb",
				 dir, set, nout);
			if ((f = fopen(path, "r")) == NULL)
				break;
			fclose(f);
			if (tensor_load(path, &want[nout], why, wl) != 0) {
				res = R_SKIP;
				break;
			}
			const struct engine_tensor_info *info = engine_model_output(m, nout);
			memset(&eout[nout], 0, sizeof(eout[nout]));
			eout[nout].name = info ? info->name : want[nout].name;
			eout[nout].capacity = want[nout].bytes + 64;
			eout[nout].data = calloc(1, eout[nout].capacity);
		}
		if (res == R_PASS) {
			/* The case's tensors are checked against the model first,
			 * as every caller of the engine checks what it passes. */
			rc = engine_run_check(s, ein, (size_t)nin, eout, (size_t)nout);
			if (rc == 0)
				rc = engine_run(s, ein, (size_t)nin, eout, (size_t)nout);
			if (rc != 0) {
				snprintf(why, wl, "run: %s: %s", cep_err_name(rc),
					 cep_last_error());
				res = rc == CEP_EUNSUPPORTED ? R_SKIP : R_FAIL;
			}
		}
		for (int k = 0; res == R_PASS && k < nout; k++)
			if (compare(&want[k], &eout[k], rtol, atol, why, wl) != 0)
				res = R_FAIL;
		for (int k = 0; k < nout; k++)
			free(eout[k].data);
		tensors_free(in, nin);
		tensors_free(want, nout);
	}
out:
	engine_session_free(s);
	engine_model_unref(m);
	return res;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The case names of an expected-pass list, sorted; NULL on error. */
static char **expected_read(const char *path, size_t *n)
{
	char line[512], **names = NULL;
	size_t cap = 0;
	FILE *f = fopen(path, "r");

	*n = 0;
	if (f == NULL)
		return NULL;
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] == '\0' || line[0] == '#')
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			names = realloc(names, cap * sizeof(*names));
		}
		names[(*n)++] = strdup(line);
	}
	fclose(f);
	qsort(names, *n, sizeof(*names), cmp_str);
	return names ? names : calloc(1, sizeof(*names));
}

static bool expected_has(char **names, size_t n, const char *name)
{
	return bsearch(&name, names, n, sizeof(*names), cmp_str) != NULL;
}

int main(int argc, char **argv)
{
	const char *root = NULL, *filter = "", *expected = NULL;
	char **want = NULL;
	size_t n_want = 0;
	int regressions = 0;
	bool verbose = false;
	struct backend *be = NULL;
	int counts[3] = {0, 0, 0};
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *d;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc)
			filter = argv[++i];
		else if (strcmp(argv[i], "--verbose") == 0)
			verbose = true;
		else if (strcmp(argv[i], "--expected") == 0 && i + 1 < argc)
			expected = argv[++i];
		else if (root == NULL)
			root = argv[i];
		else {
			fprintf(stderr, "usage: engine_conf CASES_DIR [--filter S] "
				"[--verbose] [--expected FILE]\n");
			return 2;
		}
	}
	if (expected != NULL && (want = expected_read(expected, &n_want)) == NULL) {
		fprintf(stderr, "engine_conf: cannot read %s\n", expected);
		return 2;
	}
	if (root == NULL || (d = opendir(root)) == NULL) {
		fprintf(stderr, "engine_conf: cannot open cases directory %s\n",
			root ? root : "(none)");
		return 2;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || strstr(e->d_name, filter) == NULL)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			names = realloc(names, cap * sizeof(*names));
		}
		names[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	if (backend_host_new(0, &be) != 0) {
		fprintf(stderr, "engine_conf: host backend: %s\n", cep_last_error());
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		char dir[1024], why[1024] = "";
		enum result r;

		snprintf(dir, sizeof(dir), "%s/%s", root, names[i]);
		r = run_case(be, dir, why, sizeof(why));
		counts[r]++;
		if (r != R_SKIP || verbose)
			printf("%s %s%s%s\n", r == R_PASS ? "PASS" : r == R_FAIL ? "FAIL" : "SKIP",
			       names[i], why[0] ? ": " : "", why);
		if (want != NULL && r != R_PASS && expected_has(want, n_want, names[i])) {
			printf("REGRESSION %s\n", names[i]);
			regressions++;
		}
		free(names[i]);
	}
	free(names);
	backend_free(be);
	for (size_t i = 0; i < n_want; i++)
		free(want[i]);
	free(want);
	printf("engine_conf: %d passed, %d failed, %d skipped\n", counts[R_PASS],
	       counts[R_FAIL], counts[R_SKIP]);
	if (expected != NULL)
		return regressions ? 1 : 0;
	return counts[R_FAIL] ? 1 : 0;
}
