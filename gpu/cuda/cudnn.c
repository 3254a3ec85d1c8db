/*
 * cudnn.c — cuDNN 9 through dlopen, its handle, and the cache of
 * convolution plans (descriptors, the heuristic's algorithm, the
 * workspace it needs) that the Conv kernels of kernels/cuda/conv.c and
 * the ConvTranspose kernel of kernels/cuda/conv_transpose.c run
 * (gpu/cuda/cudnn.h).
 */
#include "gpu/cuda/cudnn.h"
#include "gpu/cuda/cuda_dl.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "common/error.h"
#include "common/log.h"

/* ---------------------------------------------------------------- library */

static const char *const cudnn_names[] = {
	"libcudnn.so.9", "libcudnn.so", NULL,
};

static const struct cuda_dl_sym cudnn_syms[] = {
#define CUDNN__SYM(name) { #name, offsetof(struct cudnn_lib, name), false },
	CUDNN_FUNCS(CUDNN__SYM)
#undef CUDNN__SYM
};

static const struct cuda_dl_lib cudnn_dl = {
	.what = "cuDNN",
	.names = cudnn_names,
	.syms = cudnn_syms,
	.n_syms = sizeof(cudnn_syms) / sizeof(cudnn_syms[0]),
};

/* Checks the version of the loaded library: the descriptors' structs and
 * the enums' values are those of the headers this was built with, and
 * another major version may differ. Returns 0, or CEP_ENOTSUP. */
static int cudnn_version_check(struct cudnn_lib *lib)
{
	lib->version = lib->cudnnGetVersion();
	if (lib->version / 10000 != CUDNN_MAJOR)
		return cep__set_error(CEP_ENOTSUP, "no cuDNN: %s is cuDNN %zu.%zu, cudaep needs "
				      "cuDNN %d", lib->path, lib->version / 10000,
				      lib->version / 100 % 100, CUDNN_MAJOR);
	return 0;
}

int cudnn_lib_open(const char *path, struct cudnn_lib **out)
{
	struct cudnn_lib *lib;
	int ret;

	*out = NULL;
	lib = calloc(1, sizeof(*lib));
	if (lib == NULL)
		return cep__set_error(CEP_ENOMEM, NULL);
	ret = cuda_dl_load(&cudnn_dl, path, lib, &lib->handle, lib->path, sizeof(lib->path));
	if (ret == 0)
		ret = cudnn_version_check(lib);
	if (ret < 0)
		goto out;
	*out = lib;
	lib = NULL;
out:
	if (lib != NULL && lib->handle != NULL)
		dlclose(lib->handle);
	free(lib);
	return ret;
}

void cudnn_lib_free(struct cudnn_lib *lib)
{
	free(lib);
}

static int cudnn_code(int status)
{
	cudnnStatus_t st = (cudnnStatus_t)status;
	int cat = CUDNN_STATUS_CATEGORY(status);

	if (st == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
		return CEP_EDEVMEM;
	if (st == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
		return CEP_ENOMEM;
	if (cat == CUDNN_STATUS_NOT_SUPPORTED)
		return CEP_ENOTSUP;
	if (cat == CUDNN_STATUS_BAD_PARAM)
		return CEP_EINVAL;
	return CEP_EDEVICE;
}

/* The status's text (cudnnGetErrorString()), with the detail of
 * cudnnGetLastErrorString() when it has any. */
static void cudnn_describe(const void *table, int status, char *buf, size_t len)
{
	const struct cudnn_lib *lib = table;
	cudnnStatus_t st = (cudnnStatus_t)status;
	const char *name = NULL;
	char num[32], detail[256] = "";

	if (lib != NULL) {
		name = lib->cudnnGetErrorString(st);
		lib->cudnnGetLastErrorString(detail, sizeof(detail));
	}
	if (name == NULL) {
		snprintf(num, sizeof(num), "CUDNN_STATUS_%d", (int)st);
		name = num;
	}
	snprintf(buf, len, "%s%s%s", name, detail[0] ? ": " : "", detail);
}

const struct cuda_check_lib cudnn__errors = {
	.code = cudnn_code,
	.describe = cudnn_describe,
};

/* ----------------------------------------------------------------- handle */

struct cudnn_conv {
	struct cudnn_conv *next;             /* the cache's list */
	uint64_t hash;                       /* of d and max_workspace */
	struct cudnn_conv_desc d;            /* what it computes */
	size_t max_workspace;                /* what it was chosen within */
	cudnnTensorDescriptor_t x, y, bias;  /* owned; y's is z's too */
	cudnnFilterDescriptor_t w;           /* owned */
	cudnnConvolutionDescriptor_t conv;   /* owned; carries algo's math type */
	cudnnActivationDescriptor_t act;     /* owned; NULL unless fused */
	cudnnConvolutionFwdAlgo_t algo;      /* the heuristic's choice */
	cudnnConvolutionBwdDataAlgo_t bwd;   /* the same, for a transposed plan */
	size_t workspace;                    /* bytes algo needs */
	bool fused;                          /* one BiasActivationForward */
	atomic_bool unfused;                 /* cuDNN refused the fused call at
	                                      * run time: separate calls from
	                                      * then on (the one thing that
	                                      * changes after building) */
};

struct cudnn {
	struct cudnn_lib *lib;               /* owned */
	cudnnHandle_t handle;
	pthread_mutex_t handle_lock;         /* held around every call that
	                                      * takes the handle */
	pthread_mutex_t plan_lock;           /* guards the list; taken before
	                                      * handle_lock, never after */
	struct cudnn_conv *plans;            /* owned, newest first */
	size_t n_plans;
};

int cudnn_new(const char *lib_path, struct cudnn **out)
{
	struct cudnn *dnn;
	int ret;

	*out = NULL;
	dnn = calloc(1, sizeof(*dnn));
	if (dnn == NULL)
		return cep__set_error(CEP_ENOMEM, NULL);
	pthread_mutex_init(&dnn->handle_lock, NULL);
	pthread_mutex_init(&dnn->plan_lock, NULL);
	ret = cudnn_lib_open(lib_path, &dnn->lib);
	if (ret < 0)
		goto out;
	ret = CEP_DNN_CHECK(dnn->lib, dnn->lib->cudnnCreate(&dnn->handle));
	if (ret < 0)
		goto out;
	*out = dnn;
	dnn = NULL;
out:
	cudnn_free(dnn);
	return ret;
}

static void conv_free(const struct cudnn_lib *lib, struct cudnn_conv *p)
{
	if (p->x != NULL)
		(void)CEP_DNN_CHECK(lib, lib->cudnnDestroyTensorDescriptor(p->x));
	if (p->y != NULL)
		(void)CEP_DNN_CHECK(lib, lib->cudnnDestroyTensorDescriptor(p->y));
	if (p->bias != NULL)
		(void)CEP_DNN_CHECK(lib, lib->cudnnDestroyTensorDescriptor(p->bias));
	if (p->w != NULL)
		(void)CEP_DNN_CHECK(lib, lib->cudnnDestroyFilterDescriptor(p->w));
	if (p->conv != NULL)
		(void)CEP_DNN_CHECK(lib, lib->cudnnDestroyConvolutionDescriptor(p->conv));
	if (p->act != NULL)
		(void)CEP_DNN_CHECK(lib, lib->cudnnDestroyActivationDescriptor(p->act));
	free(p);
}

void cudnn_free(struct cudnn *dnn)
{
	struct cudnn_conv *p, *next;

	if (dnn == NULL)
		return;
	for (p = dnn->plans; p != NULL; p = next) {
		next = p->next;
		conv_free(dnn->lib, p);
	}
	if (dnn->handle != NULL)
		(void)CEP_DNN_CHECK(dnn->lib, dnn->lib->cudnnDestroy(dnn->handle));
	cudnn_lib_free(dnn->lib);
	pthread_mutex_destroy(&dnn->handle_lock);
	pthread_mutex_destroy(&dnn->plan_lock);
	free(dnn);
}

const struct cudnn_lib *cudnn_lib_of(const struct cudnn *dnn)
{
	return dnn->lib;
}

/* ------------------------------------------------------------- checking */

static bool conv_type(cep_dtype t, cudnnDataType_t *out)
{
	switch (t) {
	case CEP_DTYPE_FLOAT32: *out = CUDNN_DATA_FLOAT; return true;
	case CEP_DTYPE_FLOAT16: *out = CUDNN_DATA_HALF; return true;
	case CEP_DTYPE_BFLOAT16: *out = CUDNN_DATA_BFLOAT16; return true;
	default: return false;
	}
}

/* Whether each of the n values is in [lo, INT32_MAX]. */
static bool conv_range(const int64_t *v, int n, int64_t lo)
{
	int i;

	for (i = 0; i < n; i++) {
		if (v[i] < lo || v[i] > INT32_MAX)
			return false;
	}
	return true;
}

/* Writes "[2,3,8,8]" for the n + 2 dims a, b, s[0..n) into buf. */
static void conv_dims_text(char *buf, size_t len, int64_t a, int64_t b, const int64_t *s, int n)
{
	size_t at;
	int i;

	at = (size_t)snprintf(buf, len, "[%" PRId64 ",%" PRId64, a, b);
	for (i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, ",%" PRId64, s[i]);
	if (at < len)
		snprintf(buf + at, len - at, "]");
}

/* Refuses what cuDNN would refuse less clearly (its descriptors take int
 * sizes and int strides, so no tensor may pass 2^31 - 1 elements). */
static int conv_check(const struct cudnn_conv_desc *d)
{
	int64_t sizes[3] = { d->batch, d->c, d->m }, nx, ny, nw, counts[3];
	cudnnDataType_t t;
	int i;

	if (!conv_type(d->dtype, &t))
		return cep__set_error(CEP_EINVAL, "cuDNN convolution: no %s convolution (float32, "
				      "float16 and bfloat16 only)", cep_dtype_name(d->dtype));
	if (d->n < 2 || d->n > CUDNN_CONV_DIMS)
		return cep__set_error(CEP_EINVAL, "cuDNN convolution: %d spatial dims (2 or 3)",
				      (int)d->n);
	if (!conv_range(sizes, 3, 1) || !conv_range(&d->group, 1, 1) ||
	    d->c % d->group != 0 || d->m % d->group != 0 || !conv_range(d->in, d->n, 1) ||
	    !conv_range(d->k, d->n, 1) || !conv_range(d->pad, d->n, 0) ||
	    !conv_range(d->stride, d->n, 1) || !conv_range(d->dilation, d->n, 1) ||
	    !conv_range(d->out, d->n, 1))
		return cep__set_error(CEP_EINVAL, "cuDNN convolution: a size is out of range or "
				      "the group does not divide the channels");
	nx = d->batch * d->c;
	ny = d->batch * d->m;
	nw = d->m * (d->c / d->group);
	for (i = 0; i < d->n; i++) {
		nx = nx > INT32_MAX ? nx : nx * d->in[i];
		ny = ny > INT32_MAX ? ny : ny * d->out[i];
		nw = nw > INT32_MAX ? nw : nw * d->k[i];
	}
	counts[0] = nx;
	counts[1] = ny;
	counts[2] = nw;
	if (!conv_range(counts, 3, 1))
		return cep__set_error(CEP_EINVAL, "cuDNN convolution: a tensor of more than %d "
				      "elements (X %" PRId64 ", Y %" PRId64 ", W %" PRId64 ")",
				      INT32_MAX, nx, ny, nw);
	if ((d->z && !d->relu) || ((d->z || d->relu) && !d->bias))
		return cep__set_error(CEP_EINVAL, "cuDNN convolution: z needs relu, and relu a bias");
	if (d->transposed && (d->z || d->relu))
		return cep__set_error(CEP_EINVAL, "cuDNN convolution: a transposed one takes no z "
				      "and no relu");
	return 0;
}

/* -------------------------------------------------------------- building */

/* A packed NCHW tensor of nb dims. */
static int conv_tensor(const struct cudnn_lib *lib, cudnnDataType_t t, int nb,
		       const int64_t *dims, cudnnTensorDescriptor_t *out)
{
	int dim[CUDNN_CONV_DIMS + 2], stride[CUDNN_CONV_DIMS + 2], s = 1, i, ret;

	for (i = nb - 1; i >= 0; i--) {
		dim[i] = (int)dims[i];
		stride[i] = s;
		s *= dim[i];
	}
	ret = CEP_DNN_CHECK(lib, lib->cudnnCreateTensorDescriptor(out));
	if (ret == 0)
		ret = CEP_DNN_CHECK(lib, lib->cudnnSetTensorNdDescriptor(*out, t, nb, dim, stride));
	return ret;
}

/* The descriptors of p->d: x, y, bias, w, conv (with its group count and
 * the math type the description starts from), act. */
static int conv_descriptors(const struct cudnn_lib *lib, struct cudnn_conv *p)
{
	const struct cudnn_conv_desc *d = &p->d;
	int64_t dx[CUDNN_CONV_DIMS + 2], dy[CUDNN_CONV_DIMS + 2], db[CUDNN_CONV_DIMS + 2];
	int fw[CUDNN_CONV_DIMS + 2], pad[CUDNN_CONV_DIMS], stride[CUDNN_CONV_DIMS];
	int dil[CUDNN_CONV_DIMS], nb = d->n + 2, i, ret;
	cudnnDataType_t t = CUDNN_DATA_FLOAT;
	cudnnMathType_t math;

	conv_type(d->dtype, &t);
	dx[0] = dy[0] = d->batch;
	dx[1] = d->c;
	dy[1] = d->m;
	db[0] = 1;
	db[1] = d->transposed ? d->c : d->m;
	fw[0] = (int)d->m;
	fw[1] = (int)(d->c / d->group);
	for (i = 0; i < d->n; i++) {
		dx[2 + i] = d->in[i];
		dy[2 + i] = d->out[i];
		db[2 + i] = 1;
		fw[2 + i] = (int)d->k[i];
		pad[i] = (int)d->pad[i];
		stride[i] = (int)d->stride[i];
		dil[i] = (int)d->dilation[i];
	}
	ret = conv_tensor(lib, t, nb, dx, &p->x);
	if (ret == 0)
		ret = conv_tensor(lib, t, nb, dy, &p->y);
	if (ret == 0 && d->bias)
		ret = conv_tensor(lib, t, nb, db, &p->bias);
	if (ret == 0)
		ret = CEP_DNN_CHECK(lib, lib->cudnnCreateFilterDescriptor(&p->w));
	if (ret == 0)
		ret = CEP_DNN_CHECK(lib, lib->cudnnSetFilterNdDescriptor(p->w, t, CUDNN_TENSOR_NCHW,
									 nb, fw));
	if (ret == 0)
		ret = CEP_DNN_CHECK(lib, lib->cudnnCreateConvolutionDescriptor(&p->conv));
	/* Products accumulate in float32 for every type, as on the host. */
	if (ret == 0)
		ret = CEP_DNN_CHECK(lib, lib->cudnnSetConvolutionNdDescriptor(
			p->conv, d->n, pad, stride, dil, CUDNN_CROSS_CORRELATION,
			CUDNN_DATA_FLOAT));
	if (ret == 0)
		ret = CEP_DNN_CHECK(lib, lib->cudnnSetConvolutionGroupCount(p->conv,
									    (int)d->group));
	/* FMA alone keeps float32's 24-bit products; DEFAULT lets float32 use
	 * TF32 tensor cores; the 16-bit types use tensor cores either way. */
	math = d->dtype != CEP_DTYPE_FLOAT32 ? CUDNN_TENSOR_OP_MATH :
	       d->tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
	if (ret == 0)
		ret = CEP_DNN_CHECK(lib, lib->cudnnSetConvolutionMathType(p->conv, math));
	return ret;
}

/* Checks that cuDNN sees the output the caller worked out. */
static int conv_out_check(const struct cudnn_lib *lib, const struct cudnn_conv *p)
{
	const struct cudnn_conv_desc *d = &p->d;
	int got[CUDNN_CONV_DIMS + 2], i, ret;
	int64_t want[CUDNN_CONV_DIMS + 2], g64[CUDNN_CONV_DIMS + 2];
	char a[96], b[96];

	ret = CEP_DNN_CHECK(lib, lib->cudnnGetConvolutionNdForwardOutputDim(p->conv, p->x, p->w,
									     d->n + 2, got));
	if (ret < 0)
		return ret;
	want[0] = d->batch;
	want[1] = d->m;
	for (i = 0; i < d->n + 2; i++) {
		if (i >= 2)
			want[i] = d->out[i - 2];
		g64[i] = got[i];
	}
	if (memcmp(want, g64, sizeof(int64_t) * (size_t)(d->n + 2)) == 0)
		return 0;
	conv_dims_text(a, sizeof(a), want[0], want[1], want + 2, d->n);
	conv_dims_text(b, sizeof(b), g64[0], g64[1], g64 + 2, d->n);
	return cep__set_error(CEP_EINVAL, "cuDNN convolution: the output is %s, cuDNN computes %s",
			      a, b);
}

static bool conv_math_ok(const struct cudnn_conv_desc *d, cudnnMathType_t mt)
{
	if (d->dtype == CEP_DTYPE_FLOAT32 && !d->tf32)
		return mt == CUDNN_FMA_MATH;
	return true;
}

#define CONV_ALGOS_MAX 16   /* results asked of the heuristic */

/* The message of a description no algorithm qualifies for. */
static int conv_no_algo(const struct cudnn_conv *p, int found)
{
	const struct cudnn_conv_desc *d = &p->d;
	char x[96], w[96];

	conv_dims_text(x, sizeof(x), d->batch, d->c, d->in, d->n);
	conv_dims_text(w, sizeof(w), d->m, d->c / d->group, d->k, d->n);
	return cep__set_error(CEP_ENOTSUP, "cuDNN has no algorithm for a %s %sconvolution of X "
			      "%s by W %s in %" PRId64 " groups%s (%d candidates, workspace up to "
			      "%zu bytes%s)", cep_dtype_name(d->dtype),
			      d->transposed ? "transposed " : "", x, w, d->group,
			      d->relu ? " with Relu" : "", found, p->max_workspace,
			      d->dtype == CEP_DTYPE_FLOAT32 && !d->tf32 ? ", FMA math only" : "");
}

/* The backward-data heuristic's first algorithm that qualifies, for a
 * transposed plan; as conv_algo() does for a forward one. */
static int conv_algo_bwd(struct cudnn *dnn, struct cudnn_conv *p)
{
	const struct cudnn_lib *lib = dnn->lib;
	cudnnConvolutionBwdDataAlgoPerf_t perf[CONV_ALGOS_MAX];
	int want = 0, found = 0, i, ret;
	size_t ws = 0;

	pthread_mutex_lock(&dnn->handle_lock);
	ret = CEP_DNN_CHECK(lib, lib->cudnnGetConvolutionBackwardDataAlgorithmMaxCount(dnn->handle,
											&want));
	if (ret == 0) {
		if (want > CONV_ALGOS_MAX || want < 1)
			want = CONV_ALGOS_MAX;
		ret = CEP_DNN_CHECK(lib, lib->cudnnGetConvolutionBackwardDataAlgorithm_v7(
			dnn->handle, p->w, p->y, p->conv, p->x, want, &found, perf));
	}
	for (i = 0; ret == 0 && i < found; i++) {
		if (perf[i].status != CUDNN_STATUS_SUCCESS || !conv_math_ok(&p->d, perf[i].mathType))
			continue;
		ret = CEP_DNN_CHECK(lib, lib->cudnnSetConvolutionMathType(p->conv, perf[i].mathType));
		if (ret < 0)
			break;
		if (CEP_DNN_CHECK(lib, lib->cudnnGetConvolutionBackwardDataWorkspaceSize(
			    dnn->handle, p->w, p->y, p->conv, p->x, perf[i].algo, &ws)) < 0 ||
		    ws > p->max_workspace)
			continue;
		p->bwd = perf[i].algo;
		p->workspace = ws;
		break;
	}
	pthread_mutex_unlock(&dnn->handle_lock);
	if (ret < 0)
		return ret;
	return i < found ? 0 : conv_no_algo(p, found);
}

/* The heuristic's first algorithm that qualifies (see cudnn_conv_get()). */
static int conv_algo(struct cudnn *dnn, struct cudnn_conv *p)
{
	const struct cudnn_lib *lib = dnn->lib;
	const struct cudnn_conv_desc *d = &p->d;
	cudnnConvolutionFwdAlgoPerf_t perf[CONV_ALGOS_MAX];
	int want = 0, found = 0, i, ret;
	size_t ws = 0;

	if (d->transposed)
		return conv_algo_bwd(dnn, p);
	pthread_mutex_lock(&dnn->handle_lock);
	ret = CEP_DNN_CHECK(lib, lib->cudnnGetConvolutionForwardAlgorithmMaxCount(dnn->handle,
										   &want));
	if (ret == 0) {
		if (want > CONV_ALGOS_MAX || want < 1)
			want = CONV_ALGOS_MAX;
		ret = CEP_DNN_CHECK(lib, lib->cudnnGetConvolutionForwardAlgorithm_v7(
			dnn->handle, p->x, p->w, p->conv, p->y, want, &found, perf));
	}
	for (i = 0; ret == 0 && i < found; i++) {
		if (perf[i].status != CUDNN_STATUS_SUCCESS || !conv_math_ok(d, perf[i].mathType))
			continue;
		/* The descriptor must carry the math type the algorithm was
		 * ranked with (cuDNN picks kernels by both). */
		ret = CEP_DNN_CHECK(lib, lib->cudnnSetConvolutionMathType(p->conv, perf[i].mathType));
		if (ret < 0)
			break;
		/* An algorithm whose workspace cannot be told is passed over,
		 * as one that needs too much is. */
		if (CEP_DNN_CHECK(lib, lib->cudnnGetConvolutionForwardWorkspaceSize(
			    dnn->handle, p->x, p->w, p->conv, p->y, perf[i].algo, &ws)) < 0 ||
		    ws > p->max_workspace)
			continue;
		p->algo = perf[i].algo;
		p->workspace = ws;
		break;
	}
	pthread_mutex_unlock(&dnn->handle_lock);
	if (ret < 0)
		return ret;
	return i < found ? 0 : conv_no_algo(p, found);
}

/* How the bias and activation run: one fused call where cuDNN allows it.
 * Its identity activation runs only with the IMPLICIT_PRECOMP_GEMM
 * algorithm, so a plain bias with another algorithm is added after. */
static int conv_epilogue(const struct cudnn_lib *lib, struct cudnn_conv *p)
{
	const struct cudnn_conv_desc *d = &p->d;
	cudnnActivationMode_t mode = d->relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY;
	int ret;

	p->fused = !d->transposed && (d->relu || (d->bias && p->algo ==
						  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM));
	atomic_init(&p->unfused, false);
	if (!p->fused)
		return 0;
	/* Made for the fused call, and for cudnnActivationForward() should
	 * cuDNN refuse that call. */
	ret = CEP_DNN_CHECK(lib, lib->cudnnCreateActivationDescriptor(&p->act));
	/* NaN becomes 0, as the host's Relu makes it. */
	if (ret == 0)
		ret = CEP_DNN_CHECK(lib, lib->cudnnSetActivationDescriptor(
			p->act, mode, CUDNN_NOT_PROPAGATE_NAN, 0.0));
	return ret;
}

/* Builds the plan of d (not yet in the cache). */
static int conv_build(struct cudnn *dnn, const struct cudnn_conv_desc *d, size_t max_workspace,
		      struct cudnn_conv **out)
{
	struct cudnn_conv *p;
	int ret;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return cep__set_error(CEP_ENOMEM, NULL);
	p->d = *d;
	p->max_workspace = max_workspace;
	ret = conv_descriptors(dnn->lib, p);
	if (ret == 0)
		ret = conv_out_check(dnn->lib, p);
	if (ret == 0)
		ret = conv_algo(dnn, p);
	if (ret == 0)
		ret = conv_epilogue(dnn->lib, p);
	if (ret < 0) {
		conv_free(dnn->lib, p);
		return ret;
	}
	*out = p;
	return 0;
}

int cudnn_conv_get(struct cudnn *dnn, const struct cudnn_conv_desc *d, size_t max_workspace,
		   const struct cudnn_conv **out)
{
	uint64_t h = XXH3_64bits(d, sizeof(*d)) ^ max_workspace;
	struct cudnn_conv *p;
	int ret;

	*out = NULL;
	ret = conv_check(d);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&dnn->plan_lock);
	for (p = dnn->plans; p != NULL; p = p->next) {
		if (p->hash == h && p->max_workspace == max_workspace &&
		    memcmp(&p->d, d, sizeof(*d)) == 0)
			break;
	}
	if (p == NULL) {
		ret = conv_build(dnn, d, max_workspace, &p);
		if (ret == 0) {
			p->hash = h;
			p->next = dnn->plans;
			dnn->plans = p;
			dnn->n_plans++;
		}
	}
	pthread_mutex_unlock(&dnn->plan_lock);
	*out = p;
	return ret;
}

size_t cudnn_conv_workspace(const struct cudnn_conv *p)
{
	return p->workspace;
}

bool cudnn_conv_fused(const struct cudnn_conv *p)
{
	return p->fused && !atomic_load(&p->unfused);
}

size_t cudnn_conv_count(struct cudnn *dnn)
{
	size_t n;

	pthread_mutex_lock(&dnn->plan_lock);
	n = dnn->n_plans;
	pthread_mutex_unlock(&dnn->plan_lock);
	return n;
}

/* ------------------------------------------------------------------- runs */

/* The fused call; 1 when cuDNN refused it (nothing was queued), so that
 * the caller queues the separate calls, 0 when it was queued, or the
 * error of another failure. */
static int conv_run_fused(struct cudnn *dnn, const struct cudnn_conv *p, const void *x,
			  const void *w, const void *bias, const void *z, void *y, void *workspace)
{
	const struct cudnn_lib *lib = dnn->lib;
	const float one = 1.0f, zero = 0.0f;
	cudnnStatus_t st;
	int cat;

	/* Without z, y stands in for it with a factor of 0, which cuDNN does
	 * not read (the GPU tests fill y with NaN first to hold it to that). */
	st = lib->cudnnConvolutionBiasActivationForward(dnn->handle, &one, p->x, x, p->w, w,
							p->conv, p->algo, workspace, p->workspace,
							z != NULL ? &one : &zero, p->y,
							z != NULL ? z : y, p->bias, bias, p->act,
							p->y, y);
	cat = CUDNN_STATUS_CATEGORY((int)st);
	if (st == CUDNN_STATUS_SUCCESS)
		return 0;
	/* Checked after the call, which refusals do not count as failing:
	 * the message names the call rather than st. */
	if (cat != CUDNN_STATUS_NOT_SUPPORTED && cat != CUDNN_STATUS_BAD_PARAM)
		return CEP_GPU_CHECK_GEN(&cudnn__errors, lib, st, CUDNN_STATUS_SUCCESS,
					 "lib->cudnnConvolutionBiasActivationForward(...)");
	if (!atomic_exchange(&((struct cudnn_conv *)p)->unfused, true))
		log_notice("cuDNN refused a fused %s convolution (%s, algorithm %d); it runs as "
			   "separate calls from now on", cep_dtype_name(p->d.dtype),
			   lib->cudnnGetErrorString(st), (int)p->algo);
	return 1;
}

int cudnn_conv_run(struct cudnn *dnn, const struct cudnn_conv *p, CUstream stream,
		   const void *x, const void *w, const void *bias, const void *z, void *y,
		   void *workspace)
{
	const struct cudnn_lib *lib = dnn->lib;
	/* Scaling factors are float for every type but double. */
	const float one = 1.0f, zero = 0.0f;
	int ret;

	if (p->d.transposed)
		return cep__set_error(CEP_EINVAL, "cuDNN convolution: a transposed plan runs "
				      "through cudnn_convt_run()");
	pthread_mutex_lock(&dnn->handle_lock);
	ret = CEP_DNN_CHECK(lib, lib->cudnnSetStream(dnn->handle, (cudaStream_t)stream));
	if (ret == 0 && p->fused && !atomic_load(&p->unfused))
		ret = conv_run_fused(dnn, p, x, w, bias, z, y, workspace);
	else if (ret == 0)
		ret = 1;
	if (ret != 1)
		goto out;
	ret = CEP_DNN_CHECK(lib, lib->cudnnConvolutionForward(dnn->handle, &one, p->x, x, p->w, w,
							      p->conv, p->algo, workspace,
							      p->workspace, &zero, p->y, y));
	if (ret == 0 && p->d.bias)
		ret = CEP_DNN_CHECK(lib, lib->cudnnAddTensor(dnn->handle, &one, p->bias, bias, &one,
							     p->y, y));
	if (ret == 0 && p->d.z)
		ret = CEP_DNN_CHECK(lib, lib->cudnnAddTensor(dnn->handle, &one, p->y, z, &one, p->y,
							     y));
	/* In place, which cudnnActivationForward() allows. */
	if (ret == 0 && p->d.relu)
		ret = CEP_DNN_CHECK(lib, lib->cudnnActivationForward(dnn->handle, p->act, &one, p->y,
								     y, &zero, p->y, y));
out:
	pthread_mutex_unlock(&dnn->handle_lock);
	return ret;
}

int cudnn_convt_run(struct cudnn *dnn, const struct cudnn_conv *p, CUstream stream,
		    const void *y, const void *w, const void *bias, void *x, void *workspace)
{
	const struct cudnn_lib *lib = dnn->lib;
	const float one = 1.0f, zero = 0.0f;
	int ret;

	if (!p->d.transposed)
		return cep__set_error(CEP_EINVAL, "cuDNN convolution: cudnn_convt_run() of a "
				      "forward plan");
	pthread_mutex_lock(&dnn->handle_lock);
	ret = CEP_DNN_CHECK(lib, lib->cudnnSetStream(dnn->handle, (cudaStream_t)stream));
	/* beta 0: every element of x is written, none read. */
	if (ret == 0)
		ret = CEP_DNN_CHECK(lib, lib->cudnnConvolutionBackwardData(
			dnn->handle, &one, p->w, w, p->y, y, p->conv, p->bwd, workspace,
			p->workspace, &zero, p->x, x));
	if (ret == 0 && p->d.bias)
		ret = CEP_DNN_CHECK(lib, lib->cudnnAddTensor(dnn->handle, &one, p->bias, bias, &one,
							     p->x, x));
	pthread_mutex_unlock(&dnn->handle_lock);
	return ret;
}
