/*
 * cudnn.h — cuDNN 9 loaded at run time, and the convolution plans built
 * on it.
 *
 * Like the driver, NVRTC and cuBLASLt, cuDNN is opened with dlopen, so one
 * binary runs where it is absent: there Conv has no device kernel, and a
 * plan that needs one is refused with this file's message ("no cuDNN:
 * ..."), never a crash, while every other operator keeps working. Types
 * and constants come from the toolkit's <cudnn.h>, at build time only.
 *
 * A struct cudnn is one handle of one CUDA backend (the backend opens it
 * when a plan first needs a convolution: gpu/cuda/cuda_kernels.h,
 * cuda_dnn_get()) and a cache of convolution plans: tensor, filter,
 * convolution and activation descriptors, the algorithm and its
 * workspace size, built once per distinct problem at plan time and shared
 * by every plan that convolves the same shapes. Plans live as long as the
 * handle, which outlives every execution plan of its backend, so a kernel
 * may keep a pointer to one in its call->params.
 *
 * One handle serves every stream of the backend: a cuDNN handle is heavy
 * (it holds device memory and per-handle state) and cudnnSetStream() is
 * cheap, so a run sets the handle to its stream and queues its work under
 * the handle's lock. The lock is held only while work is queued (a few
 * microseconds), never while it runs; cuDNN handles must not be used by
 * two threads at once.
 *
 * Calls go through the table, wrapped in CEP_DNN_CHECK():
 *
 *	ret = CEP_DNN_CHECK(lib, lib->cudnnCreateTensorDescriptor(&d));
 */
#ifndef CEP_GPU_CUDNN_H
#define CEP_GPU_CUDNN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
/* The parts of the toolkit's <cudnn.h> used here, by name: <cudnn.h>
 * itself would find this file first on the include path. */
#include <cudnn_cnn.h>
#include <cudnn_ops.h>
#include <cudnn_version.h>

#include "client/cudaep.h"
#include "gpu/cuda/cuda_check.h"

/* --------------------------------------------------------------- the library */

/* The entry points used, resolved with dlsym by these names. */
#define CUDNN_FUNCS(X)                                  \
	X(cudnnGetVersion)                              \
	X(cudnnGetErrorString)                          \
	X(cudnnGetLastErrorString)                      \
	X(cudnnCreate)                                  \
	X(cudnnDestroy)                                 \
	X(cudnnSetStream)                               \
	X(cudnnCreateTensorDescriptor)                  \
	X(cudnnSetTensorNdDescriptor)                   \
	X(cudnnDestroyTensorDescriptor)                 \
	X(cudnnCreateFilterDescriptor)                  \
	X(cudnnSetFilterNdDescriptor)                   \
	X(cudnnDestroyFilterDescriptor)                 \
	X(cudnnCreateConvolutionDescriptor)             \
	X(cudnnSetConvolutionNdDescriptor)              \
	X(cudnnSetConvolutionGroupCount)                \
	X(cudnnSetConvolutionMathType)                  \
	X(cudnnDestroyConvolutionDescriptor)            \
	X(cudnnGetConvolutionNdForwardOutputDim)        \
	X(cudnnGetConvolutionForwardAlgorithmMaxCount)  \
	X(cudnnGetConvolutionForwardAlgorithm_v7)       \
	X(cudnnGetConvolutionForwardWorkspaceSize)      \
	X(cudnnCreateActivationDescriptor)              \
	X(cudnnSetActivationDescriptor)                 \
	X(cudnnDestroyActivationDescriptor)             \
	X(cudnnConvolutionForward)                      \
	X(cudnnGetConvolutionBackwardDataAlgorithmMaxCount) \
	X(cudnnGetConvolutionBackwardDataAlgorithm_v7)  \
	X(cudnnGetConvolutionBackwardDataWorkspaceSize) \
	X(cudnnConvolutionBackwardData)                 \
	X(cudnnConvolutionBiasActivationForward)        \
	X(cudnnAddTensor)                               \
	X(cudnnActivationForward)

/* The loaded library: each member has the type <cudnn.h> declares for the
 * function of the same name, so `lib->cudnnAddTensor(...)` is checked
 * against the header's prototype. */
struct cudnn_lib {
	void *handle;            /* of dlopen */
	char path[512];          /* what dlopen was given */
	size_t version;          /* cudnnGetVersion(): 91400 for 9.14.0 */
#define CUDNN__MEMBER(name) __typeof__(name) *name;
	CUDNN_FUNCS(CUDNN__MEMBER)
#undef CUDNN__MEMBER
};

/*
 * Loads cuDNN: from path when it is not NULL, else the first of
 * libcudnn.so.9 and libcudnn.so found in $CUDA_HOME/lib64,
 * /usr/local/cuda/lib64, then the dynamic linker's own search path
 * (gpu/cuda/cuda_dl.h). The library must be cuDNN 9, whose structs and
 * constants the build's headers describe. On success *out is the
 * caller's, freed with cudnn_lib_free(). Fails with CEP_ENOTSUP and a
 * message that starts "no cuDNN: " and names what was tried and why it
 * failed (a missing file, an entry point missing, another major
 * version), or CEP_ENOMEM. Needs no GPU.
 */
int cudnn_lib_open(const char *path, struct cudnn_lib **out);

/* Frees lib; the library stays loaded for the life of the process (its
 * sub-libraries register exit handlers, as the driver's do). Accepts
 * NULL. */
void cudnn_lib_free(struct cudnn_lib *lib);

/*
 * Checks the cudnnStatus_t of expr (gpu/cuda/cuda_check.h): evaluates to 0
 * for CUDNN_STATUS_SUCCESS; otherwise records the expression, function,
 * file, line and the library's text for the status (cudnnGetErrorString(),
 * with the detail of cudnnGetLastErrorString() when it has any) for
 * cep_last_error() (and logs them at debug level), and evaluates to
 * CEP_EDEVMEM for a failed device allocation, CEP_ENOMEM for a failed host
 * allocation, CEP_ENOTSUP for the CUDNN_STATUS_NOT_SUPPORTED family,
 * CEP_EINVAL for the CUDNN_STATUS_BAD_PARAM family and CEP_EDEVICE for
 * anything else. lib may be NULL (the status is then shown by number).
 * Never exits.
 */
#define CEP_DNN_CHECK(lib, expr) \
	CEP_GPU_CHECK_GEN(&cudnn__errors, cudnn__table(lib), (expr), CUDNN_STATUS_SUCCESS, #expr)

/* cuDNN's error space, for CEP_DNN_CHECK(). */
extern const struct cuda_check_lib cudnn__errors;

/* lib as the check takes it, after the compiler has seen its type. */
static inline const void *cudnn__table(const struct cudnn_lib *lib)
{
	return lib;
}

/* ------------------------------------------------------------------ the handle */

struct cudnn;

/*
 * Opens the library (as cudnn_lib_open(lib_path)) and creates a handle on
 * the device of the CUDA context current on the calling thread. On
 * success *out is the caller's, freed with cudnn_free() while that context
 * is current. Fails as cudnn_lib_open() does (before touching any
 * device), or with the check of cudnnCreate().
 */
int cudnn_new(const char *lib_path, struct cudnn **out);

/* Destroys every cached plan and the handle (the context must be current
 * and no work using them may still be queued). Accepts NULL. */
void cudnn_free(struct cudnn *dnn);

/* The library under dnn. */
const struct cudnn_lib *cudnn_lib_of(const struct cudnn *dnn);

/* -------------------------------------------------------------- convolutions */

#define CUDNN_CONV_DIMS 3   /* spatial dims at most */

/*
 * One forward convolution in NCHW (NCDHW) layout, cross-correlation as
 * ONNX's Conv computes it:
 *
 *	y = act(conv(x, w) + bias + z)
 *
 * with act the identity or Relu. Pads are symmetric (cuDNN takes no other
 * kind: a caller pads asymmetric inputs itself). A 1-D convolution is
 * described as a 2-D one with a leading unit dimension. A description is
 * compared byte for byte, so fill it from a zeroed struct.
 *
 * A transposed plan (transposed = 1) runs the same convolution backwards,
 * cuDNN's backward-data pass: it reads y and writes x,
 *
 *	x = conv^T(y, w) + bias
 *
 * every x position summing the products of the y positions whose window
 * covers it, which is ONNX's ConvTranspose of input y (N, m, out...) by
 * w (m, c / group, k...) into x (N, c, in...). Its bias has c values; it
 * takes no z and no relu. An x larger than the window reaches (by less
 * than a stride) gets only the bias there.
 */
struct cudnn_conv_desc {
	cep_dtype dtype;                  /* of x, w, bias, z and y: float32,
	                                   * float16 or bfloat16; accumulated
	                                   * in float32 */
	int32_t n;                        /* spatial dims: 2 or 3 */
	int64_t batch, c, m;              /* images, input and output channels */
	int64_t group;                    /* >= 1, dividing c and m */
	int64_t in[CUDNN_CONV_DIMS];      /* (n) spatial sizes of x */
	int64_t k[CUDNN_CONV_DIMS];       /* (n) kernel sizes */
	int64_t pad[CUDNN_CONV_DIMS];     /* (n) pads, the same on both sides */
	int64_t stride[CUDNN_CONV_DIMS];  /* (n) */
	int64_t dilation[CUDNN_CONV_DIMS];/* (n) */
	int64_t out[CUDNN_CONV_DIMS];     /* (n) spatial sizes of y, as the
	                                   * caller worked them out (checked
	                                   * against cuDNN's) */
	int32_t bias;                     /* 1: a bias of m values is added */
	int32_t z;                        /* 1: z, shaped like y, is added
	                                   * (needs relu and bias) */
	int32_t relu;                     /* 1: act is Relu (needs bias) */
	int32_t tf32;                     /* 1: float32 products may use TF32
	                                   * tensor cores; 0: exact FMAs */
	int32_t transposed;               /* 1: the backward-data pass (see
	                                   * above); bias then has c values */
	int32_t reserved;                 /* 0 */
};

/* A cached plan (opaque; immutable once built). */
struct cudnn_conv;

/*
 * Stores in *out the plan of d, built on first use: descriptors, and the
 * first algorithm of cuDNN's heuristic (cudnnGetConvolutionForwardAlgorithm
 * _v7, or cudnnGetConvolutionBackwardDataAlgorithm_v7 for a transposed
 * plan; nothing runs) whose status is success, whose math type the
 * description allows (float32 without tf32: FMA only; float16 and
 * bfloat16: tensor ops) and whose workspace is at most max_workspace
 * bytes. The plan belongs to dnn and lives until cudnn_free(). For
 * prepare() functions: the context must be current. Fails with CEP_EINVAL
 * for a description it cannot take (a type other than the three float
 * types, a size that does not fit cuDNN's int, z or relu without bias, an
 * output size that differs from cuDNN's, z or relu in a transposed plan),
 * CEP_ENOTSUP ("cuDNN has no
 * algorithm for ...") when no algorithm qualifies, CEP_ENOMEM, or a
 * library error.
 */
int cudnn_conv_get(struct cudnn *dnn, const struct cudnn_conv_desc *d, size_t max_workspace,
		   const struct cudnn_conv **out);

/* The workspace bytes p's algorithm needs (0 for many). */
size_t cudnn_conv_workspace(const struct cudnn_conv *p);

/* Whether p runs as one fused cudnnConvolutionBiasActivationForward()
 * (else a cudnnConvolutionForward(), then cudnnAddTensor() for the bias
 * and z and cudnnActivationForward() for the Relu): true from the plan's
 * building, false once cuDNN has refused the fused call at run time; for
 * tests and logs. */
bool cudnn_conv_fused(const struct cudnn_conv *p);

/* The number of distinct plans dnn holds (built, not looked up). */
size_t cudnn_conv_count(struct cudnn *dnn);

/*
 * Queues p on stream: x, w, y laid out as the description says (packed
 * NCHW), bias (m elements) when it has one, else NULL; z (like y) when it
 * has one, else NULL; workspace of at least cudnn_conv_workspace(p) bytes
 * of device memory aligned to 256. Allocates nothing, creates no
 * descriptor and never waits, so it may be recorded into a CUDA graph.
 * cuDNN may refuse a fused call that its heuristic offered (it says so
 * when it is made, not before): then this run and every later one of p
 * queue the same computation as separate calls, and a notice is logged
 * once. Returns 0 or the check of the cuDNN call that failed.
 */
int cudnn_conv_run(struct cudnn *dnn, const struct cudnn_conv *p, CUstream stream,
		   const void *x, const void *w, const void *bias, const void *z, void *y,
		   void *workspace);

/*
 * Queues the transposed plan p on stream: reads y (the description's y
 * shape, packed), w, and bias (c elements) when p has one, else NULL;
 * writes x (the description's x shape, every element); workspace as
 * cudnn_conv_run() takes it. Allocates nothing and never waits, so it may
 * be recorded into a CUDA graph. Returns 0, CEP_EINVAL for a plan that is
 * not transposed, or the check of the cuDNN call that failed.
 */
int cudnn_convt_run(struct cudnn *dnn, const struct cudnn_conv *p, CUstream stream,
		    const void *y, const void *w, const void *bias, void *x, void *workspace);

#endif
