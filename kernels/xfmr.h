/*
 * xfmr.h — the internal operators that the transformer fusions of
 * engine/fuse_xfmr.c put into a graph, as the reference kernels
 * (kernels/cpu/matmulbias.c, attention.c) and the device kernels
 * (kernels/cuda/matmulbias.c, attention.c) both read them: their domain,
 * MatMulBias's activation attribute, and the geometry of Attention.
 *
 * Both operators live in domain "com.cudaep" at opset 1. Only the
 * optimizer creates them: the model loader refuses a model's own node of
 * them (OP_INTERNAL), so these operators never see an input the fusions
 * did not check.
 *
 * MatMulBias(X [..., K], W [K, N], B [N][, R]) -> Y [..., N]: Y = act(X W + B),
 * attribute activation = "none" | "relu" | "gelu" | "gelu_tanh"; with the
 * optional residual R (Y's shape and type; activation "none" only),
 * Y = (X W + B) + R, the first sum rounded to the type as an unfused Add
 * would see it.
 *
 * Attention(Q, K, V[, mask]) -> O computes, per batch b and head h,
 *
 *	O[b,h,i,:] = sum_j softmax_j(scale * Q[b,h,i,:] . K[b,h,j,:] + mask[b,h,i,j]) V[b,h,j,:]
 *
 * over logical tensors Q (B, H, Sq, Dk), K (B, H, Sk, Dk), V (B, H, Sk, Dv)
 * and O (B, H, Sq, Dv). Each of Q, K, V and O is a rank-4 tensor whose
 * axes need not be in that order: the attributes q_axes, k_axes, v_axes
 * and out_axes (four ints each, a permutation, default 0,1,2,3) name the
 * axis of the stored tensor that holds batch, head, sequence and depth, so
 * the Transposes around an exported attention are absorbed (K^T as
 * MatMul's operand is k_axes 0,1,3,2). The batch and head dims of Q, K, V
 * and the mask broadcast as numpy's do; the mask (rank 0 to 4, aligned
 * to (B, H, Sq, Sk) from the right) may also broadcast along the query and
 * key dims. Attribute scale (float, default 1) multiplies the products.
 */
#ifndef CEP_KERNELS_XFMR_H
#define CEP_KERNELS_XFMR_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/ops.h"
#include "kernels/registry.h"

/* Their domain; their schemas carry OP_INTERNAL, so the loader refuses a
 * model's own node of them. */
#define XFMR_DOMAIN OP_DOMAIN_CUDAEP

/* ---------------------------------------------------------------- MatMulBias */

enum xfmr_act {
	XFMR_ACT_NONE,
	XFMR_ACT_RELU,
	XFMR_ACT_GELU,      /* 0.5 x (1 + erf(x / sqrt 2)) */
	XFMR_ACT_GELU_TANH, /* Gelu's approximate="tanh" form */
};

/* The attribute value of act ("gelu_tanh"). */
const char *xfmr_act_name(enum xfmr_act act);

/* Reads node's activation attribute into *act. Returns 0, or CEP_EMODEL
 * naming the value when it is none of the four. */
int xfmr_act_parse(const struct op_node *node, enum xfmr_act *act);

/* act applied to v, in float32 (the function every kernel reproduces). */
float xfmr_act_apply(enum xfmr_act act, float v);

/* ----------------------------------------------------------------- Attention */

/* The largest depth (Dk or Dv) the kernels take: the CUDA kernel keeps a
 * query row and a row of sums of that many floats in shared memory. */
#define XFMR_ATTN_MAX_DEPTH 1024

/* Logical axes of Attention's tensors. */
enum { XFMR_B, XFMR_H, XFMR_S, XFMR_D };

/* Everything a kernel needs to address Attention's operands, fixed dims. */
struct xfmr_attn {
	int64_t B, H, Sq, Sk, Dk, Dv;  /* logical sizes */
	int64_t q[4], k[4], v[4];      /* element strides of (b, h, s, d); 0
	                                * along a broadcast dim */
	int64_t m[4];                  /* the mask's strides of (b, h, i, j) */
	int64_t o[4];                  /* the output's strides of (b, h, i, d) */
	float scale;
	bool has_mask;
};

/* The inference of Attention (also run at plan time with fixed dims):
 * checks the ranks, axes, dtypes and sizes and fills x->out[0]. */
int xfmr_attn_infer(struct op_infer *x);

/*
 * Fills *a from a node whose inputs in (n_in of them) and output out have
 * fixed dims that xfmr_attn_infer() accepted. Returns 0, or CEP_EMODEL
 * for attributes that inference should have refused.
 */
int xfmr_attn_init(struct xfmr_attn *a, const struct op_node *node,
		   const struct op_tensor *in, int n_in, const struct op_tensor *out);

/* Reads an axes attribute (default 0,1,2,3) into axes. Returns 0, or
 * CEP_EMODEL when it is not a permutation of 0..3. */
int xfmr_attn_axes(const struct op_node *node, const char *name, int axes[4]);

#endif
