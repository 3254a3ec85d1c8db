/*
 * ops.h — what an operator sees: tensors, attributes, the inference of its
 * output types and shapes, and the call of one of its kernels.
 *
 * Shared by the operator registry (kernels/registry.c), the reference
 * kernels (kernels/cpu/) and the device kernels (kernels/cuda/). It knows
 * nothing of ONNX files, graphs, plans or backends: the engine (engine/)
 * fills these structs and a backend (gpu/) launches the kernels.
 *
 * Errors follow the one error space of client/cudaep.h: 0 or a negative
 * CEP_E* code, with the sentence recorded through cep__set_error()
 * (common/error.h). Messages name the operator and what was wrong ("Gather:
 * index 7 is out of range for dimension 0 of size 5"); the engine adds the
 * node in front.
 */
#ifndef CEP_KERNELS_OPS_H
#define CEP_KERNELS_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/cudaep.h"
#include "common/error.h"

struct backend;

/* ------------------------------------------------------------ dimensions */

/*
 * A dimension is an int64_t: >= 0 is a fixed size. During load-time
 * inference a dimension may also be symbolic: OP_DIM_SYM(k) names the k-th
 * symbol of the model (a dim_param such as "batch"), and OP_DIM_UNKNOWN is a
 * size nobody knows yet. At plan and run time every dimension is fixed.
 */
#define OP_DIM_UNKNOWN INT64_MIN
#define OP_DIM_SYM(k) (-1 - (int64_t)(k))

static inline bool op_dim_fixed(int64_t d)
{
	return d >= 0;
}

static inline bool op_dim_symbolic(int64_t d)
{
	return d < 0 && d != OP_DIM_UNKNOWN;
}

/* The symbol index of a symbolic dimension. */
static inline int op_dim_symbol(int64_t d)
{
	return (int)(-1 - d);
}

/* The largest element count a tensor may have (2^40): far beyond any
 * device, and small enough that bytes never overflow a size_t. */
#define OP_MAX_NUMEL (INT64_C(1) << 40)

/* ---------------------------------------------------------------- tensors */

/* A tensor as an operator sees it: dense, row-major, no strides. */
struct op_tensor {
	void *data;                 /* elements; NULL: absent optional input,
	                             * or a value unknown during inference */
	cep_dtype dtype;            /* CEP_DTYPE_UNDEFINED: absent input */
	int rank;                   /* -1: unknown (inference only) */
	int64_t dims[CEP_MAX_RANK]; /* (rank), see "dimensions" above */
};

/* Whether t is present (an omitted optional input is not). */
static inline bool op_tensor_present(const struct op_tensor *t)
{
	return t->dtype != CEP_DTYPE_UNDEFINED;
}

/*
 * Sets *numel to the element count of t. Returns 0, CEP_ESHAPE when the
 * rank or a dimension is not fixed, or CEP_ELIMIT (with a message) when the
 * count exceeds OP_MAX_NUMEL. Never overflows.
 */
int op_tensor_numel(const struct op_tensor *t, int64_t *numel);

/* The byte size of t (numel times the element size), 0 when the count is
 * not fixed or too large: call op_tensor_numel() first to tell them apart. */
size_t op_tensor_bytes(const struct op_tensor *t);

/* The element count of dims[from..to) of t; the dims must be fixed and
 * already checked by op_tensor_numel(). */
int64_t op_dims_product(const struct op_tensor *t, int from, int to);

/* Writes "[batch,4]" style text for t into buf (len bytes); symbols are
 * shown as "?" plus their index unless syms (n_syms names) is given. */
void op_dims_format(const struct op_tensor *t, const char *const *syms,
		    int n_syms, char *buf, size_t len);

/* A bit per element type, for type sets: ONNX's families of them among
 * the types the engine stores. */
#define OP_DT(t) (UINT32_C(1) << (t))
#define OP_DTS_FLOAT (OP_DT(CEP_DTYPE_FLOAT32) | OP_DT(CEP_DTYPE_FLOAT16) | \
		      OP_DT(CEP_DTYPE_BFLOAT16) | OP_DT(CEP_DTYPE_FLOAT64))
#define OP_DTS_SIGNED (OP_DT(CEP_DTYPE_INT64) | OP_DT(CEP_DTYPE_INT32) | \
		       OP_DT(CEP_DTYPE_INT16) | OP_DT(CEP_DTYPE_INT8))
#define OP_DTS_UNSIGNED (OP_DT(CEP_DTYPE_UINT64) | OP_DT(CEP_DTYPE_UINT32) | \
			 OP_DT(CEP_DTYPE_UINT16) | OP_DT(CEP_DTYPE_UINT8))
#define OP_DTS_INT (OP_DTS_SIGNED | OP_DTS_UNSIGNED)
#define OP_DTS_NUMERIC (OP_DTS_FLOAT | OP_DTS_INT)
/* The numeric types and bool: what an operator that takes any type takes. */
#define OP_DTS_ALL (OP_DTS_NUMERIC | OP_DT(CEP_DTYPE_BOOL))
/* The float8 types, which only the operators that list them and have a
 * kernel of them take (Cast, CastLike). */
#define OP_DTS_FLOAT8 (OP_DT(CEP_DTYPE_FLOAT8E4M3FN) | OP_DT(CEP_DTYPE_FLOAT8E4M3FNUZ) | \
		       OP_DT(CEP_DTYPE_FLOAT8E5M2) | OP_DT(CEP_DTYPE_FLOAT8E5M2FNUZ))
/* The 4-bit types (a byte each, client/cudaep.h), which only Cast,
 * CastLike, QuantizeLinear and DequantizeLinear take. */
#define OP_DTS_INT4 (OP_DT(CEP_DTYPE_INT4) | OP_DT(CEP_DTYPE_UINT4))
#define OP_DTS_4BIT (OP_DTS_INT4 | OP_DT(CEP_DTYPE_FLOAT4E2M1))
/* Every element type the engine stores. */
#define OP_DTS_STORED (OP_DTS_ALL | OP_DTS_FLOAT8 | OP_DTS_4BIT)

/* Whether dtype is in the set. */
static inline bool op_dtype_in(cep_dtype dtype, uint32_t set)
{
	return (unsigned)dtype < 32 && (set & OP_DT(dtype)) != 0;
}

/* Writes "float32, float16, ..." for the set into buf (len bytes). */
void op_dtypes_format(uint32_t set, char *buf, size_t len);

/* ------------------------------------------------------------ attributes */

/* Attribute kinds; the values are ONNX's AttributeProto.AttributeType.
 * OP_ATTR_OTHER is one the engine keeps the name of but does not load
 * (lists of tensors or graphs, sparse tensors, type protos). */
enum op_attr_type {
	OP_ATTR_OTHER = 0,
	OP_ATTR_FLOAT = 1,
	OP_ATTR_INT = 2,
	OP_ATTR_STRING = 3,
	OP_ATTR_TENSOR = 4,
	OP_ATTR_GRAPH = 5,           /* the engine keeps the subgraph with the
	                              * node (engine/graph.h), not here */
	OP_ATTR_FLOATS = 6,
	OP_ATTR_INTS = 7,
	OP_ATTR_STRINGS = 8,
};

/* One attribute of a node; which fields mean something depends on type.
 * Everything it points to belongs to the graph and outlives every call. */
struct op_attr {
	const char *name;
	enum op_attr_type type;
	float f;                     /* OP_ATTR_FLOAT */
	int64_t i;                   /* OP_ATTR_INT */
	const char *s;               /* OP_ATTR_STRING, NUL-terminated */
	int n;                       /* elements of floats, ints or strings */
	const float *floats;         /* (n) */
	const int64_t *ints;         /* (n) */
	const char *const *strings;  /* (n) */
	const struct op_tensor *t;   /* OP_ATTR_TENSOR; data on the host */
};

/* A node as its operator sees it: names for messages, the opset in force
 * for its domain, and its attributes. */
struct op_node {
	const char *name;            /* may be "" */
	const char *op_type;
	const char *domain;          /* "" for ai.onnx */
	int opset;
	int n_attrs;
	const struct op_attr *attrs; /* (n_attrs) */
};

/* The attribute called name, or NULL when the node has none. */
const struct op_attr *op_attr_find(const struct op_node *n, const char *name);

/*
 * Typed getters: the attribute's value, or dflt when it is absent. An
 * attribute present with another type counts as absent for the getters;
 * op_attr_check() is how an inference function refuses it.
 */
int64_t op_attr_int(const struct op_node *n, const char *name, int64_t dflt);
float op_attr_float(const struct op_node *n, const char *name, float dflt);
const char *op_attr_string(const struct op_node *n, const char *name,
			   const char *dflt);

/* The ints of an INTS attribute and their count in *count; NULL (and
 * *count 0) when absent. */
const int64_t *op_attr_ints(const struct op_node *n, const char *name,
			    int *count);

/* Returns 0 when the attribute is absent or of type, else CEP_EMODEL with
 * a message naming the attribute and both types. */
int op_attr_check(const struct op_node *n, const char *name,
		  enum op_attr_type type);

/* ------------------------------------------------------------- inference */

/*
 * The context of an inference function: the node, its inputs (dtype, rank
 * and dims, symbolic ones included at load time; data points to the value
 * on the host when it is known, a constant or a result computed at plan
 * time) and its outputs to fill in (dtype, rank, dims; data is left alone).
 * Absent optional inputs have dtype CEP_DTYPE_UNDEFINED.
 */
struct op_infer {
	const struct op_node *node;
	int n_in, n_out;
	const struct op_tensor *in;  /* (n_in) */
	struct op_tensor *out;       /* (n_out) */
};

/*
 * Fills x->out from x->in and the attributes. Returns 0 or an error with a
 * message: CEP_EDTYPE for a type mismatch, CEP_ESHAPE for shapes that do not
 * fit, CEP_EMODEL for a bad attribute, CEP_EUNSUPPORTED for something valid
 * that the engine does not do. An output whose shape cannot be known yet
 * (it depends on data not known) gets rank -1 or OP_DIM_UNKNOWN dims; the
 * planner refuses that at plan time.
 */
typedef int (*op_infer_fn)(struct op_infer *x);

/* Normalises axis (negative counts from the end) for rank; CEP_EMODEL with
 * a message naming the operator when out of [-rank, rank). */
int op_axis_normalize(const struct op_node *n, int64_t axis, int rank,
		      int *out);

/*
 * The axis rule of Softmax and LogSoftmax: before opset 13 the input is a
 * matrix split at `axis` (default 1) whose rows are normalised; from 13 on
 * only dimension `axis` (default -1) is. op_softmax_axis() normalises the
 * axis for rank (a scalar's is 0) and fails with CEP_EMODEL when it is out
 * of range; op_softmax_blocks() then sees t (dims fixed) as (outer, n,
 * inner) blocks normalised along n.
 */
int op_softmax_axis(const struct op_node *node, int rank, int *axis);
int op_softmax_blocks(const struct op_node *node, const struct op_tensor *t,
		      int64_t *outer, int64_t *n, int64_t *inner);

/*
 * Numpy broadcasting of a and b into out's rank and dims (dtype untouched).
 * Symbolic dims broadcast against 1 and equal dims; a fixed size other than
 * 1 wins over a symbol. Returns CEP_ESHAPE with a message when fixed sizes
 * differ and neither is 1.
 */
int op_broadcast(const struct op_node *n, const struct op_tensor *a,
		 const struct op_tensor *b, struct op_tensor *out);

/* Returns CEP_EDTYPE unless the present inputs first..last (inclusive) of x
 * share one dtype; the message names the inputs and their types. */
int op_infer_same_dtype(const struct op_infer *x, int first, int last);

/* Shape helpers for inference functions: out[0] copies in[0]. */
int op_infer_like_input(struct op_infer *x);

/* Reads element i of an integer tensor known on the host (int32 or int64)
 * into *v. Returns CEP_EDTYPE for other types. */
int op_tensor_get_int(const struct op_tensor *t, int64_t i, int64_t *v);

/* ------------------------------------------------------------------ calls */

#define OP_PARAMS_BYTES 256 /* per-node state a prepare function keeps */

/*
 * One call of a kernel. The planner fills it once per node and plan: every
 * shape is fixed, data points into the backend's memory (device memory for
 * a device backend, host memory for the host one), and the call is reused
 * unchanged on every run, so a kernel must not keep pointers into it.
 */
/* How a session asks its kernels to compute (struct op_call's flags). */
enum op_call_flags {
	/* float32 products may use TF32 tensor cores (a session of precision
	 * tf32); without it they are exact float32 FMAs. */
	OP_CALL_TF32 = 1u << 0,
};

struct op_call {
	const struct op_node *node;
	int n_in, n_out;
	const struct op_tensor *in;  /* (n_in); absent inputs: dtype undefined */
	struct op_tensor *out;       /* (n_out) */
	void *workspace;             /* workspace_bytes of scratch, or NULL */
	size_t workspace_bytes;
	struct backend *be;          /* the backend the plan is for (set before
	                              * prepare): device kernels get their
	                              * compiled functions and launch through it;
	                              * NULL when evaluated on the host alone */
	void *stream;                /* the backend's stream (a struct
	                              * backend_stream *); NULL on the host */
	unsigned flags;              /* enum op_call_flags, set by the planner
	                              * from the session's options before
	                              * prepare */
	_Alignas(16) unsigned char params[OP_PARAMS_BYTES]; /* prepare's state */
};

/*
 * Called once when a plan is built, with every shape fixed but before
 * memory is placed (data pointers are not set yet: the workspace sizes
 * decide the layout): stores what the kernel will need in call->params and
 * the scratch it needs in *workspace_bytes. Returns 0 or an error with a
 * message.
 */
typedef int (*op_prepare_fn)(struct op_call *call, size_t *workspace_bytes);

/*
 * Runs the operator. Must not allocate, block on anything but its own
 * work, or keep state between calls. Returns 0 or an error with a message
 * (an index out of range, ...).
 */
typedef int (*op_run_fn)(struct op_call *call);

#endif
