/*
 * model.h — loading an ONNX model: bytes in, a checked graph IR out.
 *
 * The daemon reads the model from the fd its client passed and hands the
 * bytes here, with the directory fd (also the client's) that external data
 * paths are relative to. model_load() scans the protobuf wire format first
 * (bounded nesting and node count, truncation found before any allocation
 * proportional to claims in the file), decodes it with protobuf-c
 * (proto/onnx.proto), builds the graph IR (engine/graph.h), subgraphs of
 * control flow included, with every initializer's data checked against
 * its shape, validates it, sorts it,
 * infers types and shapes (engine/shape.h) and optimizes it
 * (engine/optimize.h).
 *
 * Errors are CEP_EMODEL (malformed or invalid), CEP_EUNSUPPORTED (valid but
 * beyond cudaep: an operator, a type, an opset), CEP_EDTYPE / CEP_ESHAPE
 * (types or shapes that do not fit), CEP_EACCES (external data outside the
 * model's directory), CEP_ELIMIT or CEP_ENOMEM; the message of
 * cep_last_error() names the node (index, name, op, domain, opset), tensor
 * or dimension at fault.
 */
#ifndef CEP_DAEMON_MODEL_H
#define CEP_DAEMON_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/graph.h"

/* Bounds on what a file may contain; generous for real models (the large
 * exported transformers have tens of thousands of nodes). */
#define MODEL_MAX_NODES (1 << 18) /* NodeProtos in the file, subgraphs included */
#define MODEL_MAX_DEPTH 64        /* nesting of protobuf messages */
#define MODEL_MAX_BYTES (UINT64_C(2) << 30) /* the protobuf format's limit */
#define MODEL_MAX_GRAPH_DEPTH 16  /* subgraphs in subgraphs (If in a Loop body ...) */

/* An operator set the model imports. */
struct model_opset {
	const char *domain; /* as written ("" and "ai.onnx" both mean ai.onnx) */
	int64_t version;
};

struct model {
	struct graph g;              /* loaded, sorted, inferred, optimized */
	int64_t ir_version;
	struct model_opset *opsets;  /* (n_opsets), in g's arena */
	int n_opsets;
	const char *producer;        /* "pytorch 2.3", or "" */
};

/*
 * Loads the model in bytes (len of them; they stay the caller's and may be
 * released as soon as this returns). External data files are opened below
 * dir_fd (-1: the model may not have external data). On success *out is a
 * new model owned by the caller, released with model_free(). Fails as the
 * file comment says; *out is then NULL.
 */
int model_load(const void *bytes, size_t len, int dir_fd, struct model **out);

/* After model_load() with dir_fd -1 failed on this thread: whether it
 * failed because the model has external data and so needs a directory.
 * (The daemon shares a loaded model between clients only when its bytes
 * alone determine it, which external data rules out.) */
bool model_wanted_dir(void);

/* Releases the model. Accepts NULL. */
void model_free(struct model *m);

/* The version of domain the model imports, -1 when it imports none. */
int64_t model_opset(const struct model *m, const char *domain);

/* ------------------------------------------------- internal to the loader */

struct Onnx__TensorProto;
struct Onnx__GraphProto;
struct Onnx__ModelProto;

/* What loading every graph of one model shares. */
struct model__ctx {
	struct model *m;                    /* its opsets read already */
	const struct Onnx__ModelProto *mp;
	int dir_fd;                         /* for external data; -1: none */
};

/* A model graph output's declared type, checked against inference. */
struct model__declared {
	int elem_type;              /* 0: none declared */
	int rank;                   /* -1: no shape declared */
	int64_t dims[CEP_MAX_RANK]; /* symbols already mapped */
};

/*
 * Loads gp into g (graph_init()ed; for a subgraph, its parent, depth and
 * scope set): initializers, inputs, nodes with their attributes and
 * subgraphs (loaded the same way), outputs, and sorts it. A subgraph's
 * outer-scope references are left as its trailing inputs for the
 * enclosing graph to resolve; the model graph resolves its nodes' and
 * fails on a name nobody defines. For the model graph, on success *decl
 * becomes the outputs' declared types (g->n_outputs of them, malloc, the
 * caller's; decl is NULL for a subgraph). Returns 0, CEP_EMODEL,
 * CEP_EUNSUPPORTED, CEP_ELIMIT, CEP_EACCES, CEP_ENOMEM or an I/O error,
 * the message naming the node, tensor or attribute.
 */
int model__graph_load(const struct model__ctx *c, const struct Onnx__GraphProto *gp,
		      struct graph *g, struct model__declared **decl);

/* Set when a load without a directory meets external data; cleared by
 * model_load(). */
extern _Thread_local bool model__wanted_dir;

/* The name of an ONNX element type, those cudaep does not store included. */
const char *model__type_name(int elem_type);

/* Whether cudaep stores tensors of the ONNX element type. */
bool model__dtype_stored(int elem_type);

/*
 * Loads a TensorProto (an initializer or a tensor attribute, `what` in
 * messages: "initializer 'w'") into t: dtype, rank, dims, and data (malloc,
 * the caller's; at least one byte), with its byte size in *bytes. External
 * data is read below dir_fd. 4-bit tensors are unpacked to a byte each
 * (client/cudaep.h). Returns 0, CEP_EMODEL, CEP_EUNSUPPORTED,
 * CEP_EACCES, CEP_ENOMEM or an I/O error.
 */
int model__tensor_load(const struct Onnx__TensorProto *tp, int dir_fd, const char *what,
		       struct op_tensor *t, size_t *bytes);

/*
 * Opens loc (relative, checked for ".." already) read-only below dir_fd and
 * returns the fd, or -1 with errno (EXDEV or ELOOP when it would leave the
 * directory). Uses openat2(RESOLVE_BENEATH) where the kernel has it, else
 * (or with walk_only, for tests) walks the path one component at a time
 * following no symlink at all.
 */
int model__open_beneath(int dir_fd, const char *loc, bool walk_only);

#endif
