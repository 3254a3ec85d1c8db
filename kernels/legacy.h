/*
 * legacy.h — the rules of ONNX's first opsets that later ones dropped,
 * read the same way by the reference kernels (kernels/cpu) and the
 * device ones (kernels/cuda): the limited broadcasting of the binary
 * elementwise operators before opset 7, PRelu's slope per channel before
 * 7, the type names of Cast's `to` before 6 and Concat's default axis
 * before 4.
 *
 * Each rule is turned into what the later opsets mean, so that a kernel
 * written for them runs the old node unchanged: a broadcast becomes a
 * view of B that numpy broadcasting reads as the old rule did (the same
 * data under other dims), a type name becomes the dtype.
 */
#ifndef CEP_KERNELS_LEGACY_H
#define CEP_KERNELS_LEGACY_H

#include <stdbool.h>

#include "kernels/ops.h"

/*
 * The broadcasting of Add, Sub, Mul, Div, Pow, Equal, Less, Greater, And,
 * Or and Xor before opset 7. Without broadcast=1 both operands have one
 * shape. With it only B broadcasts, to A's shape: B has one element, or
 * its shape is a contiguous run of A's dims that starts at `axis` (when
 * given) or ends with A's last dim; no dim of B of size 1 stretches.
 *
 * Stores in *bv b under dims that numpy broadcasting against a reads as
 * the old rule does (b's dims followed by ones up to a's rank; a scalar
 * for one element); from opset 7 on, and while a rank is unknown, *bv is
 * b. Returns 0, or CEP_ESHAPE (CEP_EMODEL for a bad axis) with a message
 * naming the operator, its opset and both shapes. Symbolic dims are
 * taken to fit; at plan time every dim is fixed and checked.
 */
int op_legacy_bcast(const struct op_node *n, const struct op_tensor *a,
		    const struct op_tensor *b, struct op_tensor *bv);

/*
 * Whether node n is one of those operators before opset 7 broadcasting B
 * from an explicit axis, where a view of B with other dims, not numpy's
 * rule, gives the result: the graph's fusions, which match by numpy
 * broadcasting, leave such a node alone.
 */
bool op_legacy_bcast_axis(const struct op_node *n);

/*
 * PRelu's slope before opset 7: one element shared by every channel, or
 * one value per channel (dimension 1 of X), as a vector or under unit
 * dims (it is read flat). Stores in *view the slope under dims that
 * broadcast numpy's way to X as that rule says ((C, 1, ...) for a slope
 * per channel, a scalar for one element). For a slope of neither kind,
 * from opset 7 on, and while a rank is unknown, *view is slope: numpy's
 * rule applies (ONNX's version converter takes PRelu-6 and -7 to be one),
 * and the caller refuses what does not broadcast. Returns 0 (an int, so
 * that the kernels keep one error path should the rule grow a check).
 */
int op_legacy_prelu_slope(const struct op_node *n, const struct op_tensor *x,
			  const struct op_tensor *slope, struct op_tensor *view);

/*
 * The dtype that Cast's `to` names at opsets 1 to 5, where it is the name
 * of a TensorProto.DataType ("FLOAT", "INT64", ...; any case) rather than
 * its number. Stores it in *dtype (a type cudaep may not store: the
 * caller checks). Returns 0, or CEP_EMODEL with a message when `to` is
 * missing, not a string or names no type.
 */
int op_legacy_cast_to(const struct op_node *n, cep_dtype *dtype);

/* Concat's axis: optional before opset 4, where it defaults to 1; from
 * 4 required (read as 0 when absent, which inference takes as given). */
int64_t op_legacy_concat_axis(const struct op_node *n);

#endif
