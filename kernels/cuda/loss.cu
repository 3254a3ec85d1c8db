/*
 * loss.cu — SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss, with
 * the arithmetic of the reference kernels (kernels/cpu/loss.c): the
 * log-softmax of LogSoftmax (a double maximum that a NaN wins, expf() of
 * float differences summed in double), losses and sums in double, each
 * output rounded once.
 *
 * A position (n, d) of the labels makes one loss. sce_rows_<type>_<index>
 * gives a position a block when its classes are contiguous (scores of
 * rank 2), the threads striding along them and combining through
 * shuffles; sce_cols_<type>_<index> and nll_<type>_<index> give it a
 * thread, neighbouring threads reading neighbouring positions. A label
 * outside [0, C) that is not ignore_index is latched into the stream's
 * fault record (with the launch's site), and the position counts as
 * ignored, so nothing is read out of bounds and the run fails with the
 * label named.
 *
 * With reduction "none" each loss is stored where it belongs; otherwise
 * each position's loss and weight go to the workspace (doubles) and
 * loss_total_<type>, one block, sums them in a fixed order and stores the
 * sum, or the sum over the weights for "mean".
 *
 * Launcher: kernels/cuda/loss.c.
 */
#include "blockred.cuh"

enum { LOSS_NONE, LOSS_SUM, LOSS_MEAN }; /* enum cpu_loss_reduction */

/* Twin: struct cuda_loss (and struct cpu_loss, kernels/cpu/loss.h). */
struct cep_loss {
	i64 batch, classes, inner;   /* scores (N, C, inner) */
	i64 ignore;                  /* ignore_index, when has_ignore */
	i32 has_ignore, weighted, reduction, pad;
};

/* The loss and weight of position pos whose scores start at base (classes
 * inner apart), the log-softmax's max and log-sum mx and lse (0 for NLL);
 * stores the loss or leaves both in the workspace ws. */
template <typename T, typename I>
__device__ __forceinline__ void loss_store(const T *x, const I *label, const T *w, T *out,
					   double *ws, const cep_loss &p, i64 pos, i64 base,
					   double mx, double lse, cep_fault *fault, u64 site)
{
	i64 c = (i64)label[pos];
	double loss = 0.0, wt = 0.0;

	if (p.has_ignore && c == p.ignore) {
		/* Neither loss nor weight. */
	} else if (c < 0 || c >= p.classes) {
		cep_fault_latch(fault, site, 1, c, p.classes);
	} else {
		double v = (double)ld_f(x, base + c * p.inner);

		wt = p.weighted ? (double)ld_f(w, c) : 1.0;
		loss = __dmul_rn(-((v - mx) - lse), wt);
	}
	if (p.reduction == LOSS_NONE) {
		st_f(out, pos, (float)loss);
	} else {
		ws[pos] = loss;
		ws[p.batch * p.inner + pos] = wt;
	}
}

/* The log-softmax over the classes of one position from base, its
 * elements taken by the threads first, first + stride, ... (a block's
 * threads when BLOCK); stores log_prob where asked for. */
template <typename T, bool BLOCK>
__device__ __forceinline__ void sce_logsoftmax(const T *x, T *log_prob, const cep_loss &p,
					       i64 base, int first, int stride, double *mx_out,
					       double *lse_out)
{
	double mx = -CEP_INF_D, sum = 0.0, lse;

	for (i64 k = first; k < p.classes; k += stride)
		mx = cep_max_nan::f(mx, (double)ld_f(x, base + k * p.inner));
	if (BLOCK)
		mx = cep_block_reduce<cep_max_nan>(mx, -CEP_INF_D);
	for (i64 k = first; k < p.classes; k += stride)
		sum += expf((float)((double)ld_f(x, base + k * p.inner) - mx));
	if (BLOCK)
		sum = cep_block_reduce<cep_add>(sum, 0.0);
	lse = log(sum);
	if (log_prob != 0) {
		for (i64 k = first; k < p.classes; k += stride) {
			i64 at = base + k * p.inner;

			st_f(log_prob, at, (float)(((double)ld_f(x, at) - mx) - lse));
		}
	}
	*mx_out = mx;
	*lse_out = lse;
}

/* Scores of rank 2 (inner 1): a block per position. */
template <typename T, typename I>
__device__ __forceinline__ void sce_rows(const T *x, const I *label, const T *w, T *out,
					 T *log_prob, double *ws, const cep_loss &p,
					 cep_fault *fault, u64 site)
{
	for (i64 pos = blockIdx.x; pos < p.batch; pos += gridDim.x) {
		i64 base = pos * p.classes;
		double mx, lse;

		sce_logsoftmax<T, true>(x, log_prob, p, base, threadIdx.x, blockDim.x, &mx, &lse);
		if (threadIdx.x == 0)
			loss_store<T, I>(x, label, w, out, ws, p, pos, base, mx, lse, fault, site);
	}
}

/* A thread per position. */
template <typename T, typename I, bool SCE>
__device__ __forceinline__ void loss_cols(const T *x, const I *label, const T *w, T *out,
					  T *log_prob, double *ws, const cep_loss &p,
					  cep_fault *fault, u64 site)
{
	CEP_FOR(pos, p.batch * p.inner) {
		i64 n = pos / p.inner, d = pos - n * p.inner;
		i64 base = n * p.classes * p.inner + d;
		double mx = 0.0, lse = 0.0;

		if (SCE)
			sce_logsoftmax<T, false>(x, log_prob, p, base, 0, 1, &mx, &lse);
		loss_store<T, I>(x, label, w, out, ws, p, pos, base, mx, lse, fault, site);
	}
}

/* One block: out[0] = the sum of the m losses of ws, over the sum of
 * their weights for "mean". */
template <typename T>
__device__ __forceinline__ void loss_total(const double *ws, T *out, const cep_loss &p)
{
	i64 m = p.batch * p.inner;
	double sum = 0.0, wsum = 0.0;

	for (i64 i = threadIdx.x; i < m; i += blockDim.x) {
		sum += ws[i];
		wsum += ws[m + i];
	}
	sum = cep_block_reduce<cep_add>(sum, 0.0);
	wsum = cep_block_reduce<cep_add>(wsum, 0.0);
	if (threadIdx.x == 0)
		st_f(out, 0, (float)(p.reduction == LOSS_MEAN ? sum / wsum : sum));
}

#define LOSS_KERNELS(T, sfx, I, isfx)                                                          \
	extern "C" __global__ void sce_rows_##sfx##_##isfx(const T *x, const I *label,          \
							   const T *w, T *out, T *log_prob,     \
							   double *ws, cep_loss p,              \
							   cep_fault *fault, u64 site)          \
	{                                                                                      \
		sce_rows<T, I>(x, label, w, out, log_prob, ws, p, fault, site);                \
	}                                                                                      \
	extern "C" __global__ void sce_cols_##sfx##_##isfx(const T *x, const I *label,          \
							   const T *w, T *out, T *log_prob,     \
							   double *ws, cep_loss p,              \
							   cep_fault *fault, u64 site)          \
	{                                                                                      \
		loss_cols<T, I, true>(x, label, w, out, log_prob, ws, p, fault, site);         \
	}                                                                                      \
	extern "C" __global__ void nll_##sfx##_##isfx(const T *x, const I *label, const T *w,    \
						      T *out, T *log_prob, double *ws,         \
						      cep_loss p, cep_fault *fault, u64 site)  \
	{                                                                                      \
		loss_cols<T, I, false>(x, label, w, out, log_prob, ws, p, fault, site);        \
	}

#define LOSS_TOTAL_KERNEL(T, sfx)                                                            \
	extern "C" __global__ void loss_total_##sfx(const double *ws, T *out, cep_loss p)    \
	{                                                                                    \
		loss_total<T>(ws, out, p);                                                   \
	}

LOSS_KERNELS(float, f32, i32, i32)
LOSS_KERNELS(float, f32, i64, i64)
LOSS_KERNELS(f16, f16, i32, i32)
LOSS_KERNELS(f16, f16, i64, i64)
LOSS_KERNELS(bf16, bf16, i32, i32)
LOSS_KERNELS(bf16, bf16, i64, i64)
LOSS_TOTAL_KERNEL(float, f32)
LOSS_TOTAL_KERNEL(f16, f16)
LOSS_TOTAL_KERNEL(bf16, bf16)
