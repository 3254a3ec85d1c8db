/*
 * registry.h — the operator registry: which operators cudaep knows, for
 * which opsets, with which kernels on which backend for which types.
 *
 * An operator is known by its schema (domain, op_type, an opset range, the
 * number of inputs and outputs, its inference function). Its kernels are
 * separate entries keyed by (domain, op_type, opset range, backend, dtypes),
 * so the CUDA kernels of kernels/cuda add to the same operators that the
 * reference kernels of kernels/cpu define. Each kernels/cpu/<family>.c file
 * exports one struct op_family, listed in kernels/families.h.
 *
 * A failed lookup says exactly why, through cep__set_error(): "unknown op Foo
 * in domain com.example", "Conv: opset 30 is not supported (supported
 * 1-28)", "Add: dtype uint16 is not supported on the host backend
 * (supported: float32, float16, ...)". The registry is immutable after its
 * first use and safe to read from any thread.
 */
#ifndef CEP_KERNELS_REGISTRY_H
#define CEP_KERNELS_REGISTRY_H

#include "gpu/backend.h"
#include "kernels/ops.h"

/* The newest ai.onnx opset the operator definitions were checked against
 * (onnx 1.23); no operator of a newer opset changed for the types cudaep
 * stores, but newer opsets are refused until someone checks them. */
#define OP_OPSET_MAX 28

enum op_flags {
	/* The outputs depend only on the input shapes, never on their data
	 * (Shape, Size): foldable whenever the shapes are fixed. */
	OP_SHAPE_ONLY = 1u << 0,
	/* Never fold, even with constant inputs (random generators). */
	OP_NO_FOLD = 1u << 1,
	/* Made only by cudaep's own optimizer (engine/fuse.c) from nodes it
	 * has checked: the loader refuses a model's own node of it, so that a
	 * model cannot hand the kernels inputs the fusion never would. */
	OP_INTERNAL = 1u << 2,
	/* Control flow (If, Loop, Scan): the node runs subgraphs. It has no
	 * kernels and its schema's infer function refuses: the engine infers,
	 * plans and runs it over its subgraphs (engine/ctrl.h). */
	OP_CONTROL = 1u << 3,
};

/* The domain of onnxruntime's contrib operators, the ones its transformer
 * optimizer writes (SkipLayerNormalization, FastGelu, ...), and the newest
 * opset of it whose definitions cudaep's were checked against
 * (onnxruntime 1.32, where every one of them is opset 1). */
#define OP_DOMAIN_MS "com.microsoft"
#define OP_MS_OPSET_MAX 1

/* The domain of cudaep's internal operators (OP_INTERNAL). */
#define OP_DOMAIN_CUDAEP "com.cudaep"

/* An operator. */
struct op_schema {
	const char *domain;   /* "" for ai.onnx */
	const char *op_type;
	int since, until;     /* opsets of domain these semantics cover, inclusive */
	int min_in, max_in;   /* inputs, omitted optional ones counted; max -1: any */
	int min_out, max_out; /* outputs */
	int type_input;       /* the input whose dtype picks a kernel; -1: output 0's */
	unsigned flags;       /* enum op_flags */
	op_infer_fn infer;
};

/* A kernel of an operator on one backend for a set of element types. */
struct op_kernel {
	const char *domain;
	const char *op_type;
	int since, until;     /* opsets it covers, inclusive */
	enum backend_kind backend;
	uint32_t dtypes;      /* OP_DT() bits of the type_input dtypes it takes */
	op_prepare_fn prepare; /* NULL: no params, no workspace */
	op_run_fn run;
};

/* What one kernels/<backend>/<family>.c file contributes. */
struct op_family {
	const char *name;
	const struct op_schema *schemas;  /* (n_schemas) */
	int n_schemas;
	const struct op_kernel *kernels;  /* (n_kernels) */
	int n_kernels;
};

/* Whether two domain names mean the same domain ("" and "ai.onnx" do). */
bool op_domain_equal(const char *a, const char *b);

/* The domain as shown in messages ("ai.onnx" for ""). */
const char *op_domain_name(const char *domain);

/*
 * Finds the schema of op_type in domain for the model's opset of that
 * domain and stores it in *out. Returns 0, or CEP_EUNSUPPORTED with a
 * message: "unknown op Foo in domain com.example", or "Conv: opset 30 is
 * not supported (supported 1-28)".
 */
int op_schema_find(const char *domain, const char *op_type, int opset,
		   const struct op_schema **out);

/*
 * Finds the kernel of schema s for opset on backend for dtype (the dtype of
 * input s->type_input, or of output 0) and stores it in *out. Returns 0, or
 * CEP_EUNSUPPORTED with a message: "Add: dtype uint16 is not supported on
 * the host backend (supported: float32, float16, ...)", or "Foo has no
 * kernel on the cuda backend".
 */
int op_kernel_find(const struct op_schema *s, int opset,
		   enum backend_kind backend, cep_dtype dtype,
		   const struct op_kernel **out);

/* The dtype that picks node's kernel among its inputs and outputs, as
 * op_kernel_find() expects it. */
cep_dtype op_kernel_dtype(const struct op_schema *s, const struct op_tensor *in,
			  int n_in, const struct op_tensor *out, int n_out);

/* The number of schemas and the i-th of them, sorted by domain and op_type
 * (for listings such as `cudaepctl kernels`). */
int op_schema_count(void);
const struct op_schema *op_schema_at(int i);

#endif
